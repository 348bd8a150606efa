/**
 * The one way tests, the demo, the benchmark, the fault suite and the fixture recorder get a database: created on
 * the stack's server, migrated with the stack's role passwords, and dropped by the caller when done.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { runMigrations } from '../../src/db/migrate';
import { RELAY_ROLE, SUPPORT_ROLE, WORKER_ROLE } from '../../src/domain/names';
import { createDatabase, databaseUrl } from './postgres';

/** Passwords the local stack gives the job's roles (local only; production sets its own). */
export const LOCAL_ROLE_PASSWORDS = {
  worker: 'local-worker-password',
  relay: 'local-relay-password',
  support: 'local-support-password',
};

/** The passwords of the job's three roles. */
export interface RolePasswords {
  worker: string;
  relay: string;
  support: string;
}

/**
 * Passwords of the dev stack's own: its database's printed URLs carry them, so a guess at the well-known
 * {@link LOCAL_ROLE_PASSWORDS} does not open the database a person fills.
 */
export function randomRolePasswords(): RolePasswords {
  const random = () => crypto.randomBytes(18).toString('base64url');
  return { worker: random(), relay: random(), support: random() };
}

/**
 * The role passwords of the stack this process was pointed at: the production profile prints its own
 * per-stack ones as EXPIRY_REMINDER_WORKER_PASSWORD, OUTBOX_RELAY_PASSWORD and EXPIRY_REMINDER_SUPPORT_PASSWORD (the variables `migrate`
 * reads), and so does the dev stack with its own database (not the test harness's, `--json`, which prints
 * none: its tests use the local ones). Roles are the server's, not a database's:
 * a database migrated with other passwords would lock the stack's printed URLs out.
 */
export function stackRolePasswords(env: NodeJS.ProcessEnv = process.env): RolePasswords {
  return {
    worker: env.EXPIRY_REMINDER_WORKER_PASSWORD || LOCAL_ROLE_PASSWORDS.worker,
    relay: env.OUTBOX_RELAY_PASSWORD || LOCAL_ROLE_PASSWORDS.relay,
    support: env.EXPIRY_REMINDER_SUPPORT_PASSWORD || LOCAL_ROLE_PASSWORDS.support,
  };
}

export interface MigratedDatabase {
  name: string;
  /** The owner's URL (the admin of the server): seeds and inspects tables. */
  ownerUrl: string;
  /** As `expiry_reminder_worker`, the role the worker runs with. */
  workerUrl: string;
  /** As `outbox_relay`, the role the relay runs with. */
  relayUrl: string;
  /** As `expiry_reminder_support`, the role `explain` reads with (SUPPORT_DATABASE_URL). */
  supportUrl: string;
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
  /** Passwords set on (and put in the URLs of) the roles; default {@link stackRolePasswords}. */
  rolePasswords?: RolePasswords;
}

/** A database name from a label: lower case, `_` for anything else, and a random tail so runs never collide. */
function uniqueDatabaseName(prefix: string): string {
  return `${prefix.replace(/\W+/g, '_').toLowerCase()}_${crypto.randomBytes(4).toString('hex')}`;
}

/** Creates (and, unless told otherwise, migrates) a database on the server of `adminUrl`. */
export async function createMigratedDatabase(
  adminUrl: string,
  options: MigratedDatabaseOptions = {},
): Promise<MigratedDatabase> {
  const name = options.name ?? uniqueDatabaseName(options.prefix ?? 'db');
  const ownerUrl = await createDatabase(adminUrl, name, options.recreate);
  const passwords = options.rolePasswords ?? stackRolePasswords();
  let applied: string[] = [];
  try {
    if (options.migrate !== false) {
      applied = await runMigrations({ connectionString: ownerUrl, rolePasswords: passwords });
    }
  } catch (err) {
    // Half-migrated, it would only confuse the next run that finds it.
    await dropDatabase(adminUrl, name).catch(() => {});
    throw err;
  }
  return {
    name,
    ownerUrl,
    workerUrl: databaseUrl(ownerUrl, { user: WORKER_ROLE, password: passwords.worker }),
    relayUrl: databaseUrl(ownerUrl, { user: RELAY_ROLE, password: passwords.relay }),
    supportUrl: databaseUrl(ownerUrl, { user: SUPPORT_ROLE, password: passwords.support }),
    applied,
    drop: () => dropDatabase(adminUrl, name),
  };
}

/** Drops `name` on the server of `adminUrl`, forcing out sessions left by a killed worker. */
async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
  } finally {
    await client.end();
  }
}

/** The database whose URLs the stack prints (the production profile's, and the dev stack's for a person). */
export const STACK_DATABASE = 'expiry_reminder';

/**
 * Creates and migrates the stack's own database with the stack's role passwords, and returns the variables
 * the stack prints for it: the worker's, the relay's and the support role's URLs (in the production profile
 * verify-full, like the admin's they derive from) and the passwords, which `migrate` and the test helpers set
 * on the roles again.
 */
export async function stackDatabaseEnv(adminUrl: string, passwords: RolePasswords): Promise<Record<string, string>> {
  const db = await createMigratedDatabase(adminUrl, { name: STACK_DATABASE, rolePasswords: passwords });
  return {
    DATABASE_URL: db.workerUrl,
    RELAY_DATABASE_URL: db.relayUrl,
    SUPPORT_DATABASE_URL: db.supportUrl,
    EXPIRY_REMINDER_WORKER_PASSWORD: passwords.worker,
    OUTBOX_RELAY_PASSWORD: passwords.relay,
    EXPIRY_REMINDER_SUPPORT_PASSWORD: passwords.support,
  };
}
