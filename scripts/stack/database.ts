/**
 * The one way tests, the demo, the benchmark, the fault suite and the fixture recorder get a database: created on
 * the local server, migrated with the local role passwords, and dropped by the caller when done.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { runMigrations } from '../../src/db/migrate';
import { RELAY_ROLE, WORKER_ROLE } from '../../src/domain/names';
import { createDatabase, databaseUrl } from './postgres';

/** Passwords the local stack gives the two roles (local only; production sets its own). */
export const LOCAL_ROLE_PASSWORDS = { worker: 'local-worker-password', relay: 'local-relay-password' };

export interface MigratedDatabase {
  name: string;
  /** The owner's URL (the admin of the server): seeds and inspects tables. */
  ownerUrl: string;
  /** As `expiry_reminder_worker`, the role the worker runs with. */
  workerUrl: string;
  /** As `outbox_relay`, the role the relay runs with. */
  relayUrl: string;
  /** Migrations this call applied (all of them, unless the database existed and `recreate` was off). */
  applied: string[];
  /** Drops the database, ending any session still in it. */
  drop(): Promise<void>;
}

export interface MigratedDatabaseOptions {
  /** The database name; default `<prefix>_<random>`. */
  name?: string;
  /** Prefix of a generated name (letters, digits and `_` are kept). */
  prefix?: string;
  /** Drop a database of that name first (the demo reuses one name). */
  recreate?: boolean;
  /** Skip the migrations: a database without the schema, for the checks that must refuse it. */
  migrate?: boolean;
}

/** A database name from a label: lower case, `_` for anything else, and a random tail so runs never collide. */
export function uniqueDatabaseName(prefix: string): string {
  return `${prefix.replace(/\W+/g, '_').toLowerCase()}_${crypto.randomBytes(4).toString('hex')}`;
}

/** Creates (and, unless told otherwise, migrates) a database on the server of `adminUrl`. */
export async function createMigratedDatabase(
  adminUrl: string,
  options: MigratedDatabaseOptions = {},
): Promise<MigratedDatabase> {
  const name = options.name ?? uniqueDatabaseName(options.prefix ?? 'db');
  const ownerUrl = await createDatabase(adminUrl, name, options.recreate);
  let applied: string[] = [];
  try {
    if (options.migrate !== false) {
      applied = await runMigrations({ connectionString: ownerUrl, rolePasswords: LOCAL_ROLE_PASSWORDS });
    }
  } catch (err) {
    // Half-migrated, it would only confuse the next run that finds it.
    await dropDatabase(adminUrl, name).catch(() => {});
    throw err;
  }
  return {
    name,
    ownerUrl,
    workerUrl: databaseUrl(ownerUrl, { user: WORKER_ROLE, password: LOCAL_ROLE_PASSWORDS.worker }),
    relayUrl: databaseUrl(ownerUrl, { user: RELAY_ROLE, password: LOCAL_ROLE_PASSWORDS.relay }),
    applied,
    drop: () => dropDatabase(adminUrl, name),
  };
}

/** Drops `name` on the server of `adminUrl`, forcing out sessions left by a killed worker. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
  } finally {
    await client.end();
  }
}
