/**
 * The Temporal server's role on Temporal's own PostgreSQL cluster, created or given its rights and password
 * again: by compose's `temporal-db-role` job (src/temporal-db-role.ts) and by the production stack
 * (scripts/stack/temporal-server.ts). The password reaches the server only as a SCRAM-SHA-256 verifier computed
 * here, as `migrate` sets its roles' (src/db/migrate.ts): a plaintext `PASSWORD '…'` lands in the server log
 * wherever statements are logged, and with any error of the statement (`log_min_error_statement`).
 */
import pg from 'pg';
import { TEMPORAL_DB_ROLE } from '../domain/names';
import { scramSha256Verifier } from './migrate';

/**
 * The statement that creates the role (or, when it `exists`, alters it): it logs in, may create its two
 * databases, and has the verifier of `password`, salted with `salt` (random unless given, as PostgreSQL salts).
 */
export function temporalRoleStatement(
  exists: boolean,
  password: string,
  salt?: Parameters<typeof scramSha256Verifier>[2],
): string {
  const verifier = scramSha256Verifier(password, 4096, salt);
  // CREATE and ALTER ROLE take no bind parameters: the verifier goes in as a quoted literal.
  return `${exists ? 'alter' : 'create'} role ${pg.escapeIdentifier(TEMPORAL_DB_ROLE)} login createdb password ${pg.escapeLiteral(verifier)}`;
}

/** Creates the role or alters the existing one ({@link temporalRoleStatement}); says which it did. */
export async function ensureTemporalRole(client: pg.ClientBase, password: string): Promise<'created' | 'altered'> {
  const found = await client.query('select 1 from pg_roles where rolname = $1', [TEMPORAL_DB_ROLE]);
  const exists = (found.rowCount ?? 0) > 0;
  await client.query(temporalRoleStatement(exists, password));
  return exists ? 'altered' : 'created';
}
