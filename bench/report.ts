/**
 * What the benchmark leaves behind: bench/results/<workload>.json (not committed), the files a workload
 * writes next to this report (bench/explain-*.txt), and the table on stdout that bench/REPORT.md's
 * tables are made from.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkloadResult } from './workload';

const BENCH_DIR = __dirname;

/** Writes `name` (relative to bench/), creating its folder. */
export function writeBenchFile(name: string, text: string): void {
  const file = path.join(BENCH_DIR, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** What a run was measured on: the stack's profile, the commit, and when (figures are quoted with these). */
export interface RunContext {
  profile: string;
  commit: string;
}

/**
 * Writes bench/results/<workload>.json and prints the table, then the workload's headline with the
 * total time since `wallStart` (performance.now() when the benchmark started, the build included).
 */
export function report(
  workload: string,
  r: WorkloadResult,
  wallStart: number,
  say: (line: string) => void,
  context?: RunContext,
): void {
  const measuredAt = new Date().toISOString();
  const summary = {
    workload,
    ...context,
    measuredAt,
    data: r.data,
    settings: r.settings,
    machine: {
      nproc: os.cpus().length,
      memoryGb: Math.round(os.totalmem() / 2 ** 30),
      cpu: os.cpus()[0]?.model,
      node: process.version,
    },
    results: r.results,
    ...r.comparisons,
    totalSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
  };
  writeBenchFile(path.join('results', `${workload}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  say('');
  if (context) say(`${context.profile} profile, ${context.commit}, ${measuredAt}`);
  if (r.table) {
    say(`| ${r.table.header.join(' | ')} |`);
    say(`|${r.table.header.map(() => '---').join('|')}|`);
    for (const row of r.table.rows) say(`| ${row.join(' | ')} |`);
    say(`${r.headline}; total ${summary.totalSeconds} s`);
    return;
  }
  say(
    '| path | wall s | owners | owners/s | documents (reminders) | documents/s | pages | runs | history events/run | worker peak RSS MB |',
  );
  say('|---|---|---|---|---|---|---|---|---|---|');
  for (const m of r.results) {
    const x = m.extra ?? {};
    say(
      `| ${m.path} | ${m.seconds} | ${m.owners} | ${m.ownersPerSecond} | ${m.reminders} | ${m.documentsPerSecond} | ${m.pages} | ${x.runs ?? ''} | ${
        (x.historyEventsPerRun as number[] | undefined)?.join(', ') ?? ''
      } | ${x.workerPeakRssMb ?? ''}${x.workerVmHwmMb ? ` (HWM ${x.workerVmHwmMb})` : ''} |`,
    );
  }
  say(`${r.headline}; total ${summary.totalSeconds} s`);
}
