/** Numbered SQL migrations (`migrations/NNN_name.sql`), applied once each under an advisory lock. */
import crypto from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { migrate } from 'postgres-migrations';
import { RELAY_ROLE, SUPPORT_ROLE, WORKER_ROLE } from '../domain/names';
import { explainingClient } from './connection-errors';
import { connectionOptions } from './pool';

/** Where the numbered `.sql` files live (the same from `src/` under tsx and from `dist/`). */
const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'migrations');

export interface MigrateOptions {
  /** Owner connection: creates schema, tables and roles. */
  connectionString: string;
  /** Set these passwords on the roles (idempotent); leave unset where passwords are managed elsewhere. */
  rolePasswords?: { worker?: string; relay?: string; support?: string };
  log?: (message: string) => void;
}

/**
 * Applies every migration not applied yet; re-running is a no-op. A migration file edited after it was
 * applied is refused (its hash changed) rather than silently skipped.
 * @returns the names of the migrations this call applied.
 */
export async function runMigrations(options: MigrateOptions): Promise<string[]> {
  const Client = explainingClient('MIGRATION_DATABASE_URL (or DATABASE_URL)');
  const client = new Client({ connectionString: options.connectionString, options: connectionOptions() });
  client.on('error', (err) => options.log?.(`migration connection error: ${err.message}`));
  await client.connect();
  try {
    const applied = await migrate({ client }, MIGRATIONS_DIR);
    for (const [role, password] of [
      [WORKER_ROLE, options.rolePasswords?.worker],
      [RELAY_ROLE, options.rolePasswords?.relay],
      [SUPPORT_ROLE, options.rolePasswords?.support],
    ] as const) {
      if (password) await setRolePassword(client, role, password);
    }
    // Id 0 is the library's own bookkeeping table.
    return applied.filter((m) => m.id !== 0).map((m) => m.fileName);
  } finally {
    await client.end();
  }
}

/**
 * Sets a role's password as a SCRAM-SHA-256 verifier computed here, so the password itself never reaches
 * the server: a plaintext `ALTER ROLE … PASSWORD '…'` lands in the server log wherever statements are
 * logged (`log_statement = ddl` or `all`), the verifier is what PostgreSQL would store anyway.
 */
export async function setRolePassword(client: pg.ClientBase, role: string, password: string): Promise<void> {
  // ALTER ROLE takes no bind parameters; format() quotes server-side.
  const { rows } = await client.query<{ sql: string }>(
    `select format('alter role %I password %L', $1::text, $2::text) as sql`,
    [role, scramSha256Verifier(password)],
  );
  await client.query(rows[0].sql);
}

/** RFC 4013 "commonly mapped to nothing" code points, which SASLprep removes. */
const MAPPED_TO_NOTHING = /[\u00AD\u034F\u1806\u180B-\u180D\u200B-\u200D\u2060\uFE00-\uFE0F\uFEFF]/g;
/** Non-ASCII spaces, which SASLprep maps to U+0020. */
const NON_ASCII_SPACE = /[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/g;

/**
 * The SCRAM-SHA-256 verifier of `password` as PostgreSQL stores it (RFC 5802, RFC 7677):
 * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64. The password is prepared as the server
 * prepares it (SASLprep: an ASCII password as is, any other mapped and NFKC-normalised), so the role logs
 * in with what was configured.
 */
export function scramSha256Verifier(password: string, iterations = 4096, salt = crypto.randomBytes(16)): string {
  const prepared = /^[\x00-\x7f]*$/.test(password)
    ? password
    : password.replace(MAPPED_TO_NOTHING, '').replace(NON_ASCII_SPACE, ' ').normalize('NFKC');
  const salted = crypto.pbkdf2Sync(Buffer.from(prepared, 'utf8'), salt, iterations, 32, 'sha256');
  const hmac = (key: Buffer, text: string) => crypto.createHmac('sha256', key).update(text).digest();
  const storedKey = crypto.createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
