/**
 * Records the histories of real cycles as replay fixtures: `test/fixtures/histories/*.json`, which
 * `test/unit/replay.test.ts` replays against the current workflow code in CI, so a change that breaks
 * determinism fails before it ships (docs/SAFE-DEPLOYS.md).
 *
 *   npx tsx scripts/record-histories.ts [--at REV] [--tag NAME] [--only normal,cancelled] [--out DIR] [--overwrite]
 *
 * It uses the stack of STACK_DATABASE_ADMIN_URL + TEMPORAL_ADDRESS when both are set (`npm run stack`
 * prints them), else starts the local stack (PostgreSQL, Temporal dev server, Kafka broker) and stops it
 * at the end. In a fresh database with this tree's migrations it runs each scenario in SCENARIOS on a
 * real worker built by `createWorker` (production's workflow bundle, workflow interceptors, sinks and
 * activities) — this working tree's, or with `--at REV` those of a git revision — checks that the cycle
 * took the path the scenario is named for, and writes every run's history as proto3 JSON (the format of
 * `temporal workflow show --output json`; see `historyToFixtureJSON` for why not the SDK's
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
 *      npx tsx scripts/record-histories.ts --tag <id>
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
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  Client,
  Connection,
  WorkflowFailedError,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, type WorkerOptions } from '@temporalio/worker';
import pg from 'pg';
import { loadConfig } from '../src/config';
import type { CycleInput, CycleResult } from '../src/domain/cycle';
import { addDays } from '../src/domain/thresholds';
import { runMigrations } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createLogger } from '../src/observability/logger';
import { WORKER_ROLE, WORKFLOW_TYPE } from '../src/domain/names';
import { LOCAL_ROLE_PASSWORDS, startStack } from './stack';
import { createDatabase, databaseUrl } from './stack/postgres';
import { createWorker } from '../src/temporal/worker';
import { insertDocuments, rejectOwner } from '../test/support/data';
import { runHistories } from '../test/support/history';
import type { CycleWorkflow } from '../src/workflows';

type History = temporal.api.history.v1.IHistory;
const EventType = temporal.api.enums.v1.EventType;

/**
 * protobufjs's proto3 JSON codec, from the copy of protobufjs that `@temporalio/proto` is built with.
 *
 * Why not `historyToJSON`/`historyFromJSON` from `@temporalio/common/lib/proto-utils` (which
 * `Worker.runReplayHistory` also calls on a history whose event ids are strings)? In this install they
 * throw `TypeError: type must be a Type`: `@temporalio/common` and `@temporalio/proto` each get a copy of
 * their own of protobufjs 8 (the root holds protobufjs 7 for @grpc/proto-loader and the OTLP exporter),
 * and the codec of one copy rejects the reflected types of the other (`instanceof Type`). The codec of
 * `@temporalio/proto`'s own copy is the same code, so it reads and writes the same JSON; it is loaded with
 * the module-local `require` so that under Jest it comes from the same module registry as the types.
 */
interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): History | null;
}
const protojson: ProtoJson =
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of another package's protobufjs copy, see above
  require(require.resolve('protobufjs/ext/protojson', { paths: [path.dirname(require.resolve('@temporalio/proto'))] }));
const HistoryType = temporal.api.history.v1.History;

/** A history as fixture JSON: proto3 JSON, two-space indented, as `historyToJSON` would write it. */
export function historyToFixtureJSON(history: History): string {
  return `${JSON.stringify(protojson.toJson(HistoryType, HistoryType.fromObject(history)), null, 2)}\n`;
}

/** A fixture (or `temporal workflow show --output json`) read back into a History for `runReplayHistories`. */
export function historyFromFixtureJSON(json: string): History {
  const history = protojson.fromJson(HistoryType, JSON.parse(json), { ignoreUnknownFields: true });
  if (!history?.events?.length) throw new TypeError('not a workflow history: no events');
  return history;
}

/** The workflow id a history was recorded under (replay needs it: the cycle reads workflowInfo().workflowId). */
export function historyWorkflowId(history: History): string | undefined {
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || undefined;
}

const ROOT = path.resolve(__dirname, '..');
export const FIXTURES_DIR = path.join(ROOT, 'test', 'fixtures', 'histories');

/** Every cycle runs as of this day, so the seeded data means the same thing whenever it is recorded. */
const AS_OF_DATE = '2026-09-02';

interface ScenarioContext {
  client: Client;
  taskQueue: string;
  /** Owner connection: seeds data and installs test triggers. */
  admin: pg.Pool;
  log: (line: string) => void;
}

interface Scenario {
  name: string;
  /** Seeds data, runs the cycle to its end, checks its outcome; returns its handle (first run). */
  run(ctx: ScenarioContext): Promise<WorkflowHandleWithFirstExecutionRunId>;
}

/**
 * The recorded paths through the workflow. Each stays small (a handful of owners) so a fixture is a
 * few hundred lines of JSON and replays in milliseconds.
 */
export const SCENARIOS: Scenario[] = [
  {
    // Several pages, a sliding window of 2 owners, an owner with documents on two pages, an expired
    // document, an owner that fails for good (errcode 22023 from a trigger: non-retryable), and prune.
    name: 'normal',
    async run(ctx) {
      const bad = crypto.randomUUID();
      const twoDocs = crypto.randomUUID();
      await insertDocuments(ctx.admin, AS_OF_DATE, [
        { daysLeft: -3 },
        { daysLeft: 0, ownerUserId: bad },
        { daysLeft: 1, ownerUserId: twoDocs },
        { daysLeft: 5 },
        { daysLeft: 7 },
        { daysLeft: 25, ownerUserId: twoDocs },
        { daysLeft: 30 },
        { daysLeft: 45 },
        { daysLeft: null },
      ]);
      await insertMarker(ctx.admin, addDays(AS_OF_DATE, -120));
      await rejectOwner(ctx.admin, bad);
      const handle = await start(ctx, 'normal', {
        asOf: AS_OF_DATE,
        batchSize: 3,
        ownerConcurrency: 4,
        ownerGroupSize: 2,
      });
      const result = await handle.result();
      check(
        'normal',
        result,
        (r) => r.status === 'completed' && r.failedOwners === 1 && r.pages >= 3 && r.pruned === 1 && r.runs === 1,
      );
      return handle;
    },
  },
  {
    // Pages of 2 owners and a history budget of 32 events: the first run starts fresh and continues as
    // new, a middle run starts from a continuation and continues as new, the last one completes.
    name: 'continued-as-new',
    async run(ctx) {
      await insertDocuments(
        ctx.admin,
        AS_OF_DATE,
        Array.from({ length: 9 }, (_, i) => ({ daysLeft: i % 8 })),
      );
      const handle = await start(ctx, 'continued-as-new', { asOf: AS_OF_DATE, batchSize: 2, maxHistoryEvents: 32 });
      const result = await handle.result();
      check('continued-as-new', result, (r) => r.status === 'completed' && r.runs >= 3 && r.ownersProcessed === 9);
      return handle;
    },
  },
  {
    // Cancelled while owners are in flight: the owner in flight finishes, nothing new starts, no prune.
    name: 'cancelled',
    async run(ctx) {
      await insertDocuments(
        ctx.admin,
        AS_OF_DATE,
        Array.from({ length: 6 }, () => ({ daysLeft: 7 })),
      );
      await slowOwners(ctx.admin);
      const handle = await start(ctx, 'cancelled', { asOf: AS_OF_DATE, ownerConcurrency: 1 });
      await waitForScheduled(handle, ['remindOwners'], 2);
      await handle.cancel();
      const result = await handle.result();
      check(
        'cancelled',
        result,
        (r) => r.status === 'cancelled' && r.ownersProcessed > 0 && r.ownersProcessed < 6 && r.pruned === 0,
      );
      return handle;
    },
  },
  {
    // MaxRunDuration passes mid-page: the cycle ends as time-limit, and still prunes.
    name: 'time-limit',
    async run(ctx) {
      await insertDocuments(
        ctx.admin,
        AS_OF_DATE,
        Array.from({ length: 6 }, () => ({ daysLeft: 1 })),
      );
      await insertMarker(ctx.admin, addDays(AS_OF_DATE, -200));
      await slowOwners(ctx.admin);
      const handle = await start(ctx, 'time-limit', { asOf: AS_OF_DATE, ownerConcurrency: 1, maxRunDurationMs: 1_000 });
      const result = await handle.result();
      check('time-limit', result, (r) => r.status === 'time-limit' && r.ownersProcessed < 6 && r.pruned === 1);
      return handle;
    },
  },
  {
    // Invalid input: resolveCycleSettings fails non-retryably, the cycle marks its outcome and fails.
    name: 'failed-invalid-input',
    async run(ctx) {
      const handle = await start(ctx, 'failed-invalid-input', { thresholdsDays: [7, 30], batchSize: 0 });
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      const type =
        err instanceof WorkflowFailedError ? (err.cause?.cause as { type?: string } | undefined)?.type : undefined;
      if (type !== 'InvalidCycleInput') {
        throw new Error(`failed-invalid-input: expected the cycle to fail with InvalidCycleInput, got ${String(err)}`);
      }
      return handle;
    },
  },
];

function start(ctx: ScenarioContext, name: string, input: CycleInput): Promise<WorkflowHandleWithFirstExecutionRunId> {
  return ctx.client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue: ctx.taskQueue,
    workflowId: `replay-fixture-${name}-${crypto.randomBytes(3).toString('hex')}`,
    args: [input],
  });
}

function check(name: string, result: CycleResult, ok: (r: CycleResult) => boolean): void {
  if (!ok(result))
    throw new Error(`${name}: the cycle did not take the path this fixture is for: ${JSON.stringify(result)}`);
}

/** A ledger row of a document that expired on `expiresAt`, for the prune to delete. */
async function insertMarker(admin: pg.Pool, expiresAt: string): Promise<void> {
  await admin.query(
    `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     values (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'ForeignPassport', 0, $1, now() - interval '200 days')`,
    [expiresAt],
  );
}

/** Every owner transaction takes at least 0.4 s, so a cancel or a deadline lands mid-page. */
async function slowOwners(admin: pg.Pool): Promise<void> {
  await admin.query(`
    create function profile.replay_fixture_slow() returns trigger language plpgsql as $$
    begin perform pg_sleep(0.4); return null; end $$;
    create trigger replay_fixture_slow after insert on profile.document_expiry_reminders
      for each statement execute function profile.replay_fixture_slow();`);
}

async function dropTestTriggers(admin: pg.Pool): Promise<void> {
  await admin.query(`
    drop trigger if exists test_reject_owner on profile.document_expiry_reminders;
    drop function if exists profile.test_reject_owner();
    drop trigger if exists replay_fixture_slow on profile.document_expiry_reminders;
    drop function if exists profile.replay_fixture_slow();
    truncate profile.person_documents, profile.document_expiry_reminders, profile.outbox_messages;`);
}

/** Waits until the run has scheduled `count` activities of `type`. */
async function waitForScheduled(handle: WorkflowHandle, types: string[], count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { events } = await handle.fetchHistory();
    const scheduled = (events ?? []).filter((e) =>
      types.includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    );
    if (scheduled.length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${handle.workflowId}: ${count} ${types.join(' or ')} activities were not scheduled within 30 s`);
}

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

/** Runs the scenarios on a real worker and writes their histories; returns what it wrote. */
export async function recordHistories(options: RecordOptions): Promise<RecordedFile[]> {
  const log = options.log ?? (() => {});
  const scenarios = options.only ? SCENARIOS.filter((s) => options.only!.includes(s.name)) : SCENARIOS;
  const unknown = (options.only ?? []).filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length)
    throw new Error(`unknown scenario(s): ${unknown.join(', ')} (known: ${SCENARIOS.map((s) => s.name).join(', ')})`);
  const prefix = options.tag ? `${options.tag}.` : '';
  fs.mkdirSync(options.outDir, { recursive: true });
  const taken = fs
    .readdirSync(options.outDir)
    .filter((f) => scenarios.some((s) => new RegExp(`^${escapeRegExp(prefix + s.name)}(-run\\d+)?\\.json$`).test(f)));
  if (!options.overwrite) {
    if (taken.length) {
      throw new Error(
        `fixtures exist already: ${taken.join(', ')}. Record a new set with --tag, or pass --overwrite if you really mean to replace them`,
      );
    }
  }

  const dbName = `replay_fixtures_${crypto.randomBytes(4).toString('hex')}`;
  const ownerUrl = await createDatabase(options.databaseAdminUrl, dbName);
  const cleanups: (() => Promise<unknown>)[] = [
    async () => {
      const c = new pg.Client({ connectionString: options.databaseAdminUrl });
      await c.connect();
      await c.query(`drop database if exists ${c.escapeIdentifier(dbName)} with (force)`);
      await c.end();
    },
  ];
  const written: RecordedFile[] = [];
  try {
    await runMigrations({ connectionString: ownerUrl, rolePasswords: LOCAL_ROLE_PASSWORDS });
    const workerUrl = databaseUrl(ownerUrl, { user: WORKER_ROLE, password: LOCAL_ROLE_PASSWORDS.worker });
    const admin = createPool({ connectionString: ownerUrl, max: 2 });
    cleanups.unshift(() => admin.end());
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
    const pool = createPool({ connectionString: workerUrl, max: config.databasePoolSize });
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
    const client = new Client({ connection, namespace: options.namespace ?? 'default' });

    const recorded: { scenario: string; workflowId: string; runs: { runId: string; history: History }[] }[] = [];
    for (const scenario of scenarios) {
      log(`recording ${scenario.name}`);
      try {
        const handle = await scenario.run({ client, taskQueue, admin, log });
        recorded.push({
          scenario: scenario.name,
          workflowId: handle.workflowId,
          runs: await runHistories(client, handle),
        });
      } finally {
        await dropTestTriggers(admin);
      }
    }
    // Written only once every scenario went as planned: no half-recorded set, and no stale run files.
    for (const f of taken) fs.rmSync(path.join(options.outDir, f));
    for (const { scenario, workflowId, runs } of recorded) {
      runs.forEach(({ runId, history }, i) => {
        const file = path.join(options.outDir, `${prefix}${scenario}${runs.length > 1 ? `-run${i + 1}` : ''}.json`);
        fs.writeFileSync(file, historyToFixtureJSON(history));
        written.push({ scenario, file, workflowId, runId, events: history.events?.length ?? 0 });
      });
    }
    return written;
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((err: Error) => log(`cleanup: ${err.message}`));
  }
}

interface WorkerModules {
  createWorker: typeof createWorker;
  loadConfig: typeof loadConfig;
}

/**
 * `src/` of a git revision, extracted into a hidden directory of this repository (so its imports
 * resolve to this node_modules) and loaded through tsx: that revision's worker and configuration.
 */
function checkoutSource(rev: string, log: (line: string) => void): { dir: string; modules: WorkerModules } {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = path.join(ROOT, `.record-histories-${sha.slice(0, 12)}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  const tar = path.join(dir, 'src.tar');
  execFileSync('git', ['archive', '--format=tar', '-o', tar, sha, 'src'], { cwd: ROOT });
  execFileSync('tar', ['-xf', tar, '-C', dir]);
  log(`recording with the worker of ${rev} (${sha.slice(0, 12)})`);
  /* eslint-disable @typescript-eslint/no-require-imports -- modules of another revision, found at run time */
  const modules: WorkerModules = {
    // The worker factory moved from src/worker.ts to src/temporal/worker.ts; older revisions have the former.
    createWorker: require(
      fs.existsSync(path.join(dir, 'src', 'temporal', 'worker.ts'))
        ? path.join(dir, 'src', 'temporal', 'worker.ts')
        : path.join(dir, 'src', 'worker.ts'),
    ).createWorker,
    loadConfig: require(path.join(dir, 'src', 'config.ts')).loadConfig,
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  return { dir, modules };
}

/** Event type names of a history, for a quick look at a fixture. */
export function eventTypes(history: History): string[] {
  return (history.events ?? []).map((e) => String(EventType[e.eventType ?? 0]).replace(/^EVENT_TYPE_/, ''));
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

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

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: Error) => {
      process.stderr.write(`record-histories failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
