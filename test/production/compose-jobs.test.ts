/**
 * docker-compose.yml's certificates job and its Temporal services, as the file holds them, run against the
 * production profile's PostgreSQL (ops/postgres, TLS and SCRAM only): the certificates, the Temporal role
 * and schema, the server from its start script, the namespace job and the Web UI; then what `docker compose
 * up -d` with a new BUILD_ID does to the app's services: the worker replaced in place, its health check, the
 * `deployment-current` job, and a cycle on the new version. No Docker engine runs here, so compose never runs
 * as a whole; the binaries the stack builds stand in for the images', the app's source under tsx for the app
 * image's `node dist/…`, and this machine's host names, ports and paths for the containers'.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { spawnGroup, type ProcessGroup } from '../../scripts/process-group';
import { productionFile } from '../../scripts/stack/production-files';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { findOrBuildTemporalCli } from '../../scripts/stack/temporal-cli';
import { findOrBuildTemporalServer, findOrBuildTemporalUi, freePorts } from '../../scripts/stack/temporal-server';
import { createDatabase } from '../../scripts/stack/postgres';
import { utcDate } from '../../src/domain/dates';
import { TEMPORAL_DB_ROLE } from '../../src/domain/names';
import type { CycleResult } from '../../src/domain/cycle';
import type { RoutingChange } from '../../src/operations/deployment';
import {
  composeEnv,
  composeHealthCommand,
  composeScript,
  composeService,
  readCompose,
  requiredVariables,
} from '../support/compose';
import { insertDocuments, outbox } from '../support/data';
import { placement } from '../support/placement';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';

jest.setTimeout(300_000);

const ROOT = path.resolve(__dirname, '../..');

let secrets: StackSecrets;
let server: ProductionPostgres;
let port: string;
let toolDir: string;
let uiBinary: string;
/** The Temporal frontend the `temporal` service's test starts, for the app's services after it. */
let frontend: string | undefined;
/** The job's own cluster (compose's `postgres`), once the worker's test starts it. */
let jobServer: ProductionPostgres | undefined;
const services: ProcessGroup[] = [];
const sh = promisify(execFile);

/** Starts a long-running service, its output into `<name>.log` of the stack folder. */
function startService(name: string, env: NodeJS.ProcessEnv, command: string, args: string[]): ProcessGroup {
  const out = fs.openSync(path.join(secrets.dir, `${name}.log`), 'a');
  // A group of its own: a script's shell does not exec the server, so stopping the shell alone would not do.
  const service = spawnGroup(command, args, { cwd: ROOT, env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  services.push(service);
  return service;
}

/** Runs `command` until it exits 0, failing with its last error after `ms`, or at once if `service` exited. */
async function until(command: string, env: NodeJS.ProcessEnv, service: ProcessGroup, name: string, ms = 120_000) {
  const { child } = service;
  const deadline = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null) {
      const log = fs.readFileSync(path.join(secrets.dir, `${name}.log`), 'utf8');
      throw new Error(`${name} exited (${child.exitCode}): ${whyItStopped(log)}`);
    }
    try {
      return await sh('sh', ['-c', command], { env });
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(1_000);
  }
}

/**
 * The lines of a service's log that say why it stopped: its errors first (a Go server's panic ends in a
 * stack trace that would push them out of any tail), then the log's last lines.
 */
function whyItStopped(log: string): string {
  const errors = log
    .split('\n')
    .filter((line) => /"level":"(error|fatal|panic)"|^panic:|^Error:/.test(line))
    .slice(0, 5)
    .map((line) => line.slice(0, 600));
  return [...errors, '…', log.slice(-1_000)].join('\n');
}

/**
 * A value of an app service's environment as this machine reaches what the container would: compose's host
 * names and ports as the servers this file started, the certificate volume as the stack's folder (the same
 * file names).
 */
function onThisMachine(value: string): string {
  let local = value
    .replaceAll('@temporal-postgres:5432/', `@localhost:${port}/`)
    .replaceAll('/certs/', `${path.dirname(secrets.caPath)}/`);
  if (jobServer) local = local.replaceAll('@postgres:5432/', `@localhost:${new URL(jobServer.adminUrl).port}/`);
  if (frontend && local === 'temporal:7233') local = frontend;
  return local;
}

/**
 * The variables compose gives app service `service` where .env holds this file's passwords (and `dotEnv`) and
 * BUILD_ID `buildId`, as this machine reaches them, over the image's own: the build id the Dockerfile bakes in.
 * Not the image's NODE_OPTIONS: its heap limits are sized for the prebuilt workflow bundle the image carries,
 * while here the worker bundles its source at start.
 */
function appEnv(service: string, buildId: string, dotEnv: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: Record<string, string> = {
    ...Object.fromEntries(requiredVariables('docker-compose.yml').map((v) => [v, `placeholder-${v.toLowerCase()}`])),
    POSTGRES_PASSWORD: secrets.passwords.postgresAdmin,
    TEMPORAL_POSTGRES_PASSWORD: secrets.passwords.temporalPostgresAdmin,
    WORKER_DB_PASSWORD: secrets.passwords.worker,
    RELAY_DB_PASSWORD: secrets.passwords.relay,
    SUPPORT_DB_PASSWORD: secrets.passwords.support,
    TEMPORAL_DB_PASSWORD: secrets.passwords.temporal,
    BUILD_ID: buildId,
    ...dotEnv,
  };
  const composed = readCompose('docker-compose.yml', env).model.services[service];
  if (!composed) throw new Error(`docker-compose.yml has no service ${service}`);
  return {
    PATH: process.env.PATH,
    TEMPORAL_WORKER_BUILD_ID: buildId,
    ...Object.fromEntries(
      Object.entries(composed.environment ?? {}).map(([name, value]) => [name, onThisMachine(String(value))]),
    ),
  };
}

/**
 * An app service's command, `node dist/<x>.js …` (with `args` in place of its command, as `docker compose run`
 * takes them), as this checkout runs it: the source of `<x>` under tsx.
 */
function appArgs(service: string, args?: string[]): string[] {
  const { entrypoint = [], command = [] } = composeService(service);
  const [node, script, ...rest] = [...entrypoint, ...(args ?? command)];
  const compiled = /^dist\/(.+)\.js$/.exec(script ?? '');
  if (node !== 'node' || !compiled) throw new Error(`${service}: expected node dist/<x>.js, not ${node} ${script}`);
  return ['--import', 'tsx', path.join('src', `${compiled[1]}.ts`), ...rest];
}

/** Runs an app one-shot to its end; rejects, with its output, unless it exits 0. */
const runApp = (service: string, env: NodeJS.ProcessEnv, args?: string[]) =>
  sh(process.execPath, appArgs(service, args), { cwd: ROOT, env });

/**
 * A compose service's variables pointed at this file's PostgreSQL as Temporal's role over TLS, with the
 * server's tools on PATH; `prefix` is how the service names its database variables.
 */
function onThisDatabase(service: string, prefix: 'SQL_' | 'TEMPORAL_DB_'): NodeJS.ProcessEnv {
  return {
    ...composeEnv(service),
    PATH: `${toolDir}${path.delimiter}${process.env.PATH}`,
    [`${prefix}HOST`]: 'localhost',
    [`${prefix}PORT`]: port,
    [`${prefix}PASSWORD`]: secrets.passwords.temporal,
    [`${prefix}TLS_CA_FILE`]: secrets.caPath,
  };
}

async function loginAsTemporal(password: string, database = 'postgres'): Promise<{ ssl: boolean }> {
  const client = new pg.Client({
    connectionString: `postgres://${TEMPORAL_DB_ROLE}:${encodeURIComponent(password)}@localhost:${port}/${database}?sslmode=verify-full&sslrootcert=${encodeURIComponent(secrets.caPath)}`,
  });
  await client.connect();
  try {
    return (await client.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()')).rows[0];
  } finally {
    await client.end();
  }
}

function runTemporalDbRole(password: string): string {
  return execFileSync(process.execPath, appArgs('temporal-db-role'), {
    cwd: ROOT,
    env: appEnv('temporal-db-role', 'compose-jobs', { TEMPORAL_DB_PASSWORD: password }),
    encoding: 'utf8',
  });
}

beforeAll(async () => {
  secrets = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-')));
  // Temporal's own cluster, as compose's `temporal-postgres`; every statement it receives in its log, to read
  // what the jobs sent.
  server = await startProductionPostgres(secrets, 'temporal', { log_statement: 'all' });
  port = new URL(server.adminUrl).port;
  // The compose jobs call the server's binaries by the names its images give them.
  const binaries = await findOrBuildTemporalServer();
  toolDir = path.join(secrets.dir, 'bin');
  fs.mkdirSync(toolDir);
  fs.symlinkSync(binaries.sql, path.join(toolDir, 'temporal-sql-tool'));
  // The server image of ops/temporal/server/Dockerfile: the profile's own program beside the official one.
  fs.symlinkSync(binaries.server, path.join(toolDir, 'temporal-server-authz'));
  fs.symlinkSync(findOrBuildTemporalCli() ?? 'temporal', path.join(toolDir, 'temporal'));
  uiBinary = await findOrBuildTemporalUi();
}, 900_000);

afterAll(async () => {
  for (const service of services.reverse()) await service.stop();
  await jobServer?.stop();
  await server?.stop();
  if (secrets) fs.rmSync(secrets.dir, { recursive: true, force: true });
});

test('temporal-db-role creates the Temporal role with TEMPORAL_DB_PASSWORD, which then logs in over TLS; run again, it changes the password; the server receives SCRAM verifiers, never the password', async () => {
  const first = `first-${crypto.randomBytes(9).toString('hex')}`;
  expect(runTemporalDbRole(first)).toContain('"msg":"role created"');
  expect(await loginAsTemporal(first)).toEqual({ ssl: true });
  expect(runTemporalDbRole(secrets.passwords.temporal)).toContain('"msg":"role altered"');
  expect(await loginAsTemporal(secrets.passwords.temporal)).toEqual({ ssl: true });
  await expect(loginAsTemporal(first)).rejects.toThrow(/password authentication failed/);
  // The server's log holds every statement it received (log_statement=all): both that set the password, each
  // with a verifier; neither password in any statement, nor anywhere else in the log.
  const log = fs.readFileSync(server.logFile, 'utf8');
  const verifier = /SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+/.source;
  expect(log).toMatch(new RegExp(`statement: create role "?temporal"? login createdb password '${verifier}'`));
  expect(log).toMatch(new RegExp(`statement: alter role "?temporal"? login createdb password '${verifier}'`));
  expect(log).not.toContain(first);
  expect(log).not.toContain(secrets.passwords.temporal);
});

test('temporal-schema creates both Temporal stores with their schema over TLS, and changes nothing when run again', async () => {
  const env = onThisDatabase('temporal-schema', 'SQL_');
  expect(env).toMatchObject({ SQL_USER: TEMPORAL_DB_ROLE, SQL_TLS: 'true', SQL_PLUGIN: 'postgres12' });
  const versions = async () => {
    const found: Record<string, string> = {};
    for (const database of ['temporal', 'temporal_visibility']) {
      const client = new pg.Client({ connectionString: server.adminUrl.replace(/\/postgres\?/, `/${database}?`) });
      await client.connect();
      try {
        const { rows } = await client.query<{ v: string }>('select curr_version as v from schema_version');
        found[database] = rows.map((r) => r.v).join();
      } finally {
        await client.end();
      }
    }
    return found;
  };
  const script = composeScript('temporal-schema');
  execFileSync('sh', ['-c', script], { env, stdio: 'ignore' });
  const first = await versions();
  expect(first).toEqual({
    temporal: expect.stringMatching(/^\d+\.\d+$/),
    temporal_visibility: expect.stringMatching(/^\d+\.\d+$/),
  });
  execFileSync('sh', ['-c', script], { env, stdio: 'ignore' });
  expect(await versions()).toEqual(first);
});

const asRoot = process.getuid?.() === 0 ? test : test.skip;
asRoot(
  'certs runs ops/tls/make-certs.sh into its own volume, and gives each service’s volume the CA and that service’s own certificate and key only',
  () => {
    const dir = path.join(secrets.dir, 'compose-certs');
    const issued = path.join(secrets.dir, 'compose-issued');
    const volumes = (composeService('certs').volumes ?? []).flatMap((v) => /:\/issued\/([a-z-]+)$/.exec(v)?.[1] ?? []);
    expect(volumes).toEqual([
      'postgres',
      'temporal-postgres',
      'temporal',
      'cli',
      'ui',
      'kafka',
      'worker',
      'client',
      'support',
      'ca',
    ]);
    fs.mkdirSync(dir);
    for (const volume of volumes) fs.mkdirSync(path.join(issued, volume), { recursive: true });
    const script = composeScript('certs')
      .replace('/opt/expiry-reminder/make-certs.sh', productionFile('makeCerts'))
      .replaceAll('/certs', dir)
      .replaceAll('/issued', issued);
    const run = () => execFileSync('bash', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    run();
    const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const stat = (file: string) => {
      const s = fs.statSync(file);
      return { uid: s.uid, mode: (s.mode & 0o777).toString(8) };
    };
    const contents = (volume: string) =>
      Object.fromEntries(
        fs
          .readdirSync(path.join(issued, volume))
          .sort()
          .map((f) => [f, stat(path.join(issued, volume, f))]),
      );
    // The issuer's volume, with the CA's key, is root's alone.
    expect(stat(dir)).toEqual({ uid: 0, mode: '700' });
    expect(stat(path.join(dir, 'ca-key.pem'))).toEqual({ uid: 0, mode: '600' });
    const cert = { uid: 1000, mode: '644' };
    const key = { uid: 1000, mode: '600' };
    expect(contents('postgres')).toEqual({
      'ca.pem': { uid: postgresUid, mode: '644' },
      'postgres-key.pem': { uid: postgresUid, mode: '600' },
      'postgres.pem': { uid: postgresUid, mode: '644' },
    });
    expect(contents('temporal-postgres')).toEqual({
      'ca.pem': { uid: postgresUid, mode: '644' },
      'temporal-postgres-key.pem': { uid: postgresUid, mode: '600' },
      'temporal-postgres.pem': { uid: postgresUid, mode: '644' },
    });
    expect(contents('worker')).toEqual({ 'ca.pem': cert, 'worker-key.pem': key, 'worker.pem': cert });
    expect(contents('client')).toEqual({ 'ca.pem': cert, 'client-key.pem': key, 'client.pem': cert });
    expect(contents('support')).toEqual({ 'ca.pem': cert, 'support-key.pem': key, 'support.pem': cert });
    // Temporal's authorizer knows a caller by its certificate's name: the support volume's is `support`.
    const supportCert = path.join(issued, 'support', 'support.pem');
    const subject = execFileSync('openssl', ['x509', '-noout', '-subject', '-in', supportCert], { encoding: 'utf8' });
    expect(subject.trim()).toMatch(/^subject=\s*CN\s*=\s*support$/);
    expect(contents('temporal')).toEqual({ 'ca.pem': cert, 'temporal-key.pem': key, 'temporal.pem': cert });
    expect(contents('cli')).toEqual({ 'ca.pem': cert, 'cli-key.pem': key, 'cli.pem': cert });
    expect(contents('ui')).toEqual({ 'ca.pem': cert, 'ui-client-key.pem': key, 'ui-client.pem': cert });
    expect(contents('kafka')).toEqual({ 'ca.pem': cert, 'kafka-keystore.pem': key });
    expect(contents('ca')).toEqual({ 'ca.pem': cert });
    for (const volume of volumes) expect(stat(path.join(issued, volume)).mode).toBe('755');
    // Run again (every `up`): the same certificates, and nothing else left in a service's volume.
    const workerCert = fs.readFileSync(path.join(issued, 'worker', 'worker.pem'), 'utf8');
    fs.writeFileSync(path.join(issued, 'worker', 'client-key.pem'), 'planted');
    run();
    expect(Object.keys(contents('worker'))).toEqual(['ca.pem', 'worker-key.pem', 'worker.pem']);
    expect(fs.readFileSync(path.join(issued, 'worker', 'worker.pem'), 'utf8')).toBe(workerCert);
  },
);

// The Temporal server, the namespace job and the UI need the stores the tests above prepared.
test('the temporal service starts the server from its script, on 0.0.0.0 with the address of `hostname -i`, temporal-namespace registers namespace default over mTLS, and temporal-ui lists it', async () => {
  // Free ports, not random ones: the other production files start servers of their own beside this one.
  const ports = await freePorts(11);
  const env: NodeJS.ProcessEnv = {
    ...onThisDatabase('temporal', 'TEMPORAL_DB_'),
    TEMPORAL_TLS_DIR: path.dirname(secrets.caPath),
    TEMPORAL_DYNAMIC_CONFIG_FILE: productionFile('temporalDynamicConfig'),
    // The container's ports are the file's defaults; on a shared machine, ports of this test's own.
    TEMPORAL_FRONTEND_PORT: String(ports[0]),
    TEMPORAL_FRONTEND_HTTP_PORT: String(ports[1]),
    TEMPORAL_FRONTEND_MEMBERSHIP_PORT: String(ports[2]),
    TEMPORAL_HISTORY_PORT: String(ports[3]),
    TEMPORAL_HISTORY_MEMBERSHIP_PORT: String(ports[4]),
    TEMPORAL_MATCHING_PORT: String(ports[5]),
    TEMPORAL_MATCHING_MEMBERSHIP_PORT: String(ports[6]),
    TEMPORAL_WORKER_PORT: String(ports[7]),
    TEMPORAL_WORKER_MEMBERSHIP_PORT: String(ports[8]),
    TEMPORAL_METRICS_ADDRESS: `0.0.0.0:${ports[9]}`,
  };
  expect(env).toMatchObject({
    TEMPORAL_BIND_IP: '0.0.0.0',
    TEMPORAL_DB_TLS: 'true',
    TEMPORAL_DB_USER: TEMPORAL_DB_ROLE,
  });
  const script = composeScript('temporal').replace(
    '--config /etc/temporal ',
    `--config ${path.dirname(productionFile('temporalConfig'))} `,
  );
  const temporal = startService('temporal', env, 'sh', ['-c', script]);
  await until(composeHealthCommand('temporal').replace(':8000/', `:${ports[9]}/`), env, temporal, 'temporal');
  frontend = `127.0.0.1:${ports[0]}`;

  const cliEnv: NodeJS.ProcessEnv = {
    ...composeEnv('temporal-namespace'),
    PATH: env.PATH,
    HOME: secrets.dir,
    TEMPORAL_ADDRESS: `localhost:${ports[0]}`,
    TEMPORAL_TLS_CERT: secrets.cert('cli').cert,
    TEMPORAL_TLS_KEY: secrets.cert('cli').key,
    TEMPORAL_TLS_CA: secrets.caPath,
  };
  expect(cliEnv).toMatchObject({ TEMPORAL_TLS_SERVER_NAME: 'temporal' });
  await sh('sh', ['-c', composeScript('temporal-namespace')], { env: cliEnv });
  const { stdout } = await sh(
    'temporal',
    ['operator', 'namespace', 'describe', '--namespace', 'default', '-o', 'json'],
    { env: cliEnv },
  );
  expect(JSON.parse(stdout)).toMatchObject({
    namespaceInfo: { name: 'default' },
    config: { workflowExecutionRetentionTtl: '259200s' },
  });
  // Run again: the namespace exists, the job still exits 0.
  await sh('sh', ['-c', composeScript('temporal-namespace')], { env: cliEnv });

  const uiPort = ports[10];
  const uiEnv: NodeJS.ProcessEnv = {
    ...composeEnv('temporal-ui'),
    PATH: process.env.PATH,
    TEMPORAL_ADDRESS: `localhost:${ports[0]}`,
    TEMPORAL_UI_PORT: String(uiPort),
    TEMPORAL_UI_TLS_DIR: path.dirname(secrets.caPath),
  };
  const ui = composeService('temporal-ui').entrypoint!.map((arg) =>
    arg === '/home/ui-server/ui-server'
      ? uiBinary
      : arg === '/etc/temporal-ui'
        ? path.dirname(productionFile('temporalUiConfig'))
        : arg,
  );
  const uiProcess = startService('temporal-ui', uiEnv, 'sh', ['-c', ui.map((a) => `'${a}'`).join(' ')]);
  await until(
    composeHealthCommand('temporal-ui').replace(':8080/', `:${uiPort}/`),
    uiEnv,
    uiProcess,
    'temporal-ui',
    60_000,
  );
  const namespaces = (await (await fetch(`http://127.0.0.1:${uiPort}/api/v1/namespaces`)).json()) as {
    namespaces: { namespaceInfo: { name: string } }[];
  };
  expect(namespaces.namespaces.map((n) => n.namespaceInfo.name)).toContain('default');
});

/**
 * Runs compose's health check of `service` (as the container would, with `env`) until it passes. Returns, for
 * each attempt that failed, what /healthz answered right after: a 503 there says the process served but was
 * not ready when the check failed.
 */
async function untilHealthy(name: string, service: string, env: NodeJS.ProcessEnv, app: ProcessGroup) {
  const deadline = Date.now() + 120_000;
  const failed: string[] = [];
  for (;;) {
    if (app.child.exitCode !== null) {
      const log = fs.readFileSync(path.join(secrets.dir, `${name}.log`), 'utf8');
      throw new Error(`${name} exited (${app.child.exitCode}): ${whyItStopped(log)}`);
    }
    try {
      await sh('sh', ['-c', composeHealthCommand(service)], { env });
      return failed;
    } catch {
      failed.push(
        await fetch(`http://127.0.0.1:${env.METRICS_PORT}/healthz`).then(
          async (res) => `${res.status} ${(await res.text()).trim()}`,
          (err: Error) => `no answer: ${err.message}`,
        ),
      );
    }
    if (Date.now() > deadline) throw new Error(`${name} not healthy within 120 s: ${failed.slice(-3).join(' | ')}`);
    await sleep(250);
  }
}

// Needs the server and the namespace of the test above.
test('`docker compose up -d` with a new BUILD_ID: N’s worker replaced by N+1’s, unhealthy until it polls, then deployment-current makes N+1 current and a cycle runs on it', async () => {
  if (!frontend) throw new Error('the temporal service did not start (the test above)');
  const n = `n-${crypto.randomBytes(3).toString('hex')}`;
  const next = `n1-${crypto.randomBytes(3).toString('hex')}`;
  jobServer = await startProductionPostgres(secrets, 'job');
  // The postgres image's initialisation creates POSTGRES_DB.
  const profileUrl = await createDatabase(jobServer.adminUrl, 'profile');
  await runApp('migrate', appEnv('migrate', n));

  /** The worker container of image `buildId`, on a /healthz port of its own (compose's is taken on a shared machine). */
  const startWorker = async (buildId: string) => {
    const [metricsPort] = await freePorts(1);
    const env = { ...appEnv('worker', buildId), METRICS_PORT: String(metricsPort) };
    return { env, worker: startService(`worker-${buildId}`, env, process.execPath, appArgs('worker')) };
  };

  // N, as the `up` before: worker healthy, then schedule-apply (the cycle's search attributes) and deployment-current.
  const before = await startWorker(n);
  await untilHealthy(`worker-${n}`, 'worker', before.env, before.worker);
  await runApp('schedule-apply', appEnv('schedule-apply', n));
  const madeN = JSON.parse(
    (await runApp('deployment-current', appEnv('deployment-current', n))).stdout,
  ) as RoutingChange;
  expect(madeN).toMatchObject({ current: n });

  // `up -d` with BUILD_ID=N+1: the one worker container is replaced in place, N's stopped before N+1's starts.
  before.worker.signal('SIGTERM');
  expect(await before.worker.exited).toBe(0);
  const after = await startWorker(next);
  const failed = await untilHealthy(`worker-${next}`, 'worker', after.env, after.worker);
  // Unhealthy while it served /healthz but did not poll yet; healthy once it polls, as its build.
  expect(failed).toContainEqual(expect.stringMatching(/^503 /));
  expect(fs.readFileSync(path.join(secrets.dir, `worker-${next}.log`), 'utf8')).toContain(`"buildId":"${next}"`);
  const made = JSON.parse(
    (await runApp('deployment-current', appEnv('deployment-current', next))).stdout,
  ) as RoutingChange;
  expect(made).toMatchObject({ previous: { current: n, ramping: null }, current: next });

  // docker compose run --rm client cycle run --wait: due documents of new owners, one reminder event each.
  const db = new pg.Client({ connectionString: profileUrl });
  await db.connect();
  try {
    const asOf = utcDate(new Date());
    const seeded = await insertDocuments(
      db,
      asOf,
      [30, 7, 1, 0, 3, 20].map((daysLeft) => ({ daysLeft })),
    );
    const run = JSON.parse(
      (await runApp('client', appEnv('client', next), ['cycle', 'run', '--wait', '--as-of', asOf])).stdout,
    ) as { workflowId: string; runId: string; result: CycleResult };
    expect(run.result).toMatchObject({ status: 'completed', ownersNotified: seeded.length });
    const rows = await outbox(db);
    expect(rows.map((r) => r.aggregate_id).sort()).toEqual(seeded.map((d) => d.ownerUserId).sort());
    expect(new Set(rows.map((r) => r.correlation_id))).toEqual(new Set([run.workflowId]));

    // Where it ran: every workflow task of its history on N+1.
    const pair = secrets.cert('client');
    const connection = await Connection.connect({
      address: frontend,
      tls: {
        serverNameOverride: 'temporal',
        serverRootCACertificate: fs.readFileSync(secrets.caPath),
        clientCertPair: { crt: fs.readFileSync(pair.cert), key: fs.readFileSync(pair.key) },
      },
    });
    try {
      const temporal = new Client({ connection, namespace: 'default' });
      const handle = Object.assign(temporal.workflow.getHandle(run.workflowId), { firstExecutionRunId: run.runId });
      expect((await placement(temporal, handle)).workflowTaskBuildIds).toEqual(new Set([next]));
    } finally {
      await connection.close();
    }
  } finally {
    await db.end();
    await after.worker.stop();
  }
});
