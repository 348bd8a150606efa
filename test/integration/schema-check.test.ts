/** The worker's start-up check of the schema it needs, against real databases. */
import { createPool } from '../../src/db/pool';
import { workerSchemaProblems } from '../../src/db/schema-check';
import { createMigratedDatabase } from '../../scripts/stack/database';
import { useIntegration } from '../support/harness';

const stack = useIntegration('schema-check', { resetEachTest: false });

test('a migrated database passes the check', async () => {
  expect(await workerSchemaProblems(stack.db.worker)).toEqual([]);
});

test('a database without the schema is refused, naming what is missing', async () => {
  const empty = await createMigratedDatabase(process.env.STACK_DATABASE_ADMIN_URL!, {
    prefix: 't_empty',
    migrate: false,
  });
  const pool = createPool({ connectionString: empty.workerUrl, max: 1 });
  try {
    const problems = await workerSchemaProblems(pool);
    expect(problems.join('\n')).toMatch(/profile\.person_documents: .*does not exist/);
    expect(problems.join('\n')).toMatch(/ux_document_expiry_reminders_dedupe/);
  } finally {
    await pool.end();
    await empty.drop();
  }
});

test('a schema that lost the dedupe index is refused: reminders could repeat', async () => {
  await stack.db.admin.query('drop index profile.ux_document_expiry_reminders_dedupe');
  try {
    expect(await workerSchemaProblems(stack.db.worker)).toEqual([
      expect.stringContaining(
        'the unique index ux_document_expiry_reminders_dedupe (document_id, threshold_days) is missing',
      ),
    ]);
  } finally {
    await stack.db.admin.query(
      'create unique index ux_document_expiry_reminders_dedupe on profile.document_expiry_reminders (document_id, threshold_days)',
    );
  }
});
