/**
 * The fixture recorder as a library (`recordHistories`): what `cli.ts` runs, and what
 * test/integration/record-histories.test.ts runs against the test stack. It records in a fresh migrated
 * database, on a real worker built by `createWorker` (production's workflow bundle, workflow
 * interceptors, sinks and activities), and writes the files in the format of
 * ./fixtures.ts.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type pg from 'pg';
import { loadConfig } from '../../src/config';
import { createPool } from '../../src/db/pool';
import { createLogger } from '../../src/observability/logger';
import { createWorker } from '../../src/temporal/worker';
import { runHistories, startedChildren } from '../../src/temporal/histories';
import { fixtureFileName, historyToFixtureJSON, isScenarioFixture, type History } from './fixtures';
import { createMigratedDatabase } from '../stack/database';
import { checkoutSource, type WorkerModules } from './checkout';
import { dropTestTriggers, SCENARIOS, type Scenario } from './scenarios';

export interface RecordOptions {
  temporalAddress: string;
  namespace?: string;
  /** A server where this may create (and afterwards drops) a database. */
  databaseAdminUrl: string;
  outDir: string;
  /** Prefix of the file names (`<tag>.normal.json`), for a new set next to the old ones. */
  tag?: string;
  /** Scenario names to record; all when absent. */
  only?: string[];
  overwrite?: boolean;
  /** A prebuilt bundle (tests); without it the worker bundles the workflow code as production does. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * A git revision (a release tag, a commit): record with the worker of that revision (its workflow
   * code, interceptors and activities) instead of this working tree's. The migrations are this tree's.
   */
  at?: string;
  log?: (line: string) => void;
}

export interface RecordedFile {
  scenario: string;
  file: string;
  workflowId: string;
  runId: string;
  events: number;
}

interface RecordedScenario {
  scenario: string;
  workflowId: string;
  runs: { runId: string; history: History }[];
}

/** Run last to first at the end, whatever happened: what was started, stopped; what was made, removed. */
type Cleanup = () => Promise<unknown>;

/**
 * Runs the scenarios on a real worker and writes their histories; returns what it wrote. Files are
 * written only when every scenario went as planned, and never over existing ones unless `overwrite`.
 */
export async function recordHistories(options: RecordOptions): Promise<RecordedFile[]> {
  const log = options.log ?? (() => {});
  const scenarios = chosenScenarios(options.only);
  fs.mkdirSync(options.outDir, { recursive: true });
  const taken = fs
    .readdirSync(options.outDir)
    .filter((f) => scenarios.some((s) => isScenarioFixture(f, s.name, options.tag)));
  if (!options.overwrite && taken.length) {
    throw new Error(
      `fixtures exist already: ${taken.join(', ')}. Record a new set with --tag, or pass --overwrite if you really mean to replace them`,
    );
  }

  const db = await createMigratedDatabase(options.databaseAdminUrl, { prefix: 'replay_fixtures' });
  const cleanups: Cleanup[] = [() => db.drop()];
  try {
    const admin = createPool({ connectionString: db.ownerUrl, max: 2 });
    cleanups.unshift(() => admin.end());
    const { client, taskQueue } = await startRecordingWorker(options, db.workerUrl, cleanups, log);
    const recorded: RecordedScenario[] = [];
    for (const scenario of scenarios) {
      log(`recording ${scenario.name}`);
      try {
        const handle = await scenario.run({ client, taskQueue, admin, log });
        const runs = await runHistories(client, handle);
        recorded.push({ scenario: scenario.name, workflowId: handle.workflowId, runs });
        // A partitioned cycle's partitions are workflows of their own: each is a fixture too.
        for (const [i, child] of startedChildren(runs).entries()) {
          recorded.push({
            scenario: `${scenario.name}-partition${i + 1}`,
            workflowId: child.workflowId,
            runs: await runHistories(client, child),
          });
        }
      } finally {
        await dropTestTriggers(admin);
      }
    }
    // Written only once every scenario went as planned: no half-recorded set, and no stale run files.
    for (const f of taken) fs.rmSync(path.join(options.outDir, f));
    return recorded.flatMap((r) => writeFixtures(options.outDir, r, options.tag));
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((err: Error) => log(`cleanup: ${err.message}`));
  }
}

/** The scenarios `only` names (all when absent); an unknown name is refused before anything starts. */
function chosenScenarios(only: string[] | undefined): Scenario[] {
  if (!only) return SCENARIOS;
  const unknown = only.filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length)
    throw new Error(`unknown scenario(s): ${unknown.join(', ')} (known: ${SCENARIOS.map((s) => s.name).join(', ')})`);
  return SCENARIOS.filter((s) => only.includes(s.name));
}

/**
 * A worker as production builds it (this tree's, or that of `options.at`) polling a task queue of its
 * own, and a client; what they hold is added to `cleanups`.
 */
async function startRecordingWorker(
  options: RecordOptions,
  workerUrl: string,
  cleanups: Cleanup[],
  log: (line: string) => void,
): Promise<{ client: Client; taskQueue: string }> {
  let workerModules: WorkerModules = { createWorker, loadConfig };
  if (options.at) {
    const checkout = checkoutSource(options.at, log);
    cleanups.push(async () => fs.rmSync(checkout.dir, { recursive: true, force: true }));
    workerModules = checkout.modules;
  }
  const config = workerModules.loadConfig({
    TEMPORAL_ADDRESS: options.temporalAddress,
    TEMPORAL_NAMESPACE: options.namespace ?? 'default',
    DATABASE_URL: workerUrl,
  });
  const pool: pg.Pool = createPool({ connectionString: workerUrl, max: config.databasePoolSize });
  cleanups.unshift(() => pool.end());
  const nativeConnection = await NativeConnection.connect({ address: options.temporalAddress });
  cleanups.unshift(() => nativeConnection.close());
  const taskQueue = `replay-fixtures-${crypto.randomUUID()}`;
  log('starting a worker (bundling the workflow code)');
  const worker = await workerModules.createWorker({
    config,
    connection: nativeConnection,
    pool,
    logger: createLogger(process.env.LOG_LEVEL ?? 'error'),
    taskQueue,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : {}),
  });
  const running = worker.run();
  cleanups.unshift(async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
  });
  const connection = await Connection.connect({ address: options.temporalAddress });
  cleanups.unshift(() => connection.close());
  return { client: new Client({ connection, namespace: options.namespace ?? 'default' }), taskQueue };
}

/** One file per run of a recorded scenario; returns what it wrote. */
function writeFixtures(outDir: string, { scenario, workflowId, runs }: RecordedScenario, tag?: string): RecordedFile[] {
  return runs.map(({ runId, history }, i) => {
    const file = path.join(outDir, fixtureFileName(scenario, i + 1, runs.length, tag));
    fs.writeFileSync(file, historyToFixtureJSON(history));
    return { scenario, file, workflowId, runId, events: history.events?.length ?? 0 };
  });
}
