/** Least privilege (docs/DESIGN.md#roles) and migrations, checked against the real server. */
import pg from 'pg';
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
  await expect(stack.db.worker.query('select id from profile.outbox_events')).rejects.toEqual(denied);
  await expect(stack.db.worker.query('select id from profile.outbox_events_pending')).rejects.toEqual(denied);
  await expect(stack.db.worker.query('delete from profile.outbox_events')).rejects.toEqual(denied);
  // The old outbox, which the previous release's workers write until they stop.
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
      'ix_outbox_messages_key',
    ]),
  );
  expect(await runMigrations({ connectionString: stack.db.ownerUrl })).toEqual([]);
  expect((await snapshot()).rows).toEqual(before);
});

describe('the support role (issue 38): reads what explain reads, writes nothing', () => {
  let support: pg.Pool;
  beforeAll(() => {
    support = new pg.Pool({ connectionString: stack.db.supportUrl, max: 1 });
  });
  afterAll(() => support.end());

  test('every insert, update, delete and truncate, on every table of the schema, is refused', async () => {
    const { rows: tables } = await stack.db.admin.query<{ name: string; col: string }>(
      `select format('%I.%I', table_schema, table_name) as name, format('%I', min(column_name)) as col
         from information_schema.columns c
        where table_schema = 'profile'
          -- Tables: a view of several tables (outbox_events_pending) refuses writes before it checks privileges.
          and exists (select 1 from information_schema.tables t
                       where t.table_schema = c.table_schema and t.table_name = c.table_name
                         and t.table_type = 'BASE TABLE')
        group by table_schema, table_name order by 1`,
    );
    expect(tables.map((t) => t.name)).toEqual(
      expect.arrayContaining(['profile.person_documents', 'profile.outbox_messages', 'profile.outbox_events']),
    );
    const allowed: string[] = [];
    for (const { name, col } of tables) {
      for (const sql of [
        `insert into ${name} default values`,
        `update ${name} set ${col} = ${col} where false`,
        `delete from ${name} where false`,
        `truncate ${name}`,
      ]) {
        const code = await support.query(sql).then(
          () => 'allowed',
          (err: { code?: string; message: string }) => err.code ?? err.message,
        );
        if (code !== '42501') allowed.push(`${sql}: ${code}`);
      }
    }
    expect(allowed).toEqual([]);
    await expect(support.query('create table profile.x (id int)')).rejects.toEqual(denied);
  });

  test('it reads no payload_cipher, and of the outbox only the columns explain prints', async () => {
    await expect(support.query('select payload_cipher from profile.person_documents')).rejects.toEqual(denied);
    await expect(support.query('select * from profile.person_documents')).rejects.toEqual(denied);
    await expect(support.query('select trace_context from profile.outbox_messages')).rejects.toEqual(denied);
    await expect(support.query('select trace_context from profile.outbox_events')).rejects.toEqual(denied);
    await expect(support.query('select id from profile.outbox_events_pending')).rejects.toEqual(denied);
    await expect(
      support.query(
        'select id, owner_user_id, type, number_mask, expires_at, status, is_deleted from profile.person_documents',
      ),
    ).resolves.toMatchObject({ rowCount: 1 });
  });
});

test("the job's functions (issue 47): each executable by the worker, whose statements call it, and by no other role", async () => {
  const { rows } = await stack.db.admin.query<{
    fn: string;
    worker: boolean;
    relay: boolean;
    support: boolean;
    public: boolean;
  }>(
    `select p.oid::regprocedure::text as fn,
            has_function_privilege('expiry_reminder_worker', p.oid, 'execute') as worker,
            has_function_privilege('outbox_relay', p.oid, 'execute') as relay,
            has_function_privilege('expiry_reminder_support', p.oid, 'execute') as support,
            coalesce(p.proacl::text like '%=X/%' and p.proacl::text ~ '(^|[{,])=', p.proacl is null) as public
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'profile' order by 1`,
  );
  // hold_claim_attempt (021) stays the worker's for the workers of the version before 024, until their cycles end.
  const called = [
    'profile.claim_attempt_lock_key(uuid,text)',
    'profile.end_support_lock_holders(bigint[])',
    'profile.enter_claim_attempt(uuid,text,integer)',
    'profile.hold_claim_attempt(uuid,text,integer)',
    'profile.raise_claim_attempt(uuid,text,integer)',
    'profile.time_ordered_uuid()',
    'profile.uuid_v7_portable()',
    'profile.wait_for_xact_locks(bigint[],integer)',
  ];
  expect(rows.map((r) => r.fn)).toEqual([...called, 'profile.outbox_messages_notify()'].sort());
  for (const r of rows) {
    expect([r.fn, r.worker, r.relay, r.support, r.public]).toEqual([r.fn, called.includes(r.fn), false, false, false]);
  }
  // So a support login cannot take owner locks through the job's function.
  const support = new pg.Pool({ connectionString: stack.db.supportUrl, max: 1 });
  try {
    await expect(support.query('select * from profile.wait_for_xact_locks(array[1::bigint], 0)')).rejects.toEqual(
      denied,
    );
  } finally {
    await support.end();
  }
});
