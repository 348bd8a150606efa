/** The database going away under a transaction: an error for that transaction, never a crashed process. */
import { withTransaction } from '../../src/db/pool';
import { useIntegration } from '../support/harness';
import { sleep } from '../support/wait';

const stack = useIntegration('db-resilience', { resetEachTest: false });

test('a server connection lost between two statements of a transaction rejects it and the pool recovers', async () => {
  // Found by the fault suite: a PostgreSQL restart mid-cycle killed the worker with an unhandled 'error' event.
  const attempt = withTransaction(stack.db.worker, async (tx) => {
    const { rows } = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
    await stack.db.admin.query('select pg_terminate_backend($1)', [rows[0].pid]);
    await sleep(300);
    await tx.query('select 1');
  });

  await expect(attempt).rejects.toThrow();
  const { rows } = await stack.db.worker.query('select 1 as ok');
  expect(rows).toEqual([{ ok: 1 }]);
});

test('every pooled connection terminated at once, busy or idle, fails only the statements in flight', async () => {
  // The fault suite's PostgreSQL restart: a client whose server sends FATAL after its query already
  // failed (or while it idles) must not take the process down with an unheard 'error' event.
  await Promise.all(Array.from({ length: 6 }, () => stack.db.worker.query('select 1')));
  const busy = Array.from({ length: 4 }, () =>
    stack.db.worker.query('select pg_sleep(5)').then(
      () => 'done',
      (e: Error) => e.message,
    ),
  );
  await sleep(200);
  await stack.db.admin.query(
    `select pg_terminate_backend(pid) from pg_stat_activity where usename = 'expiry_reminder_worker' and datname = current_database()`,
  );

  expect(await Promise.all(busy)).toEqual(Array(4).fill(expect.stringMatching(/terminat/)));
  await sleep(300);
  const { rows } = await stack.db.worker.query('select 1 as ok');
  expect(rows).toEqual([{ ok: 1 }]);
});
