/** Least privilege (docs/DESIGN.md#roles) and migrations, checked against the real server. */
import { runMigrations } from '../../src/db/migrate';
import { insertDocuments } from '../support/data';
import { useIntegration } from '../support/harness';

const stack = useIntegration('roles', { resetEachTest: false, relayPoolSize: 2 });

beforeAll(async () => {
  await insertDocuments(stack.db.admin, '2026-09-02', [{ daysLeft: 7 }]);
});

const denied = expect.objectContaining({ code: '42501', message: expect.stringContaining('permission denied') });

test('the worker role gets permission denied reading payload_cipher', async () => {
  await expect(stack.db.worker.query('select payload_cipher from profile.person_documents')).rejects.toEqual(denied);
  await expect(stack.db.worker.query('select * from profile.person_documents')).rejects.toEqual(denied);
  const { rows } = await stack.db.worker.query(
    'select id, owner_user_id, type, number_mask, expires_at, status, is_deleted from profile.person_documents',
  );
  expect(rows).toHaveLength(1);
});

test('the worker role gets permission denied writing person_documents', async () => {
  await expect(stack.db.worker.query(`update profile.person_documents set status = 'Archived'`)).rejects.toEqual(
    denied,
  );
  await expect(stack.db.worker.query('delete from profile.person_documents')).rejects.toEqual(denied);
  await expect(
    stack.db.worker.query(
      `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, status, payload_cipher)
       values (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Inn', 'x', 'Active', '\\x00')`,
    ),
  ).rejects.toEqual(denied);
});

test('the worker role may insert into the outbox but not read or change it', async () => {
  await expect(stack.db.worker.query('select id from profile.outbox_messages')).rejects.toEqual(denied);
  await expect(stack.db.worker.query('update profile.outbox_messages set attempts = 1')).rejects.toEqual(denied);
});

test('the relay role touches only the outbox', async () => {
  await expect(stack.relayPool.query('select id from profile.person_documents')).rejects.toEqual(denied);
  await expect(stack.relayPool.query('select id from profile.document_expiry_reminders')).rejects.toEqual(denied);
  await expect(stack.relayPool.query('select id, published_at from profile.outbox_messages')).resolves.toBeDefined();
  await expect(stack.relayPool.query('update profile.outbox_messages set attempts = attempts')).resolves.toBeDefined();
});

test('re-running the migrations is a no-op', async () => {
  const snapshot = () =>
    stack.db.admin.query(`select indexname, indexdef from pg_indexes where schemaname = 'profile' order by indexname`);
  const before = (await snapshot()).rows;
  expect(before.map((r) => r.indexname)).toEqual(
    expect.arrayContaining([
      'ix_person_documents_expires_at',
      'ux_document_expiry_reminders_dedupe',
      'ix_document_expiry_reminders_owner',
      'ix_document_expiry_reminders_expires_at',
      'ix_outbox_messages_claimable',
    ]),
  );
  expect(await runMigrations({ connectionString: stack.db.ownerUrl })).toEqual([]);
  expect((await snapshot()).rows).toEqual(before);
});
