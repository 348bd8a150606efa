/** The worker's start-up check of the schema it needs, against real databases. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { selectCandidatePage } from '../../src/db/candidates';
import { runMigrations } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { relaySchemaProblems, workerSchemaProblems } from '../../src/db/schema-check';
import { LOCAL_ROLE_PASSWORDS, createMigratedDatabase } from '../../scripts/stack/database';
import { useIntegration } from '../support/harness';

const stack = useIntegration('schema-check', { resetEachTest: false, relayPoolSize: 1 });

type UnmigratedDatabase = Awaited<ReturnType<typeof createMigratedDatabase>>;

/** Runs `check` on a database of its own with no migrations applied (a worker pool on it), then drops it. */
async function withUnmigrated(prefix: string, check: (pool: pg.Pool, db: UnmigratedDatabase) => Promise<void>) {
  const db = await createMigratedDatabase(process.env.STACK_DATABASE_ADMIN_URL!, { prefix, migrate: false });
  const pool = createPool({ connectionString: db.workerUrl, max: 1 });
  try {
    await check(pool, db);
  } finally {
    await pool.end();
    await db.drop();
  }
}

/** What `read` finds with the file's database changed by `change` (as its admin); `undo` then restores it. */
async function whileChanged<T>(change: string, undo: string, read: () => Promise<T>): Promise<T> {
  await stack.db.admin.query(change);
  try {
    return await read();
  } finally {
    await stack.db.admin.query(undo);
  }
}

test('a migrated database passes the check', async () => {
  expect(await workerSchemaProblems(stack.db.worker)).toEqual([]);
});

test('a database without the schema is refused, naming what is missing', async () => {
  await withUnmigrated('t_empty', async (pool) => {
    const problems = await workerSchemaProblems(pool);
    expect(problems.join('\n')).toMatch(/profile\.person_documents: .*does not exist/);
    expect(problems.join('\n')).toMatch(/ux_document_expiry_reminders_dedupe/);
  });
});

test('a schema that lost the dedupe index is refused: reminders could repeat', async () => {
  const problems = await whileChanged(
    'drop index profile.ux_document_expiry_reminders_dedupe',
    'create unique index ux_document_expiry_reminders_dedupe on profile.document_expiry_reminders (document_id, threshold_days)',
    () => workerSchemaProblems(stack.db.worker),
  );
  expect(problems).toEqual([
    'profile.document_expiry_reminders: the index ux_document_expiry_reminders_dedupe must be unique btree (document_id, threshold_days) on every row; without it reminders could repeat. It is missing',
  ]);
});

test('a dedupe index that is unique only where a predicate holds is refused: the other rows could repeat', async () => {
  const problems = await whileChanged(
    `drop index profile.ux_document_expiry_reminders_dedupe;
     create unique index ux_document_expiry_reminders_dedupe on profile.document_expiry_reminders (document_id, threshold_days) where threshold_days > 0`,
    `drop index profile.ux_document_expiry_reminders_dedupe;
     create unique index ux_document_expiry_reminders_dedupe on profile.document_expiry_reminders (document_id, threshold_days)`,
    () => workerSchemaProblems(stack.db.worker),
  );
  expect(problems).toEqual([
    expect.stringMatching(
      /ux_document_expiry_reminders_dedupe must be unique btree .*\. Found unique btree \(document_id, threshold_days\) on profile\.document_expiry_reminders where threshold_days > 0$/,
    ),
  ]);
});

test("a database without migration 019's lock function is refused, naming the migration; one the worker may not execute too", async () => {
  const restore = readFileSync(path.join(__dirname, '../../migrations/019_owner_lock_wait.sql'), 'utf8');
  const missing = await whileChanged('drop function profile.wait_for_xact_locks(bigint[], integer)', restore, () =>
    workerSchemaProblems(stack.db.worker),
  );
  expect(missing).toEqual([
    'profile.wait_for_xact_locks(bigint[], integer) is missing: run the migrations (019 creates it)',
  ]);
  const refused = await whileChanged(
    'revoke execute on function profile.wait_for_xact_locks(bigint[], integer) from public',
    'grant execute on function profile.wait_for_xact_locks(bigint[], integer) to public',
    () => workerSchemaProblems(stack.db.worker),
  );
  expect(refused).toEqual(["profile.wait_for_xact_locks(bigint[], integer): the worker's role may not execute it"]);
});

test("a database without migration 020's id function is refused, naming the migration; one the worker may not execute too", async () => {
  const restore = readFileSync(path.join(__dirname, '../../migrations/020_time_ordered_ids.sql'), 'utf8');
  const missing = await whileChanged('drop function profile.time_ordered_uuid()', restore, () =>
    workerSchemaProblems(stack.db.worker),
  );
  expect(missing).toEqual(['profile.time_ordered_uuid() is missing: run the migrations (020 creates it)']);
  const refused = await whileChanged(
    'revoke execute on function profile.time_ordered_uuid() from public, expiry_reminder_worker',
    'grant execute on function profile.time_ordered_uuid() to public, expiry_reminder_worker',
    () => workerSchemaProblems(stack.db.worker),
  );
  expect(refused).toEqual(["profile.time_ordered_uuid(): the worker's role may not execute it"]);
});

test("a database without migration 024's attempt guard is refused, naming the migration: the worker's claims hold it", async () => {
  const restore = readFileSync(path.join(__dirname, '../../migrations/024_claim_attempt_without_xid.sql'), 'utf8');
  const missing = await whileChanged(
    `drop function profile.enter_claim_attempt(uuid, text, integer);
     drop function profile.raise_claim_attempt(uuid, text, integer)`,
    restore,
    () => workerSchemaProblems(stack.db.worker),
  );
  expect(missing).toEqual([
    'profile.enter_claim_attempt(uuid, text, integer) is missing: run the migrations (024 creates it)',
    'profile.raise_claim_attempt(uuid, text, integer) is missing: run the migrations (024 creates it)',
  ]);
});

/** Issue 28, item 1.5: the page plan's index, as the profile service may have made it before migration 001. */
describe('the page index ix_person_documents_expires_at', () => {
  const restore = `drop index profile.ix_person_documents_expires_at;
    create index ix_person_documents_expires_at on profile.person_documents (expires_at, id) where expires_at is not null`;
  const withIndex = (definition: string) =>
    whileChanged(`drop index profile.ix_person_documents_expires_at; ${definition}`, restore, () =>
      workerSchemaProblems(stack.db.worker),
    );
  const need =
    'profile.person_documents: the index ix_person_documents_expires_at must be btree (expires_at, id), on every row or where expires_at is not null';

  test.each([
    [
      'on expires_at alone',
      'create index ix_person_documents_expires_at on profile.person_documents (expires_at)',
      'Found btree (expires_at) on profile.person_documents',
    ],
    [
      'on (id, expires_at)',
      'create index ix_person_documents_expires_at on profile.person_documents (id, expires_at)',
      'Found btree (id, expires_at) on profile.person_documents',
    ],
    [
      'descending',
      'create index ix_person_documents_expires_at on profile.person_documents (expires_at desc, id)',
      'Found btree (expires_at DESC, id) on profile.person_documents',
    ],
    [
      'partial on active documents only',
      "create index ix_person_documents_expires_at on profile.person_documents (expires_at, id) where status = 'Active'",
      "Found btree (expires_at, id) on profile.person_documents where status::text = 'Active'::text",
    ],
    [
      'a hash index',
      'create index ix_person_documents_expires_at on profile.person_documents using hash (expires_at)',
      'Found hash (expires_at) on profile.person_documents',
    ],
  ])('of another shape (%s) is refused, naming the shape it needs and the one found', async (_, definition, found) => {
    const problems = await withIndex(definition);
    expect(problems).toEqual([expect.stringContaining(need)]);
    expect(problems[0]).toContain(found);
    expect(problems[0]).toContain('sorts the whole window for every page');
  });

  test('missing is refused', async () => {
    const problems = await whileChanged(
      'drop index profile.ix_person_documents_expires_at',
      restore.split(';')[1],
      () => workerSchemaProblems(stack.db.worker),
    );
    expect(problems).toEqual([expect.stringMatching(/must be btree \(expires_at, id\).*It is missing$/)]);
  });

  test('invalid (a failed concurrent build) is refused: the planner never uses it', async () => {
    const problems = await whileChanged(
      `update pg_index set indisvalid = false where indexrelid = 'profile.ix_person_documents_expires_at'::regclass`,
      `update pg_index set indisvalid = true where indexrelid = 'profile.ix_person_documents_expires_at'::regclass`,
      () => workerSchemaProblems(stack.db.worker),
    );
    expect(problems).toEqual([expect.stringMatching(/It is invalid .*drop and create it again$/)]);
  });

  test("the mirror: the same columns on every row (no predicate) are accepted, as is the migration's own", async () => {
    expect(
      await withIndex('create index ix_person_documents_expires_at on profile.person_documents (expires_at, id)'),
    ).toEqual([]);
    expect(await workerSchemaProblems(stack.db.worker)).toEqual([]);
  });
});

test('a profile table whose expires_at is a timestamptz and whose ids are text is refused, naming table, column, the type expected and the type found', async () => {
  // The profile service created its table before this job's migrations: 001 leaves it as it is.
  await withUnmigrated('t_types', async (pool, db) => {
    const owner = new pg.Client({ connectionString: db.ownerUrl });
    await owner.connect();
    await owner.query(`create schema profile;
      create table profile.person_documents (
        id uuid primary key, owner_user_id varchar(64) not null, person_id uuid not null, type varchar(32) not null,
        number_mask varchar(64) not null, expires_at timestamptz null, status varchar(16) not null,
        is_deleted boolean not null default false, payload_cipher bytea not null,
        created_at timestamptz not null default now(), updated_at timestamptz not null default now())`);
    await owner.end();
    await runMigrations({ connectionString: db.ownerUrl, rolePasswords: LOCAL_ROLE_PASSWORDS });

    expect(await workerSchemaProblems(pool)).toEqual([
      "profile.person_documents.owner_user_id: expected type uuid, found character varying; the job's statements rely on it",
      "profile.person_documents.expires_at: expected type date, found timestamp with time zone; the job's statements rely on it",
    ]);
    // What the check spares the worker: every scan fails.
    await expect(
      selectCandidatePage(pool, { asOfDate: '2026-09-02', thresholdsDays: [30, 7, 1, 0], retentionDays: 90 }, null, 10),
    ).rejects.toThrow(/operator does not exist: interval - integer/);
  });
});

test('a worker that may not insert into the insert-only outbox (migration 025) is refused, naming the table', async () => {
  const problems = await whileChanged(
    'revoke insert on profile.outbox_events from expiry_reminder_worker',
    'grant insert on profile.outbox_events to expiry_reminder_worker',
    () => workerSchemaProblems(stack.db.worker),
  );
  expect(problems).toEqual([expect.stringMatching(/^profile\.outbox_events: missing or not writable columns id, /)]);
});

test('a relay without the view of unpublished events (migration 026) is refused, naming it', async () => {
  const problems = await whileChanged(
    'revoke select on profile.outbox_events_pending from outbox_relay',
    'grant select on profile.outbox_events_pending to outbox_relay',
    () => relaySchemaProblems(stack.relayPool),
  );
  expect(problems).toEqual([expect.stringMatching(/^profile\.outbox_events_pending: permission denied/)]);
});

test('an outbox whose created_at lost its time zone is refused by the relay check, naming the type found', async () => {
  const problems = await whileChanged(
    'alter table profile.outbox_messages alter column created_at type timestamp',
    'alter table profile.outbox_messages alter column created_at type timestamptz',
    () => relaySchemaProblems(stack.db.admin),
  );
  expect(problems).toEqual([
    "profile.outbox_messages.created_at: expected type timestamp with time zone, found timestamp without time zone; the job's statements rely on it",
  ]);
});
