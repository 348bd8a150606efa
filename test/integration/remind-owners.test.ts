/**
 * The owner-group activity (`remindOwners`) on a real PostgreSQL, run in the SDK's activity context
 * with a chosen attempt number: one statement and one transaction for the whole group, a busy owner
 * left alone, what a failing owner does to the others on early attempts and on the last one, and a retry
 * that meets its earlier attempt between any two of its statements.
 */
import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import pg from 'pg';
import pino from 'pino';
import { createActivities, type RemindOwnersInput, type RemindOwnersResult } from '../../src/activities';
import { holdAttemptSql, raiseAttempt } from '../../src/activities/claim/sql/attempts';
import { claimLockedOwners } from '../../src/activities/claim/sql/claim-owners';
import { lockFreeOwners } from '../../src/activities/claim/sql/lock-owners';
import { addDays } from '../../src/domain/dates';
import { createPool, withTransaction } from '../../src/db/pool';
import {
  insertDocuments,
  markers,
  outbox,
  rejectOwner,
  remindOwnersInput,
  seedOwnersWithTwoDocuments,
} from '../support/data';
import { WORKER_ROLE } from '../../src/domain/names';
import { testConfig } from '../support/stack';
import { claimOwners, runActivity } from '../support/claims';
import { useIntegration } from '../support/harness';
import { sleep } from '../support/wait';

const AS_OF_DATE = '2026-09-02';
const LAST_ATTEMPT = 5;

const stack = useIntegration('remind-owners');
let activities: ReturnType<typeof createActivities>;

beforeAll(() => {
  activities = createActivities({ pool: stack.db.worker, logger: pino({ level: 'silent' }), config: testConfig() });
});

/** The partition of every group here: the groups' receipts are keyed by it and by their activity. */
let cycleId = crypto.randomUUID();
beforeEach(() => {
  cycleId = crypto.randomUUID();
});

function input(ownerUserIds: string[]): RemindOwnersInput {
  return remindOwnersInput(ownerUserIds, AS_OF_DATE, {
    jobRunId: 'remind-owners-test',
    lastAttempt: LAST_ATTEMPT,
    cycleId,
  });
}

function remindOwners(ownerUserIds: string[], attempt = 1): Promise<RemindOwnersResult> {
  return runActivity(activities.remindOwners, input(ownerUserIds), { attempt });
}

const seedOwners = (n: number) => seedOwnersWithTwoDocuments(stack.db.admin, AS_OF_DATE, n);

test('a group of owners is claimed in one transaction: one event per owner listing its due documents', async () => {
  const owners = await seedOwners(4);

  const result = await remindOwners(owners);

  expect(result).toEqual({
    ownersProcessed: 4,
    ownersNotified: 4,
    busyOwnerIds: [],
    remindersSent: 8,
    // daysLeft 7 crosses 30 and 7; daysLeft 25 crosses 30.
    markersInserted: 12,
    skippedAlreadyMarked: 0,
    failed: [],
  });
  const rows = await outbox(stack.db.admin);
  expect(rows.map((r) => r.aggregate_id).sort()).toEqual([...owners].sort());
  for (const row of rows) {
    expect(row.payload.documents.map((d) => [d.daysLeft, d.thresholdDays])).toEqual([
      [7, 7],
      [25, 30],
    ]);
  }
  const xacts = await stack.db.admin.query<{ n: number }>(
    `select count(distinct xmin::text)::int as n from profile.outbox_events`,
  );
  expect(xacts.rows[0].n).toBe(1);

  expect(await remindOwners(owners)).toEqual(
    expect.objectContaining({ ownersProcessed: 4, remindersSent: 0, ownersNotified: 0 }),
  );
  expect(await outbox(stack.db.admin)).toHaveLength(4);
});

test('an owner another transaction holds is reported busy by id and left alone (not counted processed); the rest of the group is claimed', async () => {
  const [held, ...others] = await seedOwners(3);
  const client = await stack.db.worker.connect();
  try {
    await client.query('begin');
    const claim = await claimOwners(client, { ...input([held]), ownerUserIds: [held] });
    expect(claim).toEqual(expect.objectContaining({ owners: [expect.objectContaining({ busy: false })], due: 2 }));

    const result = await remindOwners([held, ...others]);

    expect(result).toEqual(
      expect.objectContaining({ ownersProcessed: 2, busyOwnerIds: [held], ownersNotified: 2, remindersSent: 4 }),
    );
    await client.query('rollback');
  } finally {
    client.release();
  }
  expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual([...others].sort());
});

test("a claim of several owners reports each one's won documents in event order, and the counts over all of them", async () => {
  const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  const docs = await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: a, daysLeft: 7 },
    { ownerUserId: a, daysLeft: 0 },
    { ownerUserId: b, daysLeft: 1 },
    { ownerUserId: c, daysLeft: 200 },
  ]);
  const id = (owner: string, daysLeft: number) =>
    docs.find((d) => d.ownerUserId === owner && d.expiresAt === addDays(AS_OF_DATE, daysLeft))!.id;

  const claimed = await withTransaction(stack.db.worker, (tx) =>
    claimOwners(tx, { ...input([c, a, b]), ownerUserIds: [c, a, b] }),
  );

  expect(
    claimed.owners.map((o) => [o.ownerUserId, o.busy, o.won.map((d) => [d.documentId, d.thresholdDays, d.daysLeft])]),
  ).toEqual([
    [c, false, []],
    [
      a,
      false,
      [
        [id(a, 0), 0, 0],
        [id(a, 7), 7, 7],
      ],
    ],
    [b, false, [[id(b, 1), 1, 1]]],
  ]);
  // Markers for every crossed threshold: 30 and 7; 30, 7, 1 and 0; 30, 7 and 1.
  expect({ due: claimed.due, markersInserted: claimed.markersInserted, skipped: claimed.skippedAlreadyMarked }).toEqual(
    {
      due: 3,
      markersInserted: 9,
      skipped: 0,
    },
  );
  expect(await markers(stack.db.admin)).toHaveLength(9);
});

test('the same owner twice in one group is claimed once', async () => {
  const [owner] = await seedOwners(1);

  const claims = await withTransaction(stack.db.worker, (tx) =>
    claimOwners(tx, { ...input([owner, owner]), ownerUserIds: [owner, owner] }),
  );

  expect(claims.owners).toHaveLength(1);
  expect(await outbox(stack.db.admin)).toHaveLength(1);
});

test('a transient error before the last attempt fails the attempt and commits nothing, so the retry redoes the same group', async () => {
  const [bad, ...others] = await seedOwners(3);
  const undo = await rejectOwner(stack.db.admin, bad, '40001');
  try {
    const err = await remindOwners([...others, bad], LAST_ATTEMPT - 1).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toEqual(expect.objectContaining({ nonRetryable: false, type: 'PostgresError:40001' }));
    expect(await outbox(stack.db.admin)).toEqual([]);
    expect(await markers(stack.db.admin)).toEqual([]);
  } finally {
    await undo();
  }
});

test('on the last attempt the owners are isolated: the failing one is reported, the others are committed', async () => {
  const [bad, ...others] = await seedOwners(3);
  const undo = await rejectOwner(stack.db.admin, bad, '40001');
  try {
    const result = await remindOwners([others[0], bad, others[1]], LAST_ATTEMPT);

    expect(result).toEqual(
      expect.objectContaining({
        ownersProcessed: 2,
        ownersNotified: 2,
        remindersSent: 4,
        failed: [{ ownerUserId: bad, error: 'PostgresError:40001: rejected for the test' }],
      }),
    );
    expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual([...others].sort());
    expect((await markers(stack.db.admin)).map((m) => m.owner_user_id)).not.toContain(bad);
  } finally {
    await undo();
  }
});

test('a permanent error isolates the owners at once, on the first attempt', async () => {
  const [bad, ...others] = await seedOwners(3);
  const undo = await rejectOwner(stack.db.admin, bad);
  try {
    const result = await remindOwners([bad, ...others], 1);

    expect(result).toEqual(
      expect.objectContaining({
        ownersProcessed: 2,
        remindersSent: 4,
        failed: [{ ownerUserId: bad, error: 'PostgresError:22023: rejected for the test' }],
      }),
    );
    expect(await outbox(stack.db.admin)).toHaveLength(2);
  } finally {
    await undo();
  }
});

test('on the last attempt with the database unreachable, the group fails at once: its attempt cannot start, so it tries no owner', async () => {
  const unreachable = createPool({ connectionString: 'postgres://nobody:secret@127.0.0.1:1/none', max: 2 });
  try {
    const offline = createActivities({ pool: unreachable, logger: pino({ level: 'silent' }), config: testConfig() });
    const owners = Array.from({ length: 50 }, () => crypto.randomUUID());
    const started = Date.now();

    const err = await runActivity(offline.remindOwners, input(owners), { attempt: LAST_ATTEMPT }).catch(
      (e: unknown) => e as ApplicationFailure,
    );

    // Retryable, as a database outage is: the workflow counts the group's owners failed (busy-retries.ts).
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toEqual(
      expect.objectContaining({ nonRetryable: false, message: expect.stringContaining('ECONNREFUSED') }),
    );
    expect(JSON.stringify(err)).not.toContain('secret');
  } finally {
    await unreachable.end();
  }
});

test('on the last attempt with every client of the pool busy, a checkout timeout is not an unreachable database: the other owners are still tried', async () => {
  const owners = await seedOwners(3);
  const full = createPool({ connectionString: stack.db.workerUrl, max: 1, connectTimeoutMs: 150 });
  // Another activity of the worker takes the pool's only client once this attempt has started (raised its
  // attempt and read its receipts: two checkouts), and holds it until the first owner has failed.
  let checkouts = 0;
  let other: pg.PoolClient | undefined;
  let taken: Promise<pg.PoolClient> | undefined;
  full.on('release', () => {
    checkouts += 1;
    if (checkouts === 2) taken = full.connect().then((c) => (other = c));
  });
  let released = false;
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (!released && chunk.toString().includes('owner transaction failed')) {
          released = true;
          other?.release();
        }
        done();
      },
    }),
  );
  try {
    const busy = createActivities({ pool: full, logger, config: testConfig() });

    const result: RemindOwnersResult = await runActivity(busy.remindOwners, input(owners), { attempt: LAST_ATTEMPT });

    expect(result.failed).toEqual([
      { ownerUserId: owners[0], error: expect.stringContaining('timeout exceeded when trying to connect') },
    ]);
    expect({ processed: result.ownersProcessed, notified: result.ownersNotified }).toEqual({
      processed: 2,
      notified: 2,
    });
    expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual(owners.slice(1).sort());
  } finally {
    await taken;
    if (!released) other?.release();
    await full.end();
  }
});

test('owners whose ids share their first 64 bits (UUIDv7 of one millisecond) do not lock each other out', async () => {
  // Two UUIDv7 ids of the same millisecond and the same rand_a: only the last 64 bits differ.
  const [a, b] = ['0190f3a2-7c1e-7abc-8000-00000000000a', '0190f3a2-7c1e-7abc-9fff-ffffffff000b'];
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: a, daysLeft: 7 },
    { ownerUserId: b, daysLeft: 7 },
  ]);
  const client = await stack.db.worker.connect();
  try {
    await client.query('begin');
    const first = await claimOwners(client, { ...input([a]), ownerUserIds: [a] });
    expect(first.owners[0].busy).toBe(false);

    const second = await withTransaction(stack.db.worker, (tx) =>
      claimOwners(tx, { ...input([b]), ownerUserIds: [b] }),
    );

    expect(second).toEqual(
      expect.objectContaining({ owners: [expect.objectContaining({ ownerUserId: b, busy: false })], due: 1 }),
    );
    expect(second.owners[0].won).toHaveLength(1);
    await client.query('commit');
  } finally {
    client.release();
  }
  expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual([a, b]);
});

test("the worker's sessions carry its statement, idle-in-transaction and keepalive limits", async () => {
  const limits = testConfig().databaseSession;
  expect(limits).toEqual({
    statementTimeoutMs: 60_000,
    idleInTransactionTimeoutMs: 30_000,
    tcpKeepaliveIdleMs: 30_000,
  });
  const pool = createPool({ connectionString: stack.db.workerUrl, max: 1, session: limits });
  try {
    const { rows } = await pool.query<Record<string, string>>(
      `select current_setting('statement_timeout') as statement,
              current_setting('idle_in_transaction_session_timeout') as idle,
              current_setting('tcp_keepalives_idle') as keepalive_idle,
              current_setting('tcp_keepalives_interval') as keepalive_interval,
              current_setting('tcp_keepalives_count') as keepalive_count`,
    );
    expect(rows[0]).toEqual({
      statement: '1min',
      idle: '30s',
      keepalive_idle: '30',
      keepalive_interval: '10',
      keepalive_count: '3',
    });
  } finally {
    await pool.end();
  }
});

test("an orphaned transaction (its worker gone quiet mid-group) releases the owner's lock within the idle-in-transaction timeout", async () => {
  const [owner] = await seedOwners(1);
  const orphan = createPool(
    {
      connectionString: stack.db.workerUrl,
      max: 1,
      session: { statementTimeoutMs: 60_000, idleInTransactionTimeoutMs: 1_000, tcpKeepaliveIdleMs: 0 },
    },
    () => undefined,
  );
  try {
    const client = await orphan.connect();
    client.on('error', () => undefined);
    await client.query('begin');
    await claimOwners(client, { ...input([owner]), ownerUserIds: [owner] });
    // The worker never sends another statement; the backend keeps the transaction and the lock.
    const held = await withTransaction(stack.db.worker, (tx) =>
      claimOwners(tx, { ...input([owner]), ownerUserIds: [owner] }),
    );
    expect(held).toEqual({
      owners: [{ ownerUserId: owner, busy: true, won: [] }],
      due: 0,
      markersInserted: 0,
      skippedAlreadyMarked: 0,
    });

    await sleep(2_500);

    const freed = await withTransaction(stack.db.worker, (tx) =>
      claimOwners(tx, { ...input([owner]), ownerUserIds: [owner] }),
    );
    expect(freed).toEqual(expect.objectContaining({ owners: [expect.objectContaining({ busy: false })], due: 2 }));
    expect(freed.owners[0].won).toHaveLength(2);
    client.release(true);
  } finally {
    await orphan.end();
  }
  expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id)).toEqual([owner]);
});

/**
 * A pool of one session on the worker's role, its search_path putting profile first (the barrier below), and
 * `isolation` as the database's default for that role when given; closed and reset by the returned `close`.
 */
async function barrierPool(isolation?: string): Promise<{ pool: pg.Pool; level: string; close(): Promise<void> }> {
  const { rows } = await stack.db.admin.query<{ db: string }>('select current_database() as db');
  const role = `${WORKER_ROLE} in database ${rows[0].db}`;
  if (isolation) await stack.db.admin.query(`alter role ${role} set default_transaction_isolation = '${isolation}'`);
  const pool = createPool({ connectionString: stack.db.workerUrl, max: 1 });
  const session = await pool.connect();
  await session.query('set search_path = profile, pg_catalog');
  const { rows: shown } = await session.query<{ level: string }>(
    `select current_setting('default_transaction_isolation') as level`,
  );
  session.release();
  return {
    pool,
    level: shown[0].level,
    close: async () => {
      await pool.end();
      if (isolation) await stack.db.admin.query(`alter role ${role} reset default_transaction_isolation`);
    },
  };
}

test.each([
  ['read committed (the server default)', undefined],
  ['repeatable read', 'repeatable read'],
  ['serializable', 'serializable'],
])(
  'a cycle whose claim waited for the owner lock while another cycle committed "7" does not send "14 days" after it (locks before the ledger is read), the database default being %s',
  async (_, isolation) => {
    const owner = crypto.randomUUID();
    await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId: owner, daysLeft: 5 }]);
    // A barrier between a statement's snapshot and its lock: on sessions whose search_path puts profile
    // before pg_catalog, the owner lock first waits for an advisory lock the test holds.
    await stack.db.admin.query(`
      create or replace function profile.pg_try_advisory_xact_lock(key bigint) returns boolean
      language plpgsql as $$
      begin
        perform pg_catalog.pg_advisory_lock_shared(4242);
        perform pg_catalog.pg_advisory_unlock_shared(4242);
        return pg_catalog.pg_try_advisory_xact_lock(key);
      end $$`);
    const gate = await stack.db.admin.connect();
    const manual = await barrierPool(isolation);
    try {
      expect(manual.level).toBe(isolation ?? 'read committed');
      await gate.query('select pg_advisory_lock(4242)');
      // The manual run (thresholds 14, 3), in the job's own transaction, reaches the barrier and waits there.
      const waiting = withTransaction(manual.pool, (tx) =>
        claimOwners(tx, { ...input([owner]), thresholdsDays: [14, 3], ownerUserIds: [owner] }),
      );
      await sleep(300);
      // Meanwhile the scheduled cycle (30, 7, 1, 0) claims the owner and commits markers 30 and 7.
      const {
        owners: [scheduled],
      } = await withTransaction(stack.db.worker, (tx) => claimOwners(tx, { ...input([owner]), ownerUserIds: [owner] }));
      expect(scheduled.won.map((d) => d.thresholdDays)).toEqual([7]);
      await gate.query('select pg_advisory_unlock(4242)');

      const late = await waiting;

      expect(late).toEqual({
        owners: [{ ownerUserId: owner, busy: false, won: [] }],
        due: 0,
        markersInserted: 0,
        skippedAlreadyMarked: 0,
      });
    } finally {
      gate.release();
      await manual.close();
      await stack.db.admin.query('drop function profile.pg_try_advisory_xact_lock(bigint)');
    }
    const events = await outbox(stack.db.admin);
    expect(events.map((r) => r.payload.documents.map((d) => d.thresholdDays))).toEqual([[7]]);
  },
);

test("a retry after a worker died between its group's commit and its report counts what the first attempt queued, from its receipt", async () => {
  const owners = await seedOwners(3);
  // The first attempt committed and its worker died before reporting: simulated by running it and
  // dropping its result.
  const lost = await remindOwners(owners, 1);
  expect(await outbox(stack.db.admin)).toHaveLength(3);

  const retry = await remindOwners(owners, 2);

  expect(retry).toEqual(lost);
  expect(retry).toEqual(
    expect.objectContaining({ ownersProcessed: 3, ownersNotified: 3, remindersSent: 6, markersInserted: 9 }),
  );
  expect(await outbox(stack.db.admin)).toHaveLength(3);
  // Another activity (another id) finds the same owners done and counts nothing of them.
  const other = await runActivity(activities.remindOwners, input(owners), { attempt: 2, activityId: 'another' });
  expect(other).toEqual(expect.objectContaining({ ownersProcessed: 3, remindersSent: 0, ownersNotified: 0 }));
});

test('on the last attempt a retry claims alone only the owners no earlier attempt claimed alone, and counts those that were', async () => {
  const [bad, ...others] = await seedOwners(3);
  const undo = await rejectOwner(stack.db.admin, bad);
  try {
    // Attempt 2 met the permanent error, claimed the owners one by one and died before reporting.
    const lost = await remindOwners([others[0], bad, others[1]], 2);
    expect(lost.failed.map((f) => f.ownerUserId)).toEqual([bad]);

    const retry = await remindOwners([others[0], bad, others[1]], 3);

    expect(retry).toEqual(lost);
    expect(await outbox(stack.db.admin)).toHaveLength(2);
  } finally {
    await undo();
  }
});

/**
 * The activity's statements on a pool of one connection, with `before(n, text)` awaited before its n-th
 * statement (from 0, BEGIN included): a barrier between any two statements of its transaction.
 */
function hookedActivities(before: (n: number, text: string) => Promise<void>) {
  const pool = createPool({ connectionString: stack.db.workerUrl, max: 1 });
  let n = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args) => {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string })?.text);
      await before(n++, text);
      return query(...args);
    };
  });
  const hooked = createActivities({ pool, logger: pino({ level: 'silent' }), config: testConfig() });
  return { activities: hooked, end: () => pool.end() };
}

/** The info of an attempt of group activity `activityId` of run `runId`: its `queuedBy` is `runId/activityId`. */
const attemptOf = (attempt: number, activityId: string, runId = 'run-1') => ({
  attempt,
  activityId,
  workflowExecution: { workflowId: 'interleavings', runId },
});

/**
 * Attempt 1 of activity `run-1/group-1` as its own transaction runs it, opened and left open (its heartbeat timed
 * out, its transaction did not): the attempt raised, held, the owner locked and claimed with the group's receipt.
 */
async function openFirstAttempt(owner: string): Promise<pg.PoolClient> {
  const key = { cycleId, queuedBy: 'run-1/group-1', attempt: 1 };
  await raiseAttempt(stack.db.worker, key);
  const first = await stack.db.worker.connect();
  await first.query(`begin; ${holdAttemptSql(key)}`);
  const locked = await lockFreeOwners(first, [owner]);
  await claimLockedOwners(
    first,
    { ...input([owner]), ownerUserIds: locked, queuedBy: key.queuedBy },
    { ...key, part: 'r', busyOwnerIds: [], clearedOwnerIds: [] },
  );
  return first;
}

test.each(['commit', 'rollback'] as const)(
  'a retry that starts while its earlier attempt still holds the owner waits for that transaction (%s), then counts what it committed or claims what it did not: the counts equal the rows',
  async (ending) => {
    const owner = crypto.randomUUID();
    await insertDocuments(stack.db.admin, AS_OF_DATE, [
      { ownerUserId: owner, daysLeft: 7 },
      { ownerUserId: owner, daysLeft: 25 },
    ]);
    const first = await openFirstAttempt(owner);
    try {
      const retrying = runActivity(activities.remindOwners, input([owner]), attemptOf(2, 'group-1'));
      await sleep(500);
      await first.query(ending);

      const second = await retrying;

      const rows = (await outbox(stack.db.admin)).filter((r) => r.aggregate_id === owner);
      expect(rows).toHaveLength(1);
      expect(second).toEqual(
        expect.objectContaining({ ownersProcessed: 1, ownersNotified: 1, remindersSent: 2, busyOwnerIds: [] }),
      );
      expect(second.remindersSent).toBe(rows[0].payload.documents.length);
    } finally {
      first.release();
    }
  },
);

test.each([0, 1, 2, 3, 4])(
  'an earlier attempt whose next transaction begins before statement %i of its retry: it commits nothing once the retry has started, and the retry counts what it did',
  async (gap) => {
    const [early, late] = await seedOwners(2);
    // Attempt 1 claimed `early` and committed; its worker went quiet; attempt 2 starts; then attempt 1 wakes up
    // and begins its next transaction, for `late`, between two of attempt 2's statements.
    const key = { cycleId, queuedBy: 'run-1/group-1', attempt: 1 };
    await raiseAttempt(stack.db.worker, key);
    // Owner `index` of the group claimed alone by attempt 1, in a transaction of its own holding the attempt.
    const claimAlone = (owner: string, index: number) =>
      withTransaction(
        stack.db.worker,
        async (tx) =>
          claimLockedOwners(
            tx,
            { ...input([owner]), ownerUserIds: await lockFreeOwners(tx, [owner]), queuedBy: key.queuedBy },
            { ...key, part: `r.o${index}`, ownerIds: [owner], busyOwnerIds: [], clearedOwnerIds: [] },
          ),
        `begin; ${holdAttemptSql(key)}`,
      );
    await claimAlone(early, 0);
    let zombie: Promise<unknown> | undefined;
    const retry = hookedActivities(async (n) => {
      if (n !== gap) return;
      zombie = claimAlone(late, 1).then(
        () => 'committed',
        (err: { code?: string }) => err.code,
      );
      await zombie;
    });
    try {
      const second = await runActivity(retry.activities.remindOwners, input([early, late]), attemptOf(2, 'group-1'));

      // Before the retry's first statement the earlier attempt may still commit (the retry then counts it);
      // once the retry has raised the attempt, the earlier one's transaction fails.
      expect(await zombie).toBe(gap === 0 ? 'committed' : 'XR001');
      const rows = await outbox(stack.db.admin);
      expect(rows.map((r) => r.aggregate_id).sort()).toEqual([early, late].sort());
      expect(second).toEqual(expect.objectContaining({ ownersProcessed: 2, ownersNotified: 2, remindersSent: 4 }));
    } finally {
      await retry.end();
    }
  },
);
