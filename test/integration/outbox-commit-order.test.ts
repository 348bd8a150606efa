/**
 * One key, one row in flight, in commit order (docs/RELIABILITY.md, "Interleavings"): an owner transaction
 * that began before another one of the same owner but took the owner's lock after that one committed must
 * sort its outbox row after the other's, or a second relay publishes it beside the row already in flight.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import pg from 'pg';
import { claimUnpublished, markPublished, type OutboxMessage } from '../../src/db/outbox';
import { withTransaction } from '../../src/db/pool';
import type { ClaimParams } from '../../src/activities/claim/sql/claim-owners';
import { claimOwners } from '../support/claims';
import { insertDocuments } from '../support/data';
import { useIntegration } from '../support/harness';
import { testRelay } from '../support/relay';
import { waitFor } from '../support/wait';

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

/**
 * The interleaving of the issue: `early` begins; `late` reminds the owner of a document and commits; a
 * second document of the owner falls due; `early` takes the owner's lock (free again) and reminds it of that
 * one. `between` runs after `late` committed, before `early` inserts.
 * @returns the correlation ids, in commit order.
 */
async function earlyBeganLateCommitted(ownerUserId: string, between: () => Promise<void> = async () => {}) {
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
    await early.query('commit');
    return ['late', 'early'];
  });
}

test('a row committed later sorts after the rows of its key committed before it, whenever its transaction began', async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);

  const commitOrder = await earlyBeganLateCommitted(ownerUserId);

  const { rows } = await stack.db.admin.query<{ correlation_id: string }>(
    'select correlation_id from profile.outbox_messages where message_key = $1 order by created_at, id',
    [ownerUserId],
  );
  expect(rows.map((r) => r.correlation_id)).toEqual(commitOrder);
});

test('two relays: while one holds the earlier-committed row of a key, the other claims no row of that key', async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);
  const inFlight: OutboxMessage[][] = [];

  await withSession(stack.relayPool, async (first) => {
    await earlyBeganLateCommitted(ownerUserId, async () => {
      // The first relay claims the row `late` committed and holds it, as while Kafka acknowledges it.
      await first.query('begin');
      inFlight.push(await claimUnpublished(first, 10));
    });
    // `early` has committed its row; the second relay looks while the first still holds `late`'s.
    inFlight.push(
      await withTransaction(
        stack.relayPool,
        (second) => claimUnpublished(second, 10),
        'BEGIN ISOLATION LEVEL READ COMMITTED',
      ),
    );
    await markPublished(
      first,
      inFlight[0].map((m) => m.id),
    );
    await first.query('commit');
  });
  const next = await withTransaction(stack.relayPool, (second) => claimUnpublished(second, 10));

  expect(inFlight.map((batch) => batch.map((m) => m.correlation_id))).toEqual([['late'], []]);
  expect(next.map((m) => m.correlation_id)).toEqual(['early']);
});

test("the topic holds a key's events in the order their transactions committed", async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);
  const commitOrder = await earlyBeganLateCommitted(ownerUserId);

  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl });
  await relay.start();
  try {
    await waitFor(
      async () =>
        (await stack.db.admin.query('select 1 from profile.outbox_messages where published_at is null')).rowCount === 0,
    );
  } finally {
    await relay.stop();
  }

  // Where Kafka appended each event (the relay records its acknowledgement; relay.test.ts checks those against
  // a consumer): one partition for the key, and the offsets in commit order.
  const { rows } = await stack.db.admin.query<{ correlation_id: string; partition: number }>(
    `select correlation_id, published_partition as partition from profile.outbox_messages
      where message_key = $1 order by published_offset`,
    [ownerUserId],
  );
  expect(new Set(rows.map((r) => r.partition)).size).toBe(1);
  expect(rows.map((r) => r.correlation_id)).toEqual(commitOrder);
});

test('the mirror: transactions that begin and commit in the same order keep that order', async () => {
  const ownerUserId = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 7 }]);
  await withTransaction(stack.db.worker, (tx) => claimOwners(tx, params(ownerUserId, 'first')));
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId, daysLeft: 0 }]);
  await withTransaction(stack.db.worker, (tx) => claimOwners(tx, params(ownerUserId, 'second')));

  const { rows } = await stack.db.admin.query<{ correlation_id: string }>(
    'select correlation_id from profile.outbox_messages where message_key = $1 order by created_at, id',
    [ownerUserId],
  );
  expect(rows.map((r) => r.correlation_id)).toEqual(['first', 'second']);
});
