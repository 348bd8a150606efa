/**
 * The production profile's Temporal: the real server (`go.temporal.io/server`, not the dev server) with
 * persistence and visibility on PostgreSQL and mTLS on the frontend, and the Web UI server beside it.
 * Both run the configuration files under `ops/` (the ones compose mounts), with paths, ports and
 * passwords passed as environment variables. The binaries are built with Go on first use and cached.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import pg from 'pg';
import { ensureSearchAttributes } from '../../src/operations/schedule';
import { spawnGroup, type ProcessGroup } from '../process-group';
import { cacheDir } from './cache';
import { productionFile } from './production-files';
import type { StackSecrets } from './secrets';
import { errorOf } from '../../src/domain/failures';
import { TEMPORAL_DB_ROLE } from '../../src/domain/names';
import { ensureTemporalRole } from '../../src/db/temporal-role';

/** The server version the CLI v1.5.1 dev server embeds; its go.mod has no `replace`, so `go install` builds it. */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
/** The newest Web UI server whose dependencies the Go module proxy serves. */
const TEMPORAL_UI_VERSION = 'v2.54.1';
const SERVER_MODULE = 'go.temporal.io/server';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';
/** The Go module of the profile's server program (a `main` around the server's library). */
export const SERVER_SOURCE = path.resolve(__dirname, '..', '..', 'ops', 'temporal', 'server');

/** Passed as `--config` with `--env config`: the server and the UI load `<dir>/config.yaml`. */
const TEMPORAL_CONFIG_DIR = path.dirname(productionFile('temporalConfig'));
const TEMPORAL_UI_CONFIG_DIR = path.dirname(productionFile('temporalUiConfig'));
const DYNAMIC_CONFIG_FILE = productionFile('temporalDynamicConfig');

/** The databases of the server's two stores and the folder of their schema under `schema/postgresql/v12`. */
const STORES = [
  { database: 'temporal', schema: 'temporal' },
  { database: 'temporal_visibility', schema: 'visibility' },
] as const;

export interface TemporalServerBinaries {
  server: string;
  /** The SQL schema tool (`temporal-sql-tool`). */
  sql: string;
  /** The module's `schema/postgresql/v12`, copied next to the binaries. */
  schemaDir: string;
}

type Log = (line: string) => void;

function goEnv(name: string): string {
  const res = spawnSync('go', ['env', name], { encoding: 'utf8' });
  if (res.error || res.status !== 0) {
    throw new Error(
      `the production profile builds the Temporal server and UI with Go, and \`go env ${name}\` failed ` +
        `(${res.error?.message ?? res.stderr.trim()}); install Go 1.25 or newer`,
    );
  }
  return res.stdout.trim().split(path.delimiter)[0];
}

/** Runs `go <args>` (in `cwd`), printing a line every 30 s so a first build does not look hung. */
async function goBuild(
  what: string,
  args: string[],
  options: { cwd?: string; gobin?: string },
  log: Log,
): Promise<void> {
  // Says "install Go" rather than "spawn go ENOENT" on a machine without it.
  goEnv('GOVERSION');
  const started = Date.now();
  log(`building ${what} with go ${args[0]} (first run only; minutes on a small machine)`);
  const child = spawn('go', args, {
    cwd: options.cwd,
    env: { ...process.env, ...(options.gobin ? { GOBIN: options.gobin } : {}) },
    // stdout belongs to the caller (`npm run stack` prints only export lines there).
    stdio: ['ignore', process.stderr, 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    process.stderr.write(chunk);
  });
  const ticker = setInterval(
    () => log(`  still building ${what} (${Math.round((Date.now() - started) / 1000)} s)`),
    30_000,
  );
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) {
      throw new Error(
        `go ${args[0]} ${what} failed (exit ${code}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`,
      );
    }
  } finally {
    clearInterval(ticker);
  }
  log(`built ${what} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** `go install pkg` into `gobin`. */
const goInstall = (pkg: string, gobin: string, log: Log) => goBuild(pkg, ['install', pkg], { gobin }, log);

/**
 * The profile's own server program (`ops/temporal/server`: the server of {@link TEMPORAL_SERVER_VERSION} with
 * an authorizer that reads `ops/temporal/identities.yaml`), built into `dir` under a name that changes with
 * its source, so an edit rebuilds it and an unchanged one is reused.
 */
async function findOrBuildAuthorizingServer(dir: string, log: Log): Promise<string> {
  const hash = crypto.createHash('sha256');
  const walk = (folder: string) => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (/\.go$|^go\.(mod|sum)$/.test(entry.name))
        hash.update(`${path.relative(SERVER_SOURCE, file)}\0`).update(fs.readFileSync(file));
    }
  };
  walk(SERVER_SOURCE);
  const binary = path.join(dir, `server-authz-${hash.digest('hex').slice(0, 12)}`);
  if (isFile(binary)) return binary;
  // Built aside and renamed into place, so a second stack starting meanwhile never runs half a binary.
  const staging = `${binary}.${process.pid}`;
  await goBuild('ops/temporal/server', ['build', '-buildvcs=false', '-o', staging, '.'], { cwd: SERVER_SOURCE }, log);
  fs.renameSync(staging, binary);
  return binary;
}

const isFile = (file: string) => fs.existsSync(file) && fs.statSync(file).isFile();

/** Copies a read-only tree of the module cache, leaving the copy writable (so a cache clean can delete it). */
function copyWritable(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) copyWritable(src, dst);
    else fs.writeFileSync(dst, fs.readFileSync(src), { mode: 0o644 });
  }
}

/**
 * The server (the profile's own program around the server library: `ops/temporal/server`) and SQL tool
 * binaries and the PostgreSQL schema, built (and cached under `cacheDir('temporal-server-1.29.1')`) on first use.
 */
export async function findOrBuildTemporalServer(log: Log = () => {}): Promise<TemporalServerBinaries> {
  const dir = cacheDir(`temporal-server-${TEMPORAL_SERVER_VERSION.slice(1)}`);
  fs.mkdirSync(dir, { recursive: true });
  const binaries = {
    server: await findOrBuildAuthorizingServer(dir, log),
    sql: path.join(dir, 'sql'),
    schemaDir: path.join(dir, 'schema', 'postgresql', 'v12'),
  };
  const done = path.join(binaries.schemaDir, '.complete');
  if (isFile(binaries.server) && isFile(binaries.sql) && fs.existsSync(done)) return binaries;
  fs.mkdirSync(dir, { recursive: true });
  if (!isFile(binaries.sql)) await goInstall(`${SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`, dir, log);
  const moduleSchema = path.join(
    goEnv('GOMODCACHE'),
    `${SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`,
    'schema',
    'postgresql',
    'v12',
  );
  if (!fs.existsSync(moduleSchema)) {
    throw new Error(`the Temporal server built, but its module has no schema at ${moduleSchema}`);
  }
  // Copied aside and renamed into place, so a second stack starting meanwhile never sees half a schema.
  const staging = `${binaries.schemaDir}.${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  copyWritable(moduleSchema, staging);
  fs.writeFileSync(path.join(staging, '.complete'), `${new Date().toISOString()}\n`);
  fs.rmSync(binaries.schemaDir, { recursive: true, force: true });
  try {
    fs.renameSync(staging, binaries.schemaDir);
  } catch (err) {
    // Another process put its copy there first.
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(done)) throw err;
  }
  return binaries;
}

/** The Web UI server binary, built (and cached under `cacheDir('temporal-ui-server-2.54.1')`) on first use. */
export async function findOrBuildTemporalUi(log: Log = () => {}): Promise<string> {
  const dir = cacheDir(`temporal-ui-server-${TEMPORAL_UI_VERSION.slice(1)}`);
  const binary = path.join(dir, 'server');
  if (!isFile(binary)) await goInstall(`${UI_MODULE}/cmd/server@${TEMPORAL_UI_VERSION}`, dir, log);
  return binary;
}

/** Where the Temporal server finds its PostgreSQL, as the `temporal` role. */
export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Verify the server's certificate against this CA (`sslmode=verify-full`); plaintext when unset. */
  tls?: { caFile: string };
}

function sqlToolEnv(db: TemporalDatabase, database: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: db.host,
    SQL_PORT: String(db.port),
    SQL_USER: db.user,
    // In the environment, not on the command line, where `ps` would show it.
    SQL_PASSWORD: db.password,
    SQL_DATABASE: database,
    ...(db.tls ? { SQL_TLS: 'true', SQL_TLS_CA_FILE: db.tls.caFile } : {}),
  };
}

function runSqlTool(binaries: TemporalServerBinaries, db: TemporalDatabase, database: string, args: string[]): void {
  const res = spawnSync(binaries.sql, args, { env: sqlToolEnv(db, database), encoding: 'utf8' });
  if (res.status !== 0) {
    const out = `${res.stdout}\n${res.stderr}`.trim().split('\n').slice(-5).join(' | ');
    throw new Error(`temporal-sql-tool ${args[0]} on ${database} failed (exit ${res.status}): ${out}`);
  }
}

/**
 * Creates the `temporal` role (as the admin of `adminUrl`), then the two databases with the server's SQL
 * tool as that role, and applies the schema: `create`, `setup-schema -v 0.0`, `update-schema -d …/versioned`.
 * Idempotent: an existing database keeps its data and only gets the updates it lacks.
 */
async function prepareTemporalDatabases(options: {
  adminUrl: string;
  password: string;
  binaries: TemporalServerBinaries;
  tls?: TemporalDatabase['tls'];
  log?: Log;
}): Promise<TemporalDatabase> {
  const log = options.log ?? (() => {});
  const url = new URL(options.adminUrl);
  const db: TemporalDatabase = {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: TEMPORAL_DB_ROLE,
    password: options.password,
    tls: options.tls,
  };
  const admin = new pg.Client({ connectionString: options.adminUrl });
  await admin.connect();
  try {
    // As compose's `temporal-db-role` does it: the password leaves as a SCRAM verifier.
    await ensureTemporalRole(admin, options.password);
    for (const store of STORES) {
      const found = await admin.query('select 1 from pg_database where datname = $1', [store.database]);
      if (found.rowCount === 0) runSqlTool(options.binaries, db, store.database, ['create-database']);
      const hasVersion = await tableExists(options.adminUrl, store.database, 'schema_version');
      if (!hasVersion) runSqlTool(options.binaries, db, store.database, ['setup-schema', '-v', '0.0']);
      runSqlTool(options.binaries, db, store.database, [
        'update-schema',
        '-d',
        path.join(options.binaries.schemaDir, store.schema, 'versioned'),
      ]);
      log(`Temporal store ${store.database}: schema up to date`);
    }
  } finally {
    await admin.end();
  }
  return db;
}

async function tableExists(adminUrl: string, database: string, table: string): Promise<boolean> {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const res = await client.query<{ found: string | null }>('select to_regclass($1)::text as found', [table]);
    return res.rows[0]?.found !== null;
  } finally {
    await client.end();
  }
}

/** A server in a process group of its own, its output appended to `logFile`. */
function startService(binary: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): ProcessGroup {
  const out = fs.openSync(logFile, 'a');
  const service = spawnGroup(binary, args, { env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  return service;
}

/** The last lines of a service's log, JSON lines shortened to level, message and error (no stack traces). */
function logTail(logFile: string, lines = 5): string {
  let text: string;
  try {
    text = fs.readFileSync(logFile, 'utf8');
  } catch {
    return '(no log)';
  }
  return text
    .trim()
    .split('\n')
    .slice(-lines)
    .map((line) => {
      try {
        const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string };
        return `${entry.level}: ${entry.msg}${entry.error ? ` (${entry.error})` : ''}`;
      } catch {
        return line;
      }
    })
    .join('\n');
}

/** True when `port` can be bound on loopback right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * `count` distinct free loopback ports below 32768: the server records each service's gRPC port in
 * `cluster_membership.rpc_port`, a smallint, and the kernel's ephemeral ports lie above that range.
 */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = 20_000 + crypto.randomInt(12_000);
    if (await bindable(port)) ports.add(port);
  }
  return [...ports];
}

/**
 * The name the frontend's certificate is checked against: its `temporal` certificate names `temporal`
 * (the compose service), localhost and 127.0.0.1. By name rather than IP, as the services among themselves
 * and compose do (and Node warns about a TLS server name that is an IP address).
 */
const TEMPORAL_TLS_SERVER_NAME = 'temporal';

/** The mTLS settings of a Temporal client holding the certificate `name` of the stack. */
function temporalClientTls(secrets: StackSecrets, name: 'worker' | 'client' | 'cli' | 'ui-client') {
  const pair = secrets.cert(name);
  return {
    serverNameOverride: TEMPORAL_TLS_SERVER_NAME,
    serverRootCACertificate: fs.readFileSync(secrets.caPath),
    clientCertPair: { crt: fs.readFileSync(pair.cert), key: fs.readFileSync(pair.key) },
  };
}

async function until<T>(
  what: string,
  deadlineMs: number,
  attempt: () => Promise<T>,
  gone?: () => string | undefined,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: Error | undefined;
  for (;;) {
    const died = gone?.();
    if (died) throw new Error(`${what}: ${died}`);
    try {
      return await attempt();
    } catch (err) {
      last = errorOf(err);
    }
    if (Date.now() > deadline) throw new Error(`${what} within ${deadlineMs / 1000} s: ${last?.message}`);
    await sleep(500);
  }
}

interface TemporalServer {
  /** The frontend's gRPC address (mTLS). */
  address: string;
  namespace: string;
  logFile: string;
  /** Stops the server, waits `downMs`, starts it again on the same ports; its state is in PostgreSQL. */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

interface TemporalServerOptions {
  binaries: TemporalServerBinaries;
  db: TemporalDatabase;
  secrets: StackSecrets;
  /** Namespace to create (with the cycle's search attributes) if missing. */
  namespace?: string;
  log?: Log;
}

/**
 * Starts the server with `ops/temporal/config.yaml`, waits until its frontend answers over mTLS, and
 * creates the namespace with the cycle's search attributes when missing (the server, unlike the dev
 * server, creates none).
 */
async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServer> {
  const log = options.log ?? (() => {});
  const namespace = options.namespace ?? 'default';
  const [
    frontend,
    frontendHttp,
    frontendMember,
    history,
    historyMember,
    matching,
    matchingMember,
    worker,
    workerMember,
    metrics,
  ] = await freePorts(10);
  const address = `127.0.0.1:${frontend}`;
  const logFile = path.join(options.secrets.dir, 'temporal-server.log');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    TEMPORAL_LOG_LEVEL: 'warn',
    TEMPORAL_DB_HOST: options.db.host,
    TEMPORAL_DB_PORT: String(options.db.port),
    TEMPORAL_DB_USER: options.db.user,
    TEMPORAL_DB_PASSWORD: options.db.password,
    ...(options.db.tls ? { TEMPORAL_DB_TLS: 'true', TEMPORAL_DB_TLS_CA_FILE: options.db.tls.caFile } : {}),
    TEMPORAL_TLS_DIR: path.dirname(options.secrets.caPath),
    TEMPORAL_BIND_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    TEMPORAL_FRONTEND_PORT: String(frontend),
    TEMPORAL_FRONTEND_HTTP_PORT: String(frontendHttp),
    TEMPORAL_FRONTEND_MEMBERSHIP_PORT: String(frontendMember),
    TEMPORAL_HISTORY_PORT: String(history),
    TEMPORAL_HISTORY_MEMBERSHIP_PORT: String(historyMember),
    TEMPORAL_MATCHING_PORT: String(matching),
    TEMPORAL_MATCHING_MEMBERSHIP_PORT: String(matchingMember),
    TEMPORAL_WORKER_PORT: String(worker),
    TEMPORAL_WORKER_MEMBERSHIP_PORT: String(workerMember),
    TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${metrics}`,
    TEMPORAL_DYNAMIC_CONFIG_FILE: DYNAMIC_CONFIG_FILE,
    // The namespace whose roles ops/temporal/identities.yaml grants.
    TEMPORAL_NAMESPACE: namespace,
  };
  const args = ['--root', '/', '--config', TEMPORAL_CONFIG_DIR, '--env', 'config', 'start'];
  // The stack's own start registers the namespace and its search attributes: an operator's job.
  const tls = temporalClientTls(options.secrets, 'client');

  const launch = async (): Promise<ProcessGroup> => {
    const started = Date.now();
    const service = startService(options.binaries.server, args, env, logFile);
    let exitCode: number | null | undefined;
    void service.exited.then((code) => (exitCode = code));
    const gone = () =>
      exitCode !== undefined
        ? `the server exited (code ${exitCode}); its log ${logFile} ends with:\n${logTail(logFile)}`
        : undefined;
    try {
      const connection = await until(
        `the Temporal server did not answer over mTLS on ${address}`,
        120_000,
        async () => {
          const conn = await Connection.connect({ address, tls, connectTimeout: 2_000 });
          try {
            await conn.workflowService.getSystemInfo({});
            return conn;
          } catch (err) {
            await conn.close();
            throw err;
          }
        },
        gone,
      );
      try {
        await ensureNamespace(connection, namespace, log, gone);
      } finally {
        await connection.close();
      }
    } catch (err) {
      await service.stop();
      throw err;
    }
    log(
      `Temporal server ${TEMPORAL_SERVER_VERSION} on ${address} (mTLS) ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    return service;
  };

  let service = await launch();
  return {
    address,
    namespace,
    logFile,
    restart: async (downMs) => {
      await service.stop();
      await sleep(downMs);
      service = await launch();
    },
    stop: () => service.stop(),
  };
}

/** Registers `namespace` unless it exists, then its search attributes, waiting until both are served. */
async function ensureNamespace(connection: Connection, namespace: string, log: Log, gone: () => string | undefined) {
  const service = connection.workflowService;
  try {
    await service.describeNamespace({ namespace });
  } catch {
    try {
      await service.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('3 days'),
      });
      log(`registered namespace ${namespace}`);
    } catch (err) {
      if (!/already exists|ALREADY_EXISTS/i.test(errorOf(err).message)) throw err;
    }
  }
  // A new namespace reaches the frontend's cache some seconds after it is registered.
  await until(
    `namespace ${namespace} did not become available`,
    60_000,
    () => service.describeNamespace({ namespace }),
    gone,
  );
  const client = new Client({ connection, namespace });
  const added = await until(
    `the search attributes of namespace ${namespace} could not be registered`,
    60_000,
    () => ensureSearchAttributes(client, namespace),
    gone,
  );
  if (added.length > 0) log(`registered search attributes ${added.join(', ')} in ${namespace}`);
}

interface TemporalUi {
  url: string;
  logFile: string;
  stop(): Promise<void>;
}

/** Starts the Web UI server with `ops/temporal-ui/config.yaml` and waits until it lists namespaces. */
async function startTemporalUi(options: {
  binary: string;
  address: string;
  secrets: StackSecrets;
  namespace?: string;
  log?: Log;
}): Promise<TemporalUi> {
  const [port] = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  const logFile = path.join(options.secrets.dir, 'temporal-ui.log');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    TEMPORAL_ADDRESS: options.address,
    TEMPORAL_NAMESPACE: options.namespace ?? 'default',
    TEMPORAL_UI_HOST: '127.0.0.1',
    TEMPORAL_UI_PORT: String(port),
    TEMPORAL_UI_ORIGIN: url,
    TEMPORAL_UI_TLS_DIR: path.dirname(options.secrets.caPath),
  };
  const service = startService(
    options.binary,
    ['--root', '/', '--config', TEMPORAL_UI_CONFIG_DIR, '--env', 'config', 'start'],
    env,
    logFile,
  );
  let exitCode: number | null | undefined;
  void service.exited.then((code) => (exitCode = code));
  try {
    await until(
      `the Temporal Web UI did not list namespaces on ${url}`,
      60_000,
      async () => {
        const res = await fetch(`${url}/api/v1/namespaces`, { signal: AbortSignal.timeout(5_000) });
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
      },
      () => (exitCode !== undefined ? `the UI server exited (code ${exitCode}): ${logTail(logFile)}` : undefined),
    );
  } catch (err) {
    await service.stop();
    throw err;
  }
  options.log?.(`Temporal Web UI ${TEMPORAL_UI_VERSION} on ${url}`);
  return { url, logFile, stop: () => service.stop() };
}

export interface ProductionTemporal {
  address: string;
  namespace: string;
  uiUrl?: string;
  /**
   * What points a process at this Temporal: the standard `TEMPORAL_*` variables, which this job
   * (`@temporalio/envconfig`) and the `temporal` CLI both read, with the `client` certificate (the
   * operator's `npm run client`: schedules, cycles, search attributes); and the CLI's own
   * `TEMPORAL_TLS_CERT`/`_KEY`/`_CA`, which only the CLI reads and which override the standard ones there,
   * so the CLI connects as `cli`.
   */
  env: Record<string, string>;
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The production profile's Temporal on the PostgreSQL of `adminUrl`: builds what is missing, prepares the
 * stores, starts the server and (unless `ui` is false) the Web UI. On a failure stops what it started.
 */
export async function startProductionTemporal(options: {
  adminUrl: string;
  secrets: StackSecrets;
  ui?: boolean;
  dbTls?: TemporalDatabase['tls'];
  log?: Log;
}): Promise<ProductionTemporal> {
  const { secrets } = options;
  const binaries = await findOrBuildTemporalServer(options.log);
  const uiBinary = options.ui === false ? undefined : await findOrBuildTemporalUi(options.log);
  const db = await prepareTemporalDatabases({
    adminUrl: options.adminUrl,
    password: secrets.passwords.temporal,
    binaries,
    tls: options.dbTls,
    log: options.log,
  });
  const server = await startTemporalServer({ binaries, db, secrets, log: options.log });
  let ui: TemporalUi | undefined;
  try {
    if (uiBinary) {
      ui = await startTemporalUi({ binary: uiBinary, address: server.address, secrets, log: options.log });
    }
  } catch (err) {
    await server.stop();
    throw err;
  }
  const client = secrets.cert('client');
  const cli = secrets.cert('cli');
  return {
    address: server.address,
    namespace: server.namespace,
    uiUrl: ui?.url,
    env: {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: server.namespace,
      TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: client.key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: secrets.caPath,
      TEMPORAL_TLS_SERVER_NAME: TEMPORAL_TLS_SERVER_NAME,
      TEMPORAL_TLS_CERT: cli.cert,
      TEMPORAL_TLS_KEY: cli.key,
      TEMPORAL_TLS_CA: secrets.caPath,
      ...(ui ? { TEMPORAL_UI_URL: ui.url } : {}),
    },
    restart: server.restart,
    stop: async () => {
      await ui?.stop();
      await server.stop();
    },
  };
}
