/**
 * `npm run bench -- --compare <rev>[,<rev>…] [--rounds N]` (issue 22): the same workload, with the same
 * flags, on one stack, for each named revision and the working tree (`this`), interleaved: round r runs
 * them in an order rotated by r, so drift on the machine falls on all of them alike. Each run is the
 * revision's own benchmark in a process of its own (bench/compare/revisions.ts); its
 * bench/results/<workload>.json is read back, and the table of medians, ranges and ratios is printed
 * and written to bench/results/compare-<workload>.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startOrAdoptStack, type Cleanup } from '../harness';
import type { BenchOptions } from '../options';
import { writeBenchFile } from '../report';
import { chosenPaths, findWorkload } from '../workloads';
import { benchCommand, headSha, prepareRevision, resolveRevisions, type Revision } from './revisions';
import {
  formatSeconds,
  formatTable,
  parseRevisionList,
  passThroughArgs,
  pathKey,
  roundOrder,
  summarise,
  type RunRecord,
} from './summary';

/** Runs the comparison `options.compare` names; `args` is the command line, passed on without the comparison's flags. */
export async function runComparison(
  options: BenchOptions,
  args: readonly string[],
  say: (line: string) => void,
): Promise<void> {
  if (!Number.isInteger(options.rounds) || options.rounds < 1)
    throw new Error(`--rounds must be a whole number of at least 1`);
  const revisions = resolveRevisions(parseRevisionList(options.compare ?? ''));
  const workload = findWorkload(options.workload);
  const needs = workload.needs(chosenPaths(workload, options.only));
  const flags = passThroughArgs(args);
  for (const r of revisions) prepareRevision(r, say);

  const cleanups: Cleanup[] = [];
  const runs: RunRecord[] = [];
  try {
    const env = await startOrAdoptStack(needs.kafka, cleanups, say, options.profile);
    for (let round = 0; round < options.rounds; round++) {
      for (const r of roundOrder(revisions, round)) {
        const run = await runOnce(r, options.workload, flags, env, round);
        runs.push(run.record);
        const paths = Object.entries(run.record.seconds).map(([p, s]) => `${p} ${formatSeconds(s)} s`);
        say(
          `round ${round + 1}/${options.rounds}: ${r.label} ${options.workload}: ${paths.join(', ')} (run ${run.wallSeconds.toFixed(1)} s)`,
        );
      }
    }
  } finally {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  }

  const labels = revisions.map((r) => r.label);
  const summary = summarise(runs, labels, labels[0]);
  const table = formatTable(summary, options.rounds);
  writeBenchFile(
    path.join('results', `compare-${options.workload}.json`),
    `${JSON.stringify(
      {
        workload: options.workload,
        flags,
        rounds: options.rounds,
        head: headSha(),
        ...summary,
        revisions: revisions.map(({ label, name, sha }) => ({ label, name, sha })),
        runs,
        table,
      },
      null,
      2,
    )}\n`,
  );
  say('');
  for (const line of table) say(line);
}

/**
 * One run of the revision's benchmark against the stack of `env`. Its output goes to
 * bench/results/compare-<workload>/<label>-<round>.log here; its result is read from its own folder.
 */
async function runOnce(
  r: Revision,
  workload: string,
  flags: readonly string[],
  env: Record<string, string>,
  round: number,
): Promise<{ record: RunRecord; wallSeconds: number }> {
  const resultFile = path.join(r.dir, 'bench', 'results', `${workload}.json`);
  fs.rmSync(resultFile, { force: true });
  const logFile = path.resolve(__dirname, '..', 'results', `compare-${workload}`, `${r.label}-${round + 1}.log`);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = fs.openSync(logFile, 'w');
  const { file, args } = benchCommand(r);
  const started = performance.now();
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(file, [...args, ...flags], {
      cwd: r.dir,
      // An exported revision has no git checkout to take its worker's build id from: its sha is the build.
      env: { ...process.env, ...env, ...(r.sha ? { TEMPORAL_WORKER_BUILD_ID: r.sha.slice(0, 12) } : {}) },
      stdio: ['ignore', log, log],
    });
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  }).finally(() => fs.closeSync(log));
  const wallSeconds = (performance.now() - started) / 1000;
  if (code !== 0 || !fs.existsSync(resultFile)) {
    const tail = fs.readFileSync(logFile, 'utf8').slice(-3000);
    throw new Error(`${r.label}'s benchmark failed (exit ${code}); its log, ${logFile}, ends:\n${tail}`);
  }
  return { record: { round: round + 1, revision: r.label, seconds: readSeconds(resultFile) }, wallSeconds };
}

/** Each path's seconds from a results file; entries without a path or seconds (an older shape) are passed over. */
function readSeconds(file: string): Record<string, number> {
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { results?: { path?: unknown; seconds?: unknown }[] };
  const seconds: Record<string, number> = {};
  for (const m of parsed.results ?? []) {
    if (typeof m.path === 'string' && typeof m.seconds === 'number') seconds[pathKey(m.path)] = m.seconds;
  }
  return seconds;
}
