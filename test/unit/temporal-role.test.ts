/**
 * The statement that sets the Temporal server's role (src/db/temporal-role.ts, run by compose's
 * `temporal-db-role` and by the production stack's scripts/stack/temporal-server.ts): the password goes as a
 * SCRAM-SHA-256 verifier, never as itself. test/production/compose-jobs.test.ts reads the server's log for it.
 */
import { scramSha256Verifier } from '../../src/db/migrate';
import { temporalRoleStatement } from '../../src/db/temporal-role';

const PASSWORD = "it's-a-secret";
const SALT = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');

test('creates a missing role, alters an existing one: login, createdb, the verifier of the password with the salt given', () => {
  const verifier = scramSha256Verifier(PASSWORD, 4096, SALT);
  expect(temporalRoleStatement(false, PASSWORD, SALT)).toBe(
    `create role "temporal" login createdb password '${verifier}'`,
  );
  expect(temporalRoleStatement(true, PASSWORD, SALT)).toBe(
    `alter role "temporal" login createdb password '${verifier}'`,
  );
});

test('never holds the password, and salts anew each time unless told', () => {
  const statements = [temporalRoleStatement(false, PASSWORD), temporalRoleStatement(false, PASSWORD)];
  for (const statement of statements) {
    expect(statement).not.toContain(PASSWORD);
    expect(statement).toMatch(/password 'SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+'$/);
  }
  expect(statements[0]).not.toBe(statements[1]);
});
