/**
 * docker-compose.yml's certificates job and its Temporal services, as the file holds them, run against the
 * production profile's PostgreSQL (ops/postgres, TLS and SCRAM only): the certificates, the Temporal role
 * and schema, the server from its start script, the namespace job and the Web UI. No Docker engine runs
 * here, so compose never runs as a whole; the binaries the stack builds stand in for the images', and this
 * machine's host names, ports and paths for the containers'.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { spawnGroup, type ProcessGroup } from '../../scripts/process-group';
import { productionFile } from '../../scripts/stack/production-files';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { findOrBuildTemporalCli } from '../../scripts/stack/temporal-cli';
import {
  findOrBuildTemporalServer,
  findOrBuildTemporalUi,
  freePorts,
  TEMPORAL_DB_ROLE,
} from '../../scripts/stack/temporal-server';
import { composeEnv, composeHealthCommand, composeScript, composeService } from '../support/compose';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';

jest.setTimeout(300_000);

let secrets: StackSecrets;
let server: ProductionPostgres;
let port: string;
let toolDir: string;
let uiBinary: string;
const services: ProcessGroup[] = [];
const sh = promisify(execFile);

/** Starts a long-running service's script, its output into `<name>.log` of the stack folder. */
function startService(name: string, script: string, env: NodeJS.ProcessEnv): ProcessGroup {
  const out = fs.openSync(path.join(secrets.dir, `${name}.log`), 'a');
  // A group of its own: the script's shell does not exec the server, so stopping the shell alone would not do.
  const service = spawnGroup('sh', ['-c', script], { env, stdio: ['ignore', out, out] });
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

/** `script` with the containers' host name and CA path replaced by this machine's. */
function onThisMachine(script: string): string {
  return script
    .replaceAll('host=temporal-postgres ', `host=localhost port=${port} `)
    .replaceAll('/certs/ca.pem', secrets.caPath);
}

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
  return execFileSync('bash', ['-c', onThisMachine(composeScript('temporal-db-role'))], {
    env: {
      PATH: process.env.PATH,
      PGPASSWORD: secrets.passwords.temporalPostgresAdmin,
      TEMPORAL_DB_PASSWORD: password,
    },
    encoding: 'utf8',
  });
}

beforeAll(async () => {
  secrets = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-')));
  // Temporal's own cluster, as compose's `temporal-postgres`.
  server = await startProductionPostgres(secrets, 'temporal');
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
  await server?.stop();
  if (secrets) fs.rmSync(secrets.dir, { recursive: true, force: true });
});

test('temporal-db-role creates the Temporal role with TEMPORAL_DB_PASSWORD, which then logs in over TLS; run again, it changes the password', async () => {
  expect(runTemporalDbRole('first-password')).toContain('CREATE ROLE');
  expect(await loginAsTemporal('first-password')).toEqual({ ssl: true });
  expect(runTemporalDbRole(secrets.passwords.temporal)).toContain('ALTER ROLE');
  expect(await loginAsTemporal(secrets.passwords.temporal)).toEqual({ ssl: true });
  await expect(loginAsTemporal('first-password')).rejects.toThrow(/password authentication failed/);
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
  const temporal = startService('temporal', script, env);
  await until(composeHealthCommand('temporal').replace(':8000/', `:${ports[9]}/`), env, temporal, 'temporal');

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
  const uiProcess = startService('temporal-ui', ui.map((a) => `'${a}'`).join(' '), uiEnv);
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
