/**
 * A claim transaction takes its owners' locks before its first write (migration 024), so that its transaction
 * id, which PostgreSQL assigns at the first write, orders it after every transaction that held one of its owners
 * before it: read in transaction-id order, an owner's events come in the order their transactions committed.
 * Probed on a real PostgreSQL: the backends' `backend_xid` before each claim statement and while one waits for
 * a busy owner, the owner locks held at the page record's insert, and the ids of two transactions meeting on
 * one owner.
 */
import crypto from 'node:crypto';
import type pg from 'pg';
import pino from 'pino';
import { createActivities, type ClaimPageInput, type ClaimPageResult } from '../../src/activities';
import { holdAttemptSql, raiseAttempt } from '../../src/activities/claim/sql/attempts';
import { lockFreeOwners } from '../../src/activities/claim/sql/lock-owners';
import { WORKER_ROLE } from '../../src/domain/names';
import { insertDocuments, outbox } from '../support/data';
import { observedPool, runActivity } from '../support/claims';
import { testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';
import { eventually, sleep } from '../support/wait';

const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('claim-write-order');

/**
 * Probes in a schema of the test database: at each insert into the scan positions, the owner locks (bigint
 * advisory keys) the inserting backend holds; at each outbox insert, its transaction id.
 */
beforeAll(async () => {
  await stack.db.admin.query(`
    create schema probe;
    create table probe.page_records (owner_locks int not null);
    create table probe.outbox_writes (owner_user_id uuid not null, xid xid8 not null);
    create function probe.page_record() returns trigger language plpgsql security definer as $$
    begin
      insert into probe.page_records
      select count(*) from pg_locks
       where locktype = 'advisory' and objsubid = 1 and granted and pid = pg_backend_pid();
      return new;
    end $$;
    create function probe.outbox_write() returns trigger language plpgsql security definer as $$
    begin
      insert into probe.outbox_writes values (new.aggregate_id, pg_current_xact_id());
      return new;
    end $$;
    create trigger probe_page_record before insert on profile.document_expiry_reminder_scan_positions
      for each row execute function probe.page_record();
    create trigger probe_outbox_write before insert on profile.outbox_events
      for each row execute function probe.outbox_write();`);
});

beforeEach(async () => {
  await stack.db.admin.query(`truncate probe.page_records, probe.outbox_writes`);
});

function input(ownerConcurrency: number): ClaimPageInput {
  return {
    window: { asOfDate: AS_OF_DATE, thresholdsDays: [30, 7, 1, 0], retentionDays: 90 },
    cycleId: crypto.randomUUID(),
    jobRunId: 'claim-write-order-test',
    page: 1,
    batchSize: 50,
    partition: { index: 0, count: 1 },
    asOf: `${AS_OF_DATE}T03:00:00.000Z`,
    ownerConcurrency,
    lastAttempt: 10,
    pages: 1,
  };
}

const claimPage = (pool: pg.Pool, request: ClaimPageInput): Promise<ClaimPageResult> =>
  runActivity(createActivities({ pool, logger: pino({ level: 'silent' }), config: testConfig() }).claimPage, request, {
    attempt: 1,
    activityId: 'claim-1',
    workflowExecution: { workflowId: 'claim-write-order', runId: crypto.randomUUID() },
  });

/** The transaction ids of the worker role's backends in an open transaction, seen from another session. */
async function workerXids(): Promise<(string | null)[]> {
  const { rows } = await stack.db.admin.query<{ xid: string | null }>(
    `select backend_xid::text as xid from pg_stat_activity
      where datname = current_database() and usename = $1 and state like 'idle in transaction%'`,
    [WORKER_ROLE],
  );
  return rows.map((r) => r.xid);
}

/** Owners with one document due in 5 days each. */
async function seedOwners(n: number): Promise<string[]> {
  const owners = Array.from({ length: n }, () => crypto.randomUUID());
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    owners.map((ownerUserId) => ({ ownerUserId, daysLeft: 5 })),
  );
  return owners;
}

test('no claim transaction has a transaction id before its claim statement: the page statement, its groups and the second try of a busy owner', async () => {
  const owners = await seedOwners(7);
  // One owner busy at the page's first try and free a moment later: the second try claims it.
  const holder = await stack.db.admin.connect();
  await holder.query('begin');
  expect(await lockFreeOwners(holder, [owners[3]])).toEqual([owners[3]]);
  setTimeout(() => void holder.query('rollback').finally(() => holder.release()), 300);

  const seen: { statement: string; xids: (string | null)[] }[] = [];
  const pool = observedPool(stack.db.worker, async (text) => {
    const statement = /^\s*with page as materialized/.test(text)
      ? 'page'
      : /^with locked as/.test(text)
        ? 'claim'
        : undefined;
    if (statement) seen.push({ statement, xids: await workerXids() });
  });
  // Two owners a transaction: the page's first two, then groups of two; the busy one in a second try.
  const result = await claimPage(pool, input(2));

  expect(result).toEqual(
    expect.objectContaining({ documentCount: 7, ownersProcessed: 7, ownersFoundBusy: 1, remindersSent: 7 }),
  );
  expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual([...owners].sort());
  // The page statement, then a claim for the page's first transaction, three groups, and the second try.
  expect(seen.map((s) => s.statement)).toEqual(['page', 'claim', 'claim', 'claim', 'claim', 'claim']);
  // Each transaction has no id until its first write: the page's record (after its locks, next test) is the first
  // transaction's, so its claim follows an id; every other transaction's first write is its claim.
  expect(seen.map((s) => s.xids)).toEqual([[null], [expect.any(String)], [null], [null], [null], [null]]);
});

test("the page statement takes its first owners' locks before it records the page, its transaction's first write", async () => {
  await seedOwners(5);
  const result = await claimPage(stack.db.worker, input(500));
  expect(result).toEqual(expect.objectContaining({ ownersProcessed: 5, remindersSent: 5 }));
  const { rows } = await stack.db.admin.query<{ owner_locks: number }>('select owner_locks from probe.page_records');
  expect(rows).toEqual([{ owner_locks: 5 }]);
});

test("a claim that waits for a busy owner is ordered after the transaction it waited for: by transaction id, the owner's events are in commit order", async () => {
  const [owner] = await seedOwners(1);
  // Another claimer (a twin cycle) holds the owner; the page's first try finds it busy, its second try waits.
  const holder = await stack.db.admin.connect();
  try {
    await holder.query('begin');
    expect(await lockFreeOwners(holder, [owner])).toEqual([owner]);
    const claiming = claimPage(stack.db.worker, input(500));
    const waiting = await eventually(async () => {
      const { rows } = await stack.db.admin.query<{ xid: string | null }>(
        `select backend_xid::text as xid from pg_stat_activity
          where datname = current_database() and usename = $1 and wait_event = 'advisory'`,
        [WORKER_ROLE],
      );
      return rows[0];
    }, 'the claim waiting for the owner');
    // Waiting for the owner, the claim has written nothing, so it has no id yet.
    expect(waiting.xid).toBeNull();
    // The holder writes (its id comes now, after the waiting claim began) and commits first.
    const { rows } = await holder.query<{ xid: string }>('select pg_current_xact_id()::text as xid');
    await holder.query('commit');
    const result = await claiming;
    expect(result).toEqual(expect.objectContaining({ ownersProcessed: 1, remindersSent: 1 }));
    const writes = await stack.db.admin.query<{ xid: string }>(
      'select xid::text as xid from probe.outbox_writes where owner_user_id = $1',
      [owner],
    );
    expect(writes.rows).toHaveLength(1);
    // Committed second, so its id is the greater one.
    expect(BigInt(writes.rows[0].xid)).toBeGreaterThan(BigInt(rows[0].xid));
  } finally {
    holder.release();
  }
});

test('a cycle moved forward between versions: the new raise waits for an open transaction of an attempt that holds its row the way 021 did (FOR SHARE), which then fails its next transaction', async () => {
  const key = { cycleId: crypto.randomUUID(), queuedBy: 'run-moved/claim-1', attempt: 1 };
  expect(await raiseAttempt(stack.db.worker, key)).toBe(true);
  const old = await stack.db.worker.connect();
  try {
    await old.query('begin');
    await old.query('select profile.hold_claim_attempt($1, $2, 1)', [key.cycleId, key.queuedBy]);
    let settled = false;
    const raising = raiseAttempt(stack.db.worker, { ...key, attempt: 2 }).finally(() => (settled = true));
    await sleep(300);
    expect(settled).toBe(false);
    await old.query('commit');
    expect(await raising).toBe(true);
    await old.query('begin');
    await expect(old.query(holdAttemptSql(key))).rejects.toEqual(expect.objectContaining({ code: 'XR001' }));
    await old.query('rollback');
  } finally {
    old.release();
  }
});
