/**
 * `npm run bench -- [flags]`: the flags are `BENCH_USAGE` in bench/options.ts, which `--help` prints.
 *
 * The benchmark of issue 7. Starts the local stack (PostgreSQL + Temporal dev server, no UI, no Kafka;
 * `--profile production`: the production profile's TLS, SASL and Temporal server on PostgreSQL, issue 20)
 * or uses STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS when set, creates a fresh migrated database, and
 * runs the workload (bench/workloads) in it: the cycle through Temporal on a worker process as deployed
 * (`npm run build`, then `node dist/worker.js` with the Dockerfile's heap flags; `--worker src` runs it
 * under tsx) against a plain per-owner loop (A) and one SQL statement per page (B), and the idle cycle
 * (repeat). Prints a table and writes bench/results/<workload>.json (bench/report.ts). What the numbers
 * mean, and the numbers so far: bench/REPORT.md. With `--compare`, runs all that for each named git
 * revision and the working tree, interleaved, and prints them side by side (bench/compare).
 */
import { execFileSync } from 'node:child_process';
import { runComparison } from './compare';
import { startHarness } from './harness';
import { BENCH_USAGE, parseBenchOptions } from './options';
import { report } from './report';
import { chosenPaths, findWorkload } from './workloads';

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * The commit the figures belong to, `+dirty` when the tree has changes; a revision that `--compare`
 * exported is no git checkout, and says so.
 */
function measuredCommit(): string {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: __dirname, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return `${git('rev-parse', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : ''}`;
  } catch {
    return 'not a git checkout';
  }
}

async function main(): Promise<void> {
  const wallStart = performance.now();
  // Read before the run, which rewrites the tracked bench/explain-*.txt.
  const commit = measuredCommit();
  const options = parseBenchOptions();
  if (options.help) {
    say(BENCH_USAGE);
    return;
  }
  if (options.compare !== undefined) return runComparison(options, process.argv.slice(2), say);
  const workload = findWorkload(options.workload);
  const paths = chosenPaths(workload, options.only);
  const harness = await startHarness(options, workload, paths, say);
  try {
    const result = await workload.run(harness.bench);
    report(workload.name, result, wallStart, say, { profile: harness.bench.profile, commit });
  } finally {
    await harness.close();
  }
}

main().catch((err: Error & { code?: string }) => {
  // A flag parseArgs refused is the caller's mistake: say which and how to ask, without a stack trace.
  if (err.code?.startsWith('ERR_PARSE_ARGS_')) {
    process.stderr.write(`bench: ${err.message}\n\n${BENCH_USAGE}\n`);
    process.exit(64);
  }
  process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
