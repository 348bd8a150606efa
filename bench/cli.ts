/**
 * `npm run bench -- [--workload smoke|backlog|steady|moonshot|idle|relay] [--documents N --owners M --due K --due-owners O]
 *                   [--rows N (relay)]
 *                   [--batch-size B] [--owner-concurrency C] [--owner-group-size G] [--pool-size P]
 *                   [--only temporal,a,b,repeat,e2e | kafkajs,relay,relay-cold] [--worker dist|src] [--as-of YYYY-MM-DD] [--keep-db]`
 *
 * The benchmark of issue 7. Starts the local stack (PostgreSQL + Temporal dev server, no UI, no Kafka)
 * or uses STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS when set, creates a fresh migrated database, and
 * runs the workload (bench/workloads) in it: the cycle through Temporal on a worker process as deployed
 * (`npm run build`, then `node dist/worker.js` with the Dockerfile's heap flags; `--worker src` runs it
 * under tsx) against a plain per-owner loop (A) and one SQL statement per page (B), and the idle cycle
 * (repeat). Prints a table and writes bench/results/<workload>.json (bench/report.ts). What the numbers
 * mean, and the numbers so far: bench/REPORT.md.
 */
import { startHarness } from './harness';
import { parseBenchOptions } from './options';
import { report } from './report';
import { findWorkload } from './workloads';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const wallStart = performance.now();
  const options = parseBenchOptions();
  const workload = findWorkload(options.workload);
  const paths = new Set(options.only ?? workload.defaultPaths ?? workload.paths);
  const unknown = [...paths].filter((p) => !workload.paths.includes(p));
  if (unknown.length)
    throw new Error(`unknown path ${unknown.join(', ')}; ${workload.name} has ${workload.paths.join(', ')}`);
  const harness = await startHarness(options, workload, paths, say);
  try {
    report(workload.name, await workload.run(harness.bench), wallStart, say);
  } finally {
    await harness.close();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
