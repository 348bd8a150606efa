/**
 * The harness a workload runs in: the stack (started here, dev or production profile, or the one
 * STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS name), a Temporal client, a fresh migrated database, and the
 * worker process on demand. `close` stops and removes all of it, last started first, also when a
 * workload failed. On the production profile every connection is the job's own: the client and the worker
 * over mTLS (TEMPORAL_TLS_*), the databases with the stack's role passwords over verify-full TLS, the relay
 * and the bare producer over SASL_SSL (KAFKA_SSL*, KAFKA_SASL_*).
 */
import { makePollingVersionCurrent } from '../../scripts/stack/versions';
import { Client, Connection } from '@temporalio/client';
import { createPool } from '../../src/db/pool';
import { loadTemporalProfile } from '../../src/config/temporal-profile';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { startStack } from '../../scripts/stack';
import { createMigratedDatabase, stackRolePasswords } from '../../scripts/stack/database';
import type { BenchOptions, StackProfile } from '../options';
import type { Bench, Workload } from '../workload';
import { countPostgresClusterApart, procStatusKb, scopeCpuToDescendantsOf } from './measure';
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
    const env = await startOrAdoptStack(needs.kafka, cleanups, say, options.profile, options.statements);
    const profile = stackProfileOf(env);
    const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
    const connection = await connectBenchClient(env);
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace });
    // Roles are the server's: migrating with other passwords than the stack's would lock its URLs out.
    const database = await createMigratedDatabase(env.STACK_DATABASE_ADMIN_URL, {
      prefix: `bench_${options.workload}`,
      rolePasswords: stackRolePasswords(env),
    });
    if (!options.keepDb) cleanups.push(() => database.drop());
    const admin = createPool({ connectionString: database.ownerUrl, max: 2 });
    cleanups.push(() => admin.end());
    const temporalAdmin = env.STACK_TEMPORAL_DATABASE_ADMIN_URL
      ? createPool({ connectionString: env.STACK_TEMPORAL_DATABASE_ADMIN_URL, max: 1 })
      : undefined;
    if (temporalAdmin) {
      cleanups.push(() => temporalAdmin.end());
      // Its processes are `postgres` too: counted as a group of their own, by their postmaster.
      const { rows } = await temporalAdmin.query<{ pid: number }>('select pg_backend_pid() as pid');
      countPostgresClusterApart(rows[0].pid);
    }
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
      // A versioned worker (this code) gets cycles once its version is current; an older revision's needs nothing.
      await makePollingVersionCurrent(client, namespace, taskQueue);
      say(`worker ${worker.child.pid} polling (RSS ${Math.round(procStatusKb(worker.child.pid!, 'VmRSS') / 1024)} MB)`);
      return {
        ...worker,
        stop: async () => {
          running.delete(worker);
          await worker.stop();
        },
      };
    };
    return {
      bench: { options, profile, paths, env, client, namespace, database, admin, temporalAdmin, startWorker, say },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Variables of an adopted stack that reach the benchmark's processes: Temporal's, Kafka's, the role passwords. */
const ADOPTED_VARIABLES = /^(TEMPORAL_|KAFKA_|EXPIRY_REMINDER_WORKER_PASSWORD$|OUTBOX_RELAY_PASSWORD$)/;

/** The profile a stack's variables describe: production when Temporal or Kafka is reached over TLS. */
function stackProfileOf(env: Record<string, string | undefined>): StackProfile {
  const tls = Object.keys(env).some((k) => k.startsWith('TEMPORAL_TLS_') && env[k]) || env.KAFKA_SSL === 'true';
  return tls ? 'production' : 'dev';
}

/**
 * The server settings `--statements` starts the job's PostgreSQL with: client statements, not those inside
 * functions, with their planning time apart from their execution's.
 */
const STATEMENT_STATISTICS = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'top',
  'pg_stat_statements.track_planning': 'on',
};

/**
 * The stack's variables: of the running stack STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS name (which must be
 * of `profile` when that is given), else of a new one of `profile` (default dev), whose stop is pushed onto
 * `cleanups`. A stack started here is this process's descendant, and CPU is counted for it alone.
 */
export async function startOrAdoptStack(
  kafka: boolean,
  cleanups: Cleanup[],
  say: (line: string) => void,
  profile?: StackProfile,
  statements = false,
): Promise<Record<string, string>> {
  if (process.env.STACK_DATABASE_ADMIN_URL && process.env.TEMPORAL_ADDRESS) {
    const env: Record<string, string> = { STACK_DATABASE_ADMIN_URL: process.env.STACK_DATABASE_ADMIN_URL };
    if (process.env.STACK_TEMPORAL_DATABASE_ADMIN_URL)
      env.STACK_TEMPORAL_DATABASE_ADMIN_URL = process.env.STACK_TEMPORAL_DATABASE_ADMIN_URL;
    for (const [k, v] of Object.entries(process.env)) if (ADOPTED_VARIABLES.test(k) && v) env[k] = v;
    env.TEMPORAL_NAMESPACE ??= 'default';
    const adopted = stackProfileOf(env);
    if (profile && profile !== adopted) {
      throw new Error(
        `--profile ${profile}, but the stack of STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS is the ${adopted} profile ` +
          `(TEMPORAL_TLS_* and KAFKA_SSL say so); start one with npm run stack${profile === 'production' ? ' -- --production' : ''} or unset those variables`,
      );
    }
    say(`using STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS (${adopted} profile)`);
    return env;
  }
  // Name a broker so the stack does not start one when nothing measured talks to Kafka (nothing connects to it).
  if (!kafka) process.env.KAFKA_BROKERS ??= '127.0.0.1:9';
  const production = profile === 'production';
  say(`starting the ${production ? 'production' : 'dev'} profile's stack`);
  const stack = await startStack({
    ui: false,
    production,
    log: (l) => say(`[stack] ${l}`),
    postgresSettings: statements ? STATEMENT_STATISTICS : undefined,
  });
  cleanups.push(() => stack.stop());
  scopeCpuToDescendantsOf(process.pid);
  return stack.env;
}

/**
 * A Temporal client as the job's client connects: the address and TLS files of the stack's variables
 * (TEMPORAL_TLS_*, read by src/config/temporal-profile.ts), so the production profile's mTLS frontend takes it.
 */
async function connectBenchClient(env: Record<string, string>): Promise<Connection> {
  const loaded = loadTemporalProfile({ ...process.env, ...env });
  if ('problems' in loaded) throw new Error(`the stack's Temporal settings: ${loaded.problems.join('; ')}`);
  const options = temporalConnectionOptions({
    temporal: { address: env.TEMPORAL_ADDRESS, connection: loaded.profile },
  });
  return connectTemporal(options, (o) => Connection.connect(o));
}

/** Stops the workers a failed workload left running, and shows what each wrote last. */
async function stopLeftRunning(running: Set<BenchWorker>): Promise<void> {
  for (const worker of running) {
    await worker.stop();
    process.stderr.write(worker.output.join('').slice(-4000));
  }
}
