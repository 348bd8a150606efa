/**
 * What an integration test file needs from the shared stack: its own database (migrated, with the
 * worker's role), a worker on its own task queue, a client, and data helpers.
 */
import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type pg from 'pg';
import pino from 'pino';
import { loadConfig, type Config, type WorkerVersion } from '../../src/config';
import type { CycleInput, CycleSettings } from '../../src/domain/cycle';
import { createPool } from '../../src/db/pool';
import { REDACTED_PATHS } from '../../src/observability/logger';
import { WORKFLOW_TYPE } from '../../src/domain/names';
import { createMigratedDatabase } from '../../scripts/stack/database';
import type { Tracing } from '../../src/observability/tracing';
import { connectTemporal, temporalConnectionOptions, type TemporalConnectOptions } from '../../src/temporal/connection';
import { createWorker } from '../../src/temporal/worker';
import type { CycleWorkflow } from '../../src/workflows';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with npm test (the global setup starts the stack)`);
  return value;
}

export interface TestDatabase {
  name: string;
  /** The owner's URL: migrations and checks that need the owner. */
  ownerUrl: string;
  /** Owner connection: seeds and inspects tables. */
  admin: pg.Pool;
  /** The worker's connection, as `expiry_reminder_worker`. */
  workerUrl: string;
  worker: pg.Pool;
  /** The relay's connection, as `outbox_relay`. */
  relayUrl: string;
  /** The support role's connection, as `expiry_reminder_support` (`explain`). */
  supportUrl: string;
  close(): Promise<void>;
}

/** A fresh migrated database for one test file. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const created = await createMigratedDatabase(required('STACK_DATABASE_ADMIN_URL'), { prefix: `t_${label}` });
  const admin = createPool({ connectionString: created.ownerUrl, max: 4 });
  const worker = createPool({ connectionString: created.workerUrl, max: 20 });
  return {
    name: created.name,
    ownerUrl: created.ownerUrl,
    admin,
    workerUrl: created.workerUrl,
    worker,
    relayUrl: created.relayUrl,
    supportUrl: created.supportUrl,
    close: async () => {
      await worker.end();
      await admin.end();
      await created.drop();
    },
  };
}

/** Empties the job's tables and the documents between tests of one file. */
export async function resetData(db: TestDatabase): Promise<void> {
  await db.admin.query(
    'truncate profile.person_documents, profile.document_expiry_reminders, profile.outbox_messages, ' +
      'profile.document_expiry_reminder_prune_cutoff, profile.outbox_events, profile.outbox_deliveries, ' +
      `profile.outbox_held; update profile.outbox_lanes set xid = '0', ` +
      `id = '00000000-0000-0000-0000-000000000000', moved_at = null`,
  );
}

/**
 * How the stack says to reach its Temporal frontend over mTLS: the client certificate, key and CA, and the
 * name its certificate carries. The production profile prints them; the dev stack prints none.
 */
const TEMPORAL_TLS_VARIABLES = [
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
] as const;

/** The given variables of `names` in the environment (unset and empty ones left out). */
export function stackVariables(names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value) out[name] = value;
  }
  return out;
}

/** Configuration as the worker would load it on the stack's Temporal (with its TLS files, if any), plus overrides. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    TEMPORAL_ADDRESS: required('TEMPORAL_ADDRESS'),
    ...stackVariables(TEMPORAL_TLS_VARIABLES),
    ...overrides,
  });
}

/** Resolved cycle settings for `asOfDate` (AsOf at its midnight, UTC): the documented defaults, plus overrides. */
export function testCycleSettings(asOfDate: string, overrides: Partial<CycleSettings> = {}): CycleSettings {
  return { asOf: `${asOfDate}T00:00:00.000Z`, asOfDate, ...loadConfig({}).cycle, ...overrides };
}

/**
 * The stack's Temporal frontend, connected with the job's own connection code (`connectTemporal`, which
 * reads the TLS settings and says what to set when the frontend refuses): `NativeConnection.connect` for a
 * worker, `Connection.connect` for a client.
 */
function connectToStack<T>(connect: (options: TemporalConnectOptions) => Promise<T>): Promise<T> {
  return connectTemporal(temporalConnectionOptions(testConfig()), connect);
}

/** Log lines a test worker wrote, parsed, so tests can assert on them. */
export class CapturedLogs {
  readonly lines: Record<string, unknown>[] = [];
  readonly raw: string[] = [];
  readonly logger = pino(
    { level: 'debug', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
    new Writable({
      write: (chunk: Buffer, _enc, done) => {
        for (const line of chunk.toString().split('\n').filter(Boolean)) {
          this.raw.push(line);
          this.lines.push(JSON.parse(line));
        }
        done();
      },
    }),
  );
  messages(msg: string): Record<string, unknown>[] {
    return this.lines.filter((l) => l.msg === msg);
  }
}

export interface TestWorker {
  worker: Worker;
  taskQueue: string;
  logs: CapturedLogs;
  stop(): Promise<void>;
}

/** A worker on a task queue of its own, running the real workflow bundle and real activities. */
export async function startTestWorker(
  db: TestDatabase,
  options: {
    taskQueue?: string;
    config?: Config;
    tracing?: Tracing;
    /** The worker's identity in histories, to tell two workers of one process apart. */
    identity?: string;
    /** A Worker Deployment Version to declare (pinned cycles); without it the worker is unversioned. */
    version?: WorkerVersion;
    /** The worker's pool, when not the database's own (a test's observed pool, say). */
    pool?: pg.Pool;
  } = {},
): Promise<TestWorker> {
  const taskQueue = options.taskQueue ?? `test-${crypto.randomUUID()}`;
  const connection = await connectToStack((o) => NativeConnection.connect(o));
  const logs = new CapturedLogs();
  const worker = await createWorker({
    config: options.config ?? testConfig(),
    connection,
    pool: options.pool ?? db.worker,
    logger: logs.logger,
    taskQueue,
    tracing: options.tracing,
    identity: options.identity,
    version: options.version,
    workflowBundle: { codePath: required('WORKFLOW_BUNDLE_PATH') },
  });
  const running = worker.run();
  let stopped: Promise<void> | undefined;
  return {
    worker,
    taskQueue,
    logs,
    // Idempotent: a test may stop the harness's worker itself (to restart it) before the harness does.
    stop: () =>
      (stopped ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        await connection.close();
      })()),
  };
}

/** A client of the stack's Temporal; close it after the file. */
export async function connectClient(): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await connectToStack((o) => Connection.connect(o));
  return { client: new Client({ connection }), close: () => connection.close() };
}

/** Starts a cycle on `taskQueue` and returns its handle. */
export function startCycle(client: Client, taskQueue: string, input: CycleInput = {}, workflowId?: string) {
  return client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: workflowId ?? `test-cycle-${crypto.randomUUID()}`,
    args: [input],
  });
}
