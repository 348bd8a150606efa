/**
 * The one set-up of an integration test file: its own migrated database, a Temporal client, workers on task
 * queues of their own, and a teardown that leaves nothing running behind. Call {@link useIntegration} at the
 * top of a file: it registers the jest hooks and returns handles that tests and later hooks read.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { Config } from '../../src/config';
import { createPool } from '../../src/db/pool';
import type { CycleInput, CycleResult } from '../../src/domain/cycle';
import {
  connectClient,
  createTestDatabase,
  resetData,
  startCycle,
  startTestWorker,
  testConfig,
  type TestDatabase,
  type TestWorker,
} from './stack';

export interface IntegrationOptions {
  /** A database of the file's own (default true); a file that only talks to Temporal turns it off. */
  database?: boolean;
  /** A Temporal client for the file; on by default when the file has a worker. */
  client?: boolean;
  /** `file`: one worker for the whole file; `test`: a new worker, on a new task queue, for every test. */
  worker?: 'file' | 'test';
  /** The task queue of the per-file worker (default: a fresh one). */
  taskQueue?: string;
  /** The harness workers' configuration, built once the database exists (default: the test defaults). */
  config?: (db: TestDatabase) => Config;
  /** Empty the job's tables before every test (default true). */
  resetEachTest?: boolean;
  /** Open a pool as the relay's role, of this size. */
  relayPoolSize?: number;
}

/** What {@link startTestWorker} takes: task queue, configuration, tracing, identity, version, pool. */
type WorkerOptions = NonNullable<Parameters<typeof startTestWorker>[1]>;

export interface Integration {
  readonly db: TestDatabase;
  readonly client: Client;
  /** The configuration the harness's workers run with (`config` of the options, else the test defaults). */
  readonly config: Config;
  /** The harness's worker: the file's, or this test's. */
  readonly worker: TestWorker;
  /** The pool as `outbox_relay` ({@link IntegrationOptions.relayPoolSize}). */
  readonly relayPool: pg.Pool;
  /**
   * Starts another worker. Started in a test, it is stopped after that test; started in `beforeAll`, after the
   * file. Either way its task queue's running cycles are terminated at the end of the file.
   */
  startWorker(options?: WorkerOptions): Promise<TestWorker>;
  /** A schedule the file created, deleted after the file. */
  trackSchedule(scheduleId: string): void;
  /** Cycles still running on this task queue after the file are terminated (a failed test may leave one). */
  trackTaskQueue(taskQueue: string): void;
  /** Runs after the file, before the harness closes the client and drops the database. */
  onTeardown(fn: () => Promise<unknown>): void;
  /** Starts a cycle on the harness worker's queue (or `taskQueue`). */
  startCycle(input?: CycleInput, options?: { taskQueue?: string; workflowId?: string }): ReturnType<typeof startCycle>;
  /** Runs a cycle on the harness worker's queue to its end and returns its result. */
  cycle(input?: CycleInput): Promise<CycleResult>;
}

/**
 * Registers the file's hooks and returns its handles. Hooks a file adds itself run after the harness's
 * `beforeAll`/`beforeEach`; use {@link Integration.onTeardown} for clean-up that needs the client or database.
 */
export function useIntegration(label: string, options: IntegrationOptions = {}): Integration {
  const wantsClient = options.client ?? options.worker !== undefined;
  let db: TestDatabase | undefined;
  let temporal: { client: Client; close(): Promise<void> } | undefined;
  let relayPool: pg.Pool | undefined;
  let harnessWorker: TestWorker | undefined;
  let workerConfig: Config | undefined;
  let inTest = false;
  const fileWorkers: TestWorker[] = [];
  const testWorkers: TestWorker[] = [];
  const schedules = new Set<string>();
  const taskQueues = new Set<string>();
  const teardowns: (() => Promise<unknown>)[] = [];

  const present = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) {
      throw new Error(`${what} of "${label}" is not there: ask useIntegration for it, and use it in tests and hooks`);
    }
    return value;
  };

  async function startWorker(workerOptions: WorkerOptions = {}): Promise<TestWorker> {
    const database = present(db, 'the database');
    const w = await startTestWorker(database, {
      ...workerOptions,
      config: workerOptions.config ?? workerConfig,
    });
    taskQueues.add(w.taskQueue);
    (inTest ? testWorkers : fileWorkers).push(w);
    return w;
  }

  const stopAll = async (workers: TestWorker[]) => {
    for (const w of workers.splice(0)) await w.stop();
  };

  beforeAll(async () => {
    if (options.database !== false) db = await createTestDatabase(label);
    workerConfig = db && options.config ? options.config(db) : testConfig();
    if (db && options.relayPoolSize)
      relayPool = createPool({ connectionString: db.relayUrl, max: options.relayPoolSize });
    if (wantsClient) temporal = await connectClient();
    if (options.worker === 'file') harnessWorker = await startWorker({ taskQueue: options.taskQueue });
  });

  beforeEach(async () => {
    inTest = true;
    if (options.resetEachTest !== false && db) await resetData(db);
    if (options.worker === 'test') harnessWorker = await startWorker();
  });

  afterEach(async () => {
    inTest = false;
    await stopAll(testWorkers);
  });

  afterAll(async () => {
    const errors: unknown[] = [];
    const attempt = async (fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (err) {
        errors.push(err);
      }
    };
    for (const fn of teardowns) await attempt(fn);
    const client = temporal?.client;
    if (client) {
      // A test that failed early may not have created its schedule.
      for (const id of schedules)
        await client.schedule
          .getHandle(id)
          .delete()
          .catch(() => {});
      for (const queue of taskQueues) await attempt(() => terminateRunning(client, queue, label));
    }
    await attempt(() => stopAll(testWorkers));
    await attempt(() => stopAll(fileWorkers));
    if (temporal) await attempt(() => temporal!.close());
    if (relayPool) await attempt(() => relayPool!.end());
    if (db) await attempt(() => db!.close());
    if (errors.length) throw errors[0];
  });

  return {
    get db() {
      return present(db, 'the database');
    },
    get client() {
      return present(temporal, 'the Temporal client').client;
    },
    get config() {
      return present(workerConfig, 'the configuration');
    },
    get worker() {
      return present(harnessWorker, 'the worker');
    },
    get relayPool() {
      return present(relayPool, 'the relay pool');
    },
    startWorker,
    trackSchedule: (id) => void schedules.add(id),
    trackTaskQueue: (queue) => void taskQueues.add(queue),
    onTeardown: (fn) => void teardowns.push(fn),
    startCycle(input = {}, where = {}) {
      const queue = where.taskQueue ?? present(harnessWorker, 'the worker').taskQueue;
      return startCycle(present(temporal, 'the Temporal client').client, queue, input, where.workflowId);
    },
    async cycle(input = {}) {
      return await (await this.startCycle(input)).result();
    },
  };
}

/** Terminates the cycles still running on `taskQueue`; a deleted schedule does not stop the cycle it started. */
async function terminateRunning(client: Client, taskQueue: string, label: string): Promise<void> {
  for await (const wf of client.workflow.list({
    query: `TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`,
  })) {
    await client.workflow
      .getHandle(wf.workflowId, wf.runId)
      .terminate(`${label} test cleanup`)
      .catch(() => {});
  }
}
