/**
 * Migration 020: the ledger's and the outbox's ids are UUIDs of version 7 (RFC 9562), the time they were made
 * in their first 48 bits, so each insert adds its primary-key entry at the index's right edge. On
 * PostgreSQL 18 they come from uuidv7(); the portable body builds the same layout on older servers.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { remindOwnersInput, seedOwnersWithTwoDocuments } from '../support/data';
import { testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';
import { sleep } from '../support/wait';

const AS_OF_DATE = '2026-09-02';
const stack = useIntegration('time-ordered-ids');

/** What a version-7 UUID carries: its version, its variant bits and its time in ms since the epoch. */
function layout(id: string): { version: number; variant: number; ms: number } {
  const hex = id.replace(/-/g, '');
  return {
    version: parseInt(hex[12], 16),
    variant: parseInt(hex[16], 16) >> 2,
    ms: parseInt(hex.slice(0, 12), 16),
  };
}

const input = (ownerUserIds: string[], jobRunId: string) =>
  remindOwnersInput(ownerUserIds, AS_OF_DATE, { jobRunId, lastAttempt: 5 });

test("the owner transaction's markers and events get ids made at the claim, in the order of the claims", async () => {
  const activities = createActivities({
    pool: stack.db.worker,
    logger: pino({ level: 'silent' }),
    config: testConfig(),
  });
  const ids = async (correlationId: string) => {
    const { rows: events } = await stack.db.admin.query<{ id: string }>(
      'select id from profile.outbox_events where correlation_id = $1',
      [correlationId],
    );
    const { rows: marks } = await stack.db.admin.query<{ id: string }>(
      `select r.id from profile.document_expiry_reminders r
        where r.owner_user_id in (select aggregate_id from profile.outbox_events where correlation_id = $1)`,
      [correlationId],
    );
    return { events: events.map((r) => r.id), marks: marks.map((r) => r.id) };
  };

  const before = Date.now();
  await new MockActivityEnvironment().run(
    activities.remindOwners,
    input(await seedOwnersWithTwoDocuments(stack.db.admin, AS_OF_DATE, 3), 'first'),
  );
  await sleep(5);
  await new MockActivityEnvironment().run(
    activities.remindOwners,
    input(await seedOwnersWithTwoDocuments(stack.db.admin, AS_OF_DATE, 3), 'second'),
  );
  const after = Date.now();

  const first = await ids('first');
  const second = await ids('second');
  // Three owners, one event each; daysLeft 7 crosses 30 and 7, daysLeft 25 crosses 30: three markers each.
  expect([first.events.length, first.marks.length, second.events.length, second.marks.length]).toEqual([3, 9, 3, 9]);
  for (const id of [...first.events, ...first.marks, ...second.events, ...second.marks]) {
    const { version, variant, ms } = layout(id);
    expect({ id, version, variant }).toEqual({ id, version: 7, variant: 0b10 });
    // The server's clock is this machine's.
    expect(ms).toBeGreaterThanOrEqual(before - 1);
    expect(ms).toBeLessThanOrEqual(after + 1);
  }
  // A later claim's ids sort after an earlier one's, in both tables.
  const last = (xs: string[]) => [...xs].sort().at(-1)!;
  const firstOf = (xs: string[]) => [...xs].sort()[0];
  expect(firstOf(second.events) > last(first.events)).toBe(true);
  expect(firstOf(second.marks) > last(first.marks)).toBe(true);
});

test('the portable body (PostgreSQL before 18) makes the same layout, unique, ordered from one millisecond to the next', async () => {
  const made = async () => {
    const { rows } = await stack.db.worker.query<{ id: string }>(
      'select profile.uuid_v7_portable()::text as id from generate_series(1, 1000)',
    );
    return rows.map((r) => r.id);
  };
  const before = Date.now();
  const early = await made();
  await sleep(5);
  const late = await made();
  const after = Date.now();
  expect(new Set([...early, ...late]).size).toBe(2000);
  for (const id of [...early, ...late]) {
    const { version, variant, ms } = layout(id);
    expect({ id, version, variant }).toEqual({ id, version: 7, variant: 0b10 });
    expect(ms).toBeGreaterThanOrEqual(before - 1);
    expect(ms).toBeLessThanOrEqual(after + 1);
  }
  expect([...late].sort()[0] > [...early].sort().at(-1)!).toBe(true);
});

test("the worker's statements get the id expression itself: no function call per row", async () => {
  const { rows } = await stack.db.worker.query<{ 'QUERY PLAN': string }>(
    'explain (verbose) select profile.time_ordered_uuid() from generate_series(1, 3)',
  );
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
  expect(plan).not.toMatch(/time_ordered_uuid|uuid_v7_portable/);
  expect(plan).toMatch(/uuidv7\(\)|gen_random_uuid\(\)/);
});
