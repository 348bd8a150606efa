/**
 * The comparison's arithmetic, free of processes and files: which revisions run in which order, which
 * flags go through to each revision's benchmark, and the table made of what the runs measured.
 */

/** The working tree as it is, committed or not. */
export const THIS = 'this';

/** One benchmark run of one revision: each path's seconds, by short path name. */
export interface RunRecord {
  round: number;
  revision: string;
  seconds: Record<string, number>;
}

/** Median and range of a path's seconds over the rounds. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

interface PathRow {
  path: string;
  /** By revision label; a revision that did not measure the path has none. */
  cells: Record<string, Spread & { ratioToBase?: number }>;
}

export interface Summary {
  base: string;
  revisions: string[];
  paths: PathRow[];
  /** Per revision: the median over rounds of A's seconds ÷ the cycle's, i.e. the cycle's throughput ÷ A's. */
  cycleVsA: Record<string, number | undefined>;
  /** The same against B, the database alone. */
  cycleVsB: Record<string, number | undefined>;
  /** The same against B∥, the database alone with a session per partition. */
  cycleVsBParallel: Record<string, number | undefined>;
}

/**
 * The revisions `--compare` names (comma-separated, in order, each once), refusing an empty name.
 * The working tree (`this`) joins at the end unless named.
 */
export function parseRevisionList(text: string): string[] {
  const names = text.split(',').map((s) => s.trim());
  if (names.some((n) => n === '')) throw new Error(`--compare: an empty revision in "${text}"`);
  const unique = [...new Set(names)];
  return unique.includes(THIS) ? unique : [...unique, THIS];
}

/** The order of round `round` (0-based): the list rotated by the round, so no revision always runs first. */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** The command line without `--compare` and `--rounds`: what every revision's benchmark is given. */
export function passThroughArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === '--compare' || flag === '--rounds') i++;
    else if (!flag.startsWith('--compare=') && !flag.startsWith('--rounds=')) out.push(flag);
  }
  return out;
}

/** Median (the mean of the middle two for an even count), min and max. */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new Error('spread of no values');
  const v = [...values].sort((x, y) => x - y);
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { median, min: v[0], max: v[v.length - 1], n: v.length };
}

/**
 * A short name for a measurement's label: the cycle workload's paths by their `--only` names; any
 * other label (another workload's, or one an old revision printed) as it is.
 */
export function pathKey(label: string): string {
  if (label === 'Temporal: full cycle') return 'temporal';
  if (label === 'Temporal: first cycle of a just-started worker') return 'temporal first';
  if (label.startsWith('Temporal: repeat cycle after vacuum')) return 'repeat after vacuum';
  if (label.startsWith('Temporal: repeat cycle')) return 'repeat';
  if (/^A\b/.test(label)) return 'a';
  if (label.startsWith('B∥')) return 'bpar';
  if (/^B\b/.test(label)) return 'b';
  if (label.startsWith('End to end')) return 'e2e';
  if (label.startsWith('Parts:')) return 'parts';
  return label;
}

/** Each path's spread per revision with its ratio to `base`, and the cycle against A and B per revision. */
export function summarise(runs: readonly RunRecord[], revisions: readonly string[], base: string): Summary {
  const pathNames = [...new Set(runs.flatMap((r) => Object.keys(r.seconds)))];
  const of = (revision: string) => runs.filter((r) => r.revision === revision);
  const paths = pathNames.map((path) => {
    const cells: PathRow['cells'] = {};
    for (const revision of revisions) {
      const values = of(revision).flatMap((r) => (path in r.seconds ? [r.seconds[path]] : []));
      if (values.length) cells[revision] = spread(values);
    }
    const baseMedian = cells[base]?.median;
    for (const revision of revisions) {
      const cell = cells[revision];
      if (cell && baseMedian) cell.ratioToBase = cell.median / baseMedian;
    }
    return { path, cells };
  });
  const cycleVs = (other: string) => {
    const byRevision: Record<string, number | undefined> = {};
    for (const revision of revisions) {
      const ratios = of(revision).flatMap((r) => {
        const t = r.seconds.temporal;
        const x = r.seconds[other];
        return t > 0 && x > 0 ? [x / t] : [];
      });
      byRevision[revision] = ratios.length ? spread(ratios).median : undefined;
    }
    return byRevision;
  };
  return {
    base,
    revisions: [...revisions],
    paths,
    cycleVsA: cycleVs('a'),
    cycleVsB: cycleVs('b'),
    cycleVsBParallel: cycleVs('bpar'),
  };
}

/** Seconds with about three significant figures. */
export function formatSeconds(s: number): string {
  return s >= 100 ? s.toFixed(0) : s >= 10 ? s.toFixed(1) : s.toFixed(2);
}

/**
 * The printed table: a row per path, a column per revision, each cell "median (min–max) ×ratio to the
 * base"; then the cycle's throughput against A and against B, when both were measured.
 */
export function formatTable(s: Summary, rounds: number): string[] {
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const lines = [row(['path', ...s.revisions]), `|---|${s.revisions.map(() => '---').join('|')}|`];
  for (const p of s.paths) {
    const cells = s.revisions.map((revision) => {
      const c = p.cells[revision];
      if (!c) return '-';
      const range = c.n > 1 ? ` (${formatSeconds(c.min)}–${formatSeconds(c.max)})` : '';
      const ratio = revision !== s.base && c.ratioToBase !== undefined ? ` ×${c.ratioToBase.toFixed(2)}` : '';
      return `${formatSeconds(c.median)} s${range}${ratio}`;
    });
    lines.push(row([p.path, ...cells]));
  }
  const ratioRow = (name: string, by: Record<string, number | undefined>) => {
    if (s.revisions.some((r) => by[r] !== undefined))
      lines.push(row([name, ...s.revisions.map((r) => by[r]?.toFixed(2) ?? '-')]));
  };
  ratioRow('cycle ÷ A (throughput)', s.cycleVsA);
  ratioRow('cycle ÷ B (throughput)', s.cycleVsB);
  ratioRow('cycle ÷ B∥ (throughput)', s.cycleVsBParallel);
  lines.push(
    `median (min–max) of ${rounds} interleaved round${rounds === 1 ? '' : 's'}; ×: median time ÷ ${s.base}'s (above 1 is slower)`,
  );
  return lines;
}
