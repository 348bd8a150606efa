/**
 * The claim's plan must not depend on how fresh the outbox's statistics are. A queue's statistics are
 * wrong most of the time: autoanalyze runs when the outbox is nearly empty (the relay keeps it so), and a
 * cycle then writes a day's events in minutes. With statistics saying "a few unpublished rows", the
 * planner once checked per-key order by scanning every unpublished row for each row of the batch: 12.7 s
 * a claim at the end of a 500,000-event cycle (bench/REPORT-HISTORY.md, "Relay").
 */
import crypto from 'node:crypto';
import { explainClaim, pinClaimPlan } from '../../src/db/outbox';
import { withTransaction } from '../../src/db/pool';
import { useIntegration } from '../support/harness';

const stack = useIntegration('relay-claim-plan');

/** Inserts `rows` unpublished outbox rows, every tenth owner with two (so per-key order has work to do). */
async function insertRows(rows: number): Promise<void> {
  await stack.db.admin.query(
    `insert into profile.outbox_messages
            (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
             correlation_id, created_at)
     select gen_random_uuid(), 'person', o.owner, 'profile.document-expiry-reminder', o.owner::text,
            'DocumentExpiryReminder', 1, '{}'::jsonb, 'plan-test', clock_timestamp()
       from (select md5((case when n % 10 = 0 then n - 1 else n end)::text || $2)::uuid as owner
               from generate_series(1, $1::int) as n) o`,
    [rows, crypto.randomUUID()],
  );
}

/** The plan of the relay's claim in the relay's transaction settings. */
function claimPlan(): Promise<string> {
  return withTransaction(stack.db.admin, async (tx) => {
    await pinClaimPlan(tx);
    return explainClaim(tx, 1000);
  });
}

/** The order check looks each batch row's key up in the key index, and the parked keys in theirs. */
function expectStablePlan(plan: string): void {
  expect(plan).toMatch(/Index (Only )?Scan using ix_outbox_messages_unpublished_key on outbox_messages e\b/);
  expect(plan).toMatch(
    /Index Cond: \(\(message_key = \(b\.message_key\)::text\) AND \(ROW\(created_at, id\) < ROW\(b\.created_at, b\.id\)\)\)/,
  );
  expect(plan).toMatch(/Scan using ix_outbox_messages_parked on outbox_messages/);
  expect(plan).not.toMatch(/Seq Scan/);
}

test('statistics taken when nearly everything was published, then a cycle writes 20,000 rows', async () => {
  await insertRows(20_000);
  await stack.db.admin.query(
    `update profile.outbox_messages set published_at = now()
      where id not in (select id from profile.outbox_messages order by created_at limit 5)`,
  );
  await stack.db.admin.query('vacuum analyze profile.outbox_messages');
  await insertRows(20_000);
  expectStablePlan(await claimPlan());
});

test('statistics of an empty outbox, then 20,000 rows', async () => {
  await stack.db.admin.query('truncate profile.outbox_messages');
  await stack.db.admin.query('vacuum analyze profile.outbox_messages');
  await insertRows(20_000);
  expectStablePlan(await claimPlan());
});

test('fresh statistics of 20,000 unpublished rows', async () => {
  await stack.db.admin.query('truncate profile.outbox_messages');
  await insertRows(20_000);
  await stack.db.admin.query('analyze profile.outbox_messages');
  expectStablePlan(await claimPlan());
});
