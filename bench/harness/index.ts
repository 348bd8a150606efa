/**
 * The harness a workload runs in: the stack (started here, or the one STACK_DATABASE_ADMIN_URL /
 * TEMPORAL_ADDRESS name), a Temporal client, a fresh migrated database, and the worker process on
 * demand. `close` stops and removes all of it, last started first, also when a workload failed.
 */
import { Client, Connection } from '@temporalio/client';
import { createPool } from '../../src/db/pool';
import { startStack } from '../../scripts/stack';
import { createMigratedDatabase } from '../../scripts/stack/database';
import type { BenchOptions } from '../options';
import type { Bench, Workload } from '../workload';
import { procStatusKb } from './measure';
import { buildWorkerCommand, spawnWorker, waitForPoller, type BenchWorker } from './worker';

export interface Harness {
  bench: Bench;
  close(): Promise<void>;
}

/** Something to stop or remove when the benchmark ends. */
export type Cleanup = () => Promise<unknown>;

/** Starts what `workload` needs for `paths`; on a failure stops what it started and rethrows. */
export async function startHarness(
  options: BenchOptions,
  workload: Workload,
  paths: ReadonlySet<string>,
  say: (line: string) => void,
): Promise<Harness> {
  const needs = workload.needs(paths);
  // Built before anything is measured, so the compiler's CPU is in no measurement.
  const workerCommand = needs.worker ? buildWorkerCommand(options.worker) : undefined;
  const cleanups: Cleanup[] = [];
  const close = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((err: Error) => process.stderr.write(`cleanup: ${err.message}\n`));
    }
  };
  try {
    const env = await startOrAdoptStack(needs.kafka, cleanups, say);
    const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace });
    const database = await createMigratedDatabase(env.STACK_DATABASE_ADMIN_URL, {
      prefix: `bench_${options.workload}`,
    });
    if (!options.keepDb) cleanups.push(() => database.drop());
    const admin = createPool({ connectionString: database.ownerUrl, max: 2 });
    cleanups.push(() => admin.end());
    const running = new Set<BenchWorker>();
    cleanups.push(() => stopLeftRunning(running));
    const startWorker = async (taskQueue: string): Promise<BenchWorker> => {
      if (!workerCommand) throw new Error(`workload ${workload.name} did not ask for the worker (needs().worker)`);
      const worker = spawnWorker(workerCommand, env, {
        databaseUrl: database.workerUrl,
        poolSize: options.poolSize,
        taskQueue,
      });
      running.add(worker);
      await waitForPoller(client, namespace, taskQueue);
      say(`worker ${worker.child.pid} polling (RSS ${Math.round(procStatusKb(worker.child.pid!, 'VmRSS') / 1024)} MB)`);
      return {
        ...worker,
        stop: async () => {
          running.delete(worker);
          await worker.stop();
        },
      };
    };
    return { bench: { options, paths, env, client, namespace, database, admin, startWorker, say }, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * The stack's variables: of the running stack STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS name, else of a
 * new one, whose stop is pushed onto `cleanups`.
 */
export async function startOrAdoptStack(
  kafka: boolean,
  cleanups: Cleanup[],
  say: (line: string) => void,
): Promise<Record<string, string>> {
  if (process.env.STACK_DATABASE_ADMIN_URL && process.env.TEMPORAL_ADDRESS) {
    say('using STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS');
    return {
      STACK_DATABASE_ADMIN_URL: process.env.STACK_DATABASE_ADMIN_URL,
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE ?? 'default',
      ...(process.env.KAFKA_BROKERS ? { KAFKA_BROKERS: process.env.KAFKA_BROKERS } : {}),
    };
  }
  // Name a broker so the stack does not start one when nothing measured talks to Kafka (nothing connects to it).
  if (!kafka) process.env.KAFKA_BROKERS ??= '127.0.0.1:9';
  const stack = await startStack({ ui: false, log: (l) => say(`[stack] ${l}`) });
  cleanups.push(() => stack.stop());
  return stack.env;
}

/** Stops the workers a failed workload left running, and shows what each wrote last. */
async function stopLeftRunning(running: Set<BenchWorker>): Promise<void> {
  for (const worker of running) {
    await worker.stop();
    process.stderr.write(worker.output.join('').slice(-4000));
  }
}
