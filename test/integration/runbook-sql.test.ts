/**
 * The SQL the runbooks give the on-call engineer runs on the schema the migrations build: every statement of
 * every `sql` block, as admin (several read `pg_stat_activity` and `pg_locks`, which need it), each in a
 * transaction rolled back. A statement with a placeholder (`<pid>`) is for a person to fill in and is left out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { useIntegration } from '../support/harness';

const stack = useIntegration('runbook-sql');

const RUNBOOKS = ['docs/runbooks/outbox-backlog.md', 'docs/runbooks/document-expiry-reminder.md'];

/** The statements of a Markdown file's `sql` blocks, comments dropped, split at a `;` that ends a line. */
function statementsOf(file: string): string[] {
  const text = fs.readFileSync(path.resolve(__dirname, '..', '..', file), 'utf8');
  const blocks = [...text.matchAll(/^ *```sql\n([^]*?)^ *```/gm)].map((m) => m[1]);
  return blocks
    .flatMap((block) => block.split(/;\s*$/m))
    .map((s) => s.replace(/--.*$/gm, '').trim())
    .filter((s) => s !== '' && !/<[a-z_ ]+>/i.test(s));
}

describe.each(RUNBOOKS)('%s', (file) => {
  const statements = statementsOf(file);

  test('has SQL to run', () => {
    expect(statements.length).toBeGreaterThan(0);
  });

  test.each(statements.map((s) => [s.split('\n')[0], s]))('%s', async (_first, sql) => {
    const client = await stack.db.admin.connect();
    try {
      await client.query('begin');
      await expect(client.query(sql)).resolves.toBeDefined();
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});
