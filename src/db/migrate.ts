/** Numbered SQL migrations (`migrations/NNN_name.sql`), applied once each under an advisory lock. */
import path from 'node:path';
import pg from 'pg';
import { migrate } from 'postgres-migrations';
import { RELAY_ROLE, WORKER_ROLE } from '../domain/names';
import { connectionOptions } from './pool';

/** Where the numbered `.sql` files live (the same from `src/` under tsx and from `dist/`). */
export const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'migrations');

export interface MigrateOptions {
  /** Owner connection: creates schema, tables and roles. */
  connectionString: string;
  /** Set these passwords on the roles (idempotent); leave unset where passwords are managed elsewhere. */
  rolePasswords?: { worker?: string; relay?: string };
  log?: (message: string) => void;
}

/**
 * Applies every migration not applied yet; re-running is a no-op. A migration file edited after it was
 * applied is refused (its hash changed) rather than silently skipped.
 * @returns the names of the migrations this call applied.
 */
export async function runMigrations(options: MigrateOptions): Promise<string[]> {
  const client = new pg.Client({ connectionString: options.connectionString, options: connectionOptions() });
  client.on('error', (err) => options.log?.(`migration connection error: ${err.message}`));
  await client.connect();
  try {
    const applied = await migrate({ client }, MIGRATIONS_DIR);
    for (const [role, password] of [
      [WORKER_ROLE, options.rolePasswords?.worker],
      [RELAY_ROLE, options.rolePasswords?.relay],
    ] as const) {
      if (password) {
        // ALTER ROLE takes no bind parameters; quote_literal does the escaping server-side.
        const { rows } = await client.query<{ sql: string }>(
          `select format('alter role %I password %L', $1::text, $2::text) as sql`,
          [role, password],
        );
        await client.query(rows[0].sql);
      }
    }
    // Id 0 is the library's own bookkeeping table.
    return applied.filter((m) => m.id !== 0).map((m) => m.fileName);
  } finally {
    await client.end();
  }
}
