/** The database going away under a transaction: an error for that transaction, never a crashed process. */
import { withTransaction } from '../../src/db/pool';
import { createTestDatabase, type TestDatabase } from '../support/stack';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('db-resilience');
});
afterAll(async () => {
  await db?.close();
});

test('a server connection lost between two statements of a transaction rejects it and the pool recovers', async () => {
  // Found by the fault suite: a PostgreSQL restart mid-cycle killed the worker with an unhandled 'error' event.
  const attempt = withTransaction(db.worker, async (tx) => {
    const { rows } = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
    await db.admin.query('select pg_terminate_backend($1)', [rows[0].pid]);
    await new Promise((r) => setTimeout(r, 300));
    await tx.query('select 1');
  });

  await expect(attempt).rejects.toThrow();
  const { rows } = await db.worker.query('select 1 as ok');
  expect(rows).toEqual([{ ok: 1 }]);
});

test('every pooled connection terminated at once, busy or idle, fails only the statements in flight', async () => {
  // The fault suite's PostgreSQL restart: a client whose server sends FATAL after its query already
  // failed (or while it idles) must not take the process down with an unheard 'error' event.
  await Promise.all(Array.from({ length: 6 }, () => db.worker.query('select 1')));
  const busy = Array.from({ length: 4 }, () =>
    db.worker.query('select pg_sleep(5)').then(
      () => 'done',
      (e: Error) => e.message,
    ),
  );
  await new Promise((r) => setTimeout(r, 200));
  await db.admin.query(
    `select pg_terminate_backend(pid) from pg_stat_activity where usename = 'expiry_reminder_worker' and datname = current_database()`,
  );

  expect(await Promise.all(busy)).toEqual(Array(4).fill(expect.stringMatching(/terminat/)));
  await new Promise((r) => setTimeout(r, 300));
  const { rows } = await db.worker.query('select 1 as ok');
  expect(rows).toEqual([{ ok: 1 }]);
});
