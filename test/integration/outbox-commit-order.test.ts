/**
 * An owner's events in commit order (docs/RELIABILITY.md, "Interleavings"): an owner transaction that began
 * before another one of the same owner but took the owner's lock after that one committed must sort its event
 * after the other's, and a relay reading the lane while it is still open must not read past it.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { laneCursor, pinLanePlan, readLane } from '../../src/db/outbox-events';
import { LANE_SQL } from '../../src/db/lane-sql';
import { withTransaction } from '../../src/db/pool';
import type { ClaimParams } from '../../src/activities/claim/sql/claim-owners';
import { claimOwners } from '../support/claims';
import { eventPlacements, insertDocuments, unpublishedCount } from '../support/data';
import { useIntegration } from '../support/harness';
import { testRelay } from '../support/relay';
import { sleep, waitFor } from '../support/wait';

const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('outbox-commit-order', { relayPoolSize: 4 });

const params = (ownerUserId: string, jobRunId: string): ClaimParams => ({
  ownerUserIds: [ownerUserId],
  asOf: `${AS_OF_DATE}T03:00:00.000Z`,
  asOfDate: AS_OF_DATE,
  thresholdsDays: [30, 7, 1, 0],
  retentionDays: 90,
  jobRunId,
});

/**
 * A session of its own that `fn` drives by hand; rolled back and closed whatever happens, so that no
 * transaction is left open for the next test's TRUNCATE to wait on. A statement that would wait on a lock
 * fails after 10 s instead of hanging the file.
 */
async function withSession<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(`set statement_timeout = '10s'`);
    return await fn(client);
  } finally {
    await client.query('rollback').catch(() => {});
    client.release();
  }
}

interface Hooks {
  between?: () => Promise<void>;
  beforeCommit?: () => Promise<void>;
}

/** The correlation ids of an owner's events in the order the relay reads them: its lane's (xid, id). */
async function eventsInLaneOrder(ownerUserId: string): Promise<string[]> {
  const { rows } = await stack.db.admin.query<{ correlation_id: string }>(
    'select correlation_id from profile.outbox_events where message_key = $1 order by xid, id',
    [ownerUserId],
  );
  return rows.map((r) => r.correlation_id);
}

/**
 * What a relay loop reads of the owner's lane from its cursor, once it reads at least `n` events (other test
 * files' transactions on this cluster hold the horizon back for moments too).
 */
async function readOwnersLane(ownerUserId: string, n: number): Promise<string[]> {
  const { rows } = await stack.db.admin.query<{ lane: number }>(
    `select ${LANE_SQL} as lane from (select $1::text as message_key) k`,
    [ownerUserId],
  );
  for (const until = Date.now() + 15_000; ; await sleep(50)) {
    const { events: read } = await withTransaction(stack.relayPool, async (tx) => {
      await pinLanePlan(tx);
      return readLane(tx, rows[0].lane, await laneCursor(tx, rows[0].lane), 100);
    });
    if (read.length >= n || Date.now() > until) return read.map((e) => e.correlation_id);
  }
}

/**
 * The interleaving of the issue: `early` begins; `late` reminds the owner of a document and commits; a
 * second document of the owner falls due; `early` takes the owner's lock (free again) and reminds it of that
 * one. `between` runs after `late` committed, before `early` inserts; `beforeCommit` once `early` wrote its event.
 * @returns the correlation ids, in commit order.
 */
async function earlyBeganLateCommitted(
  ownerUserId: string,
  { between = async () => {}, beforeCommit = async () => {} }: Hooks = {},
) {
  return withSession(stack.db.worker, async (early) => {
    await early.query('begin');
    // The transaction's start, which `now()` returns for the rest of it; a claim transaction begins before
    // it asks for the owner's lock.
    await early.query('select now()');
    await sleep(20);
    await withTransaction(stack.db.worker, (late) => claimOwners(late, params(ownerUserId, 'late')));
    await between();
    await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 0 }]);
    const {
      owners: [claim],
    } = await claimOwners(early, params(ownerUserId, 'early'));
    expect({ busy: claim.busy, won: claim.won.length }).toEqual({ busy: false, won: 1 });
    await beforeCommit();
    await early.query('commit');
    return ['late', 'early'];
  });
}

test('a row committed later sorts after the rows of its key committed before it, whenever its transaction began', async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);

  const commitOrder = await earlyBeganLateCommitted(ownerUserId);

  expect(await eventsInLaneOrder(ownerUserId)).toEqual(commitOrder);
});

test('a relay reading the lane while the earlier-begun transaction is still open reads the committed event only', async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);
  const reads: string[][] = [];

  const commitOrder = await earlyBeganLateCommitted(ownerUserId, {
    // `early` has written its event and not committed: the horizon stops the read before it.
    beforeCommit: async () => void reads.push(await readOwnersLane(ownerUserId, 1)),
  });
  reads.push(await readOwnersLane(ownerUserId, 2));

  expect(reads).toEqual([['late'], commitOrder]);
});

test("the topic holds a key's events in the order their transactions committed", async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);
  const commitOrder = await earlyBeganLateCommitted(ownerUserId);

  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl });
  await relay.start();
  try {
    await waitFor(async () => (await unpublishedCount(stack.db.admin)) === 0);
  } finally {
    await relay.stop();
  }

  // Where Kafka appended each event (the relay records its acknowledgement; relay.test.ts checks those against
  // a consumer): one partition for the key, and the offsets in commit order.
  const placed = await eventPlacements(stack.db.admin);
  const { rows } = await stack.db.admin.query<{ id: string; correlation_id: string }>(
    'select id, correlation_id from profile.outbox_events where message_key = $1',
    [ownerUserId],
  );
  expect(new Set(rows.map((r) => placed[r.id][0])).size).toBe(1);
  const byOffset = rows.sort((x, y) => Number(BigInt(placed[x.id][1]) - BigInt(placed[y.id][1])));
  expect(byOffset.map((r) => r.correlation_id)).toEqual(commitOrder);
});

test('the mirror: transactions that begin and commit in the same order keep that order', async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);
  await withTransaction(stack.db.worker, (tx) => claimOwners(tx, params(ownerUserId, 'first')));
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 0 }]);
  await withTransaction(stack.db.worker, (tx) => claimOwners(tx, params(ownerUserId, 'second')));

  expect(await eventsInLaneOrder(ownerUserId)).toEqual(['first', 'second']);
});
