/**
 * Records the histories of real cycles as replay fixtures: `test/fixtures/histories/*.json`, which
 * `test/unit/replay.test.ts` replays against the current workflow code in CI, so a change that breaks
 * determinism fails before it ships (docs/SAFE-DEPLOYS.md).
 *
 *   npx tsx scripts/record-histories/cli.ts [--at REV] [--tag NAME] [--only normal,cancelled] [--out DIR] [--overwrite]
 *
 * It uses the stack of STACK_DATABASE_ADMIN_URL + TEMPORAL_ADDRESS when both are set (`npm run stack`
 * prints them), else starts the local stack (PostgreSQL, Temporal dev server, Kafka broker) and stops it
 * at the end. In a fresh database with this tree's migrations it runs each scenario of scenarios.ts on a
 * real worker built by `createWorker` (production's workflow bundle, workflow interceptors, sinks and
 * activities) — this working tree's, or with `--at REV` those of a git revision — checks that the cycle
 * took the path the scenario is named for, and writes every run's history as proto3 JSON (the format of
 * `temporal workflow show --output json`; scripts/record-histories/fixtures.ts says why not the SDK's
 * `historyToJSON`). Nothing is stripped. One file per run: `<scenario>.json`, or `<scenario>-run<N>.json`
 * for each run of a cycle that continued as new; with `--tag T`, `T.<scenario>.json`. Files are written
 * only when every scenario went as planned, and never over existing ones unless `--overwrite`.
 *
 * WHEN TO RECORD — not on every workflow change. The fixtures stand for histories that workers in
 * production have written; the point is that new code must still replay them.
 *  - A change that keeps the command sequence (refactors, logs, current details, activity options,
 *    activity implementations) needs no new fixtures: the replay test proves it is safe.
 *  - A change of the command sequence goes behind `patched('<id>')` (or ships as a new worker
 *    deployment version). The existing fixtures then cover the old branch; record the new branch as a
 *    NEW set next to them, from the patched code:
 *      npx tsx scripts/record-histories/cli.ts --tag <id>
 *    The old files stay until the patch is deprecated. When `deprecatePatch('<id>')` replaces
 *    `patched('<id>')` (no cycle without the marker is open any more), the replay test fails on them:
 *    that change deletes them and records `--tag <id>-deprecated`. When the `deprecatePatch` call is
 *    removed, the `<id>.*` set fails (its markers are not deprecated) and is deleted in turn.
 *  - A new path through the workflow: add a scenario and record it alone with `--only <name>`.
 *  - The first set, or one that must match what is deployed: record from the deployed revision,
 *    `--at <release tag>`, not from a working tree that already holds the change under test.
 * `--overwrite` replaces a set in place; never use it to make a failing replay pass: that swaps the
 * evidence of what old workers wrote for what the new code writes, and running cycles would still fail.
 */
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { FIXTURES_DIR } from './fixtures';
import { startStack } from '../stack';
import { recordHistories } from './index';

/** The word after `name` on the command line, if `name` is there. */
function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const step = (line: string) => process.stderr.write(`» ${line}\n`);
  const tag = argValue('--tag');
  if (tag !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(tag))
    throw new Error(`--tag must be lower-case letters, digits and dashes, got "${tag}"`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const adopted = process.env.STACK_DATABASE_ADMIN_URL && process.env.TEMPORAL_ADDRESS;
  const stack = adopted ? undefined : await startStack({ log: step, ui: false });
  try {
    const files = await recordHistories({
      temporalAddress: stack?.temporal.address ?? process.env.TEMPORAL_ADDRESS!,
      namespace: stack ? 'default' : process.env.TEMPORAL_NAMESPACE || 'default',
      databaseAdminUrl: stack?.postgres.adminUrl ?? process.env.STACK_DATABASE_ADMIN_URL!,
      outDir: path.resolve(argValue('--out') ?? FIXTURES_DIR),
      tag,
      only: argValue('--only')
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      overwrite: process.argv.includes('--overwrite'),
      at: argValue('--at'),
      log: step,
    });
    console.table(
      files.map((f) => ({
        file: path.relative(process.cwd(), f.file),
        events: f.events,
        workflowId: f.workflowId,
        runId: f.runId,
      })),
    );
  } finally {
    await stack?.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`record-histories failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
