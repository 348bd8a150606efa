/**
 * The insert-only outbox's statements (migration 025, src/db/outbox-events.ts) on a real PostgreSQL, as the
 * relay's and the worker's roles: a lane read stops at the horizon of a transaction still running and loses
 * nothing when it ends; an owner's events come in the order their transactions committed; one relay loop
 * holds a lane; a cursor moved without the lane is refused; held keys are passed; the read walks the lane's
 * index whatever the statistics; the roles have what they need and nothing more.
 */
import crypto from 'node:crypto';
import type pg from 'pg';
import {
  DELETE_PUBLISHED_EVENTS_SQL,
  deleteOldDeliveries,
  deletePublishedEvents,
  LANE_START,
  explainReadLane,
  insertDeliveries,
  laneCursor,
  moveLane,
  pinLanePlan,
  readLane,
  tryLockLane,
  type LanePosition,
} from '../../src/db/outbox-events';
import { LANE_SQL } from '../../src/db/lane-sql';
import { holdKeys } from '../../src/db/outbox-held';
import { withTransaction } from '../../src/db/pool';
import { useIntegration } from '../support/harness';
import { sleep } from '../support/wait';

const stack = useIntegration('outbox-lanes', { relayPoolSize: 4 });

/** Inserts one event of `key` as the worker does: only the columns the worker's role writes. */
async function insertEvent(db: pg.ClientBase | pg.Pool, key: string): Promise<string> {
  const id = crypto.randomUUID();
  await db.query(
    `insert into profile.outbox_events
       (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id)
     values ($1, 'Profile', $2::uuid, 't', $2::text, 'E', 1, '{}', 'c')`,
    [id, key],
  );
  return id;
}

/** The lane of `key`, as the index computes it. */
async function laneOf(key: string): Promise<number> {
  const { rows } = await stack.db.admin.query<{ lane: number }>(
    `select ${LANE_SQL} as lane from (select $1::text as message_key) k`,
    [key],
  );
  return rows[0].lane;
}

/** A key of lane `lane`. */
async function keyOfLane(lane: number): Promise<string> {
  for (;;) {
    const key = crypto.randomUUID();
    if ((await laneOf(key)) === lane) return key;
  }
}

/** What a relay loop reads of `lane` from its cursor, in a transaction of its own. */
async function read(lane: number, limit = 100): Promise<string[]> {
  return withTransaction(stack.relayPool, async (tx) => {
    await pinLanePlan(tx);
    const { events: rows } = await readLane(tx, lane, await laneCursor(tx, lane), limit);
    return rows.map((r) => r.id);
  });
}

/**
 * What {@link read} reads once it reads `n` events: other test files' transactions on this cluster hold the
 * horizon back for moments too, so a read that must see events waits for them.
 */
async function readAll(lane: number, n: number): Promise<string[]> {
  for (const until = Date.now() + 15_000; ; await sleep(50)) {
    const ids = await read(lane);
    if (ids.length >= n || Date.now() > until) return ids;
  }
}

test('a transaction still writing holds the lane back at its horizon; once it commits, nothing was skipped', async () => {
  const key = await keyOfLane(3);
  const other = await keyOfLane(3);
  const early = await stack.db.worker.connect();
  try {
    await early.query('begin');
    const first = await insertEvent(early, key);
    // A later transaction commits first: its event is behind the horizon of the one still running.
    const second = await insertEvent(stack.db.worker, other);
    expect(await read(3)).toEqual([]);
    // A long writing transaction of any table delays the lane the same way, and loses nothing either.
    await early.query('commit');
    expect(await readAll(3, 2)).toEqual([first, second]);
  } finally {
    early.release();
  }
});

test('a writing transaction elsewhere (not the outbox) delays the read until it ends, then the read goes on', async () => {
  const key = await keyOfLane(5);
  const elsewhere = await stack.db.admin.connect();
  try {
    await elsewhere.query('begin');
    await elsewhere.query('select pg_current_xact_id()');
    const id = await insertEvent(stack.db.worker, key);
    expect(await read(5)).toEqual([]);
    await elsewhere.query('rollback');
    expect(await readAll(5, 1)).toEqual([id]);
  } finally {
    elsewhere.release();
  }
});

test('an owner’s events come in the order their transactions committed, though the later one began first', async () => {
  const key = await keyOfLane(1);
  const lockKey = 424242;
  const a = await stack.db.worker.connect();
  const b = await stack.db.worker.connect();
  try {
    // b begins first but takes the owner's lock after a committed; the lock comes before the first write.
    await b.query('begin');
    await a.query('begin');
    await a.query('select pg_advisory_xact_lock($1)', [lockKey]);
    const aId = await insertEvent(a, key);
    const bLocked = b.query('select pg_advisory_xact_lock($1)', [lockKey]);
    await a.query('commit');
    await bLocked;
    const bId = await insertEvent(b, key);
    await b.query('commit');
    expect(await readAll(1, 2)).toEqual([aId, bId]);
  } finally {
    a.release();
    b.release();
  }
});

test('one relay loop holds a lane; the other passes it, and takes it once the first ends', async () => {
  const first = await stack.relayPool.connect();
  try {
    await first.query('begin');
    expect(await tryLockLane(first, 2)).toBe(true);
    expect(await withTransaction(stack.relayPool, (tx) => tryLockLane(tx, 2))).toBe(false);
    expect(await withTransaction(stack.relayPool, (tx) => tryLockLane(tx, 4))).toBe(true);
    await first.query('rollback');
    expect(await withTransaction(stack.relayPool, (tx) => tryLockLane(tx, 2))).toBe(true);
  } finally {
    first.release();
  }
});

test('the cursor moves from where it is, and a move from a stale cursor is refused', async () => {
  const key = await keyOfLane(6);
  const ids = [await insertEvent(stack.db.worker, key), await insertEvent(stack.db.worker, key)];
  await readAll(6, 2);
  const { events: rows } = await withTransaction(stack.relayPool, (tx) => readLane(tx, 6, LANE_START, 10));
  const to = (i: number): LanePosition => ({ xid: rows[i].event_xid, id: rows[i].id });
  await withTransaction(stack.relayPool, (tx) => moveLane(tx, 6, LANE_START, to(0)));
  expect(await readAll(6, 1)).toEqual([ids[1]]);
  await expect(withTransaction(stack.relayPool, (tx) => moveLane(tx, 6, LANE_START, to(1)))).rejects.toThrow(
    /moved by a relay that did not hold the lane/,
  );
  expect(await withTransaction(stack.relayPool, (tx) => laneCursor(tx, 6))).toEqual(to(0));
});

test('a held key’s events are left out and the read goes on with the others; releasing it lets them be read', async () => {
  const held = await keyOfLane(0);
  const free = await keyOfLane(0);
  const heldIds = [await insertEvent(stack.db.worker, held), await insertEvent(stack.db.worker, held)];
  const freeId = await insertEvent(stack.db.worker, free);
  await readAll(0, 3);
  const {
    events: [first],
  } = await withTransaction(stack.relayPool, (tx) => readLane(tx, 0, LANE_START, 1));
  await withTransaction(stack.relayPool, (tx) =>
    holdKeys(
      tx,
      0,
      [{ messageKey: held, from: { xid: first.event_xid, id: first.id }, reason: 'refused', error: 'x' }],
      { maxRejections: 5, maxBackoffSeconds: 1 },
    ),
  );
  expect(await readAll(0, 1)).toEqual([freeId]);
  const { rows } = await stack.db.admin.query(
    'select reason, rejections, attempts, last_error, parked_at from profile.outbox_held where message_key = $1',
    [held],
  );
  expect(rows).toEqual([{ reason: 'refused', rejections: 1, attempts: 1, last_error: 'x', parked_at: null }]);
  await stack.db.admin.query('delete from profile.outbox_held');
  expect(await readAll(0, 3)).toEqual([...heldIds, freeId]);
});

test('a key refused as often as RELAY_MAX_ATTEMPTS allows is parked when held; a key held already keeps its first hold', async () => {
  const key = await keyOfLane(7);
  const ids = [await insertEvent(stack.db.worker, key), await insertEvent(stack.db.worker, key)];
  await readAll(7, 2);
  const { events: rows } = await withTransaction(stack.relayPool, (tx) => readLane(tx, 7, LANE_START, 10));
  await withTransaction(stack.relayPool, async (tx) => {
    await holdKeys(
      tx,
      7,
      [{ messageKey: key, from: { xid: rows[0].event_xid, id: ids[0] }, reason: 'refused', error: 'a' }],
      { maxRejections: 1, maxBackoffSeconds: 1 },
    );
    await holdKeys(
      tx,
      7,
      [{ messageKey: key, from: { xid: rows[1].event_xid, id: ids[1] }, reason: 'refused', error: 'b' }],
      { maxRejections: 1, maxBackoffSeconds: 1 },
    );
  });
  const { rows: held } = await stack.db.admin.query(
    'select id, last_error, parked_at is not null as parked from profile.outbox_held where message_key = $1',
    [key],
  );
  expect(held).toEqual([{ id: ids[0], last_error: 'a', parked: true }]);
});

test('deliveries say where each event went', async () => {
  const a = crypto.randomUUID();
  const b = crypto.randomUUID();
  await withTransaction(stack.relayPool, (tx) =>
    insertDeliveries(tx, 4, { xid: '77', id: b }, [
      { topic: 't', partition: 2, baseOffset: '9000000000', ids: [a, b] },
    ]),
  );
  const { rows } = await stack.db.admin.query(
    `select d.partition, d.base_offset + i.n - 1 as "offset", i.id
       from profile.outbox_deliveries d, unnest(d.ids) with ordinality as i(id, n) order by i.n`,
  );
  expect(rows).toEqual([
    { partition: 2, offset: '9000000000', id: a },
    { partition: 2, offset: '9000000001', id: b },
  ]);
});

test('the read walks the lane’s index in order and stops at its limit, with or without statistics', async () => {
  const plans: string[] = [];
  await withTransaction(stack.db.admin, async (tx) => {
    await pinLanePlan(tx);
    plans.push(await explainReadLane(tx, 3, 1000));
  });
  await stack.db.admin.query(
    `insert into profile.outbox_events
       (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id)
     select gen_random_uuid(), 'Profile', k, 't', k::text, 'E', 1, '{}', 'c'
       from (select gen_random_uuid() as k from generate_series(1, 20000)) s;
     analyze profile.outbox_events`,
  );
  await withTransaction(stack.db.admin, async (tx) => {
    await pinLanePlan(tx);
    plans.push(await explainReadLane(tx, 3, 1000));
  });
  for (const plan of plans) {
    expect(plan).toMatch(/Index Scan using ix_outbox_events_lane/);
    expect(plan).not.toMatch(/Sort|Seq Scan/);
  }
});

describe('the roles', () => {
  test('the worker inserts events and reads none', async () => {
    await insertEvent(stack.db.worker, crypto.randomUUID());
    await expect(stack.db.worker.query('select id from profile.outbox_events')).rejects.toThrow(/permission denied/);
  });

  test('the relay reads and deletes events, never updates one, and moves only cursors', async () => {
    const id = await insertEvent(stack.db.worker, crypto.randomUUID());
    await expect(
      stack.relayPool.query("update profile.outbox_events set topic = 'x' where id = $1", [id]),
    ).rejects.toThrow(/permission denied/);
    await expect(stack.relayPool.query('insert into profile.outbox_lanes (lane) values (0)')).rejects.toThrow(
      /permission denied/,
    );
    const { rowCount } = await stack.relayPool.query('delete from profile.outbox_events where id = $1', [id]);
    expect(rowCount).toBe(1);
  });
});

test('the cleanup deletes the events a delivery older than the retention covered, never a held key’s, then that delivery', async () => {
  const keys = [await keyOfLane(2), await keyOfLane(2), await keyOfLane(2), await keyOfLane(2)];
  for (const key of keys) await insertEvent(stack.db.worker, key);
  await readAll(2, 4);
  const { events } = await withTransaction(stack.relayPool, async (tx) => {
    await pinLanePlan(tx);
    return readLane(tx, 2, LANE_START, 10);
  });
  const at = (i: number): LanePosition => ({ xid: events[i].event_xid, id: events[i].id });
  const week = 7 * 86_400;
  await withTransaction(stack.relayPool, async (tx) => {
    await insertDeliveries(tx, 2, at(2), [
      { topic: 't', partition: 0, baseOffset: '0', ids: events.slice(0, 3).map((e) => e.id) },
    ]);
    await insertDeliveries(tx, 2, at(3), [{ topic: 't', partition: 0, baseOffset: '3', ids: [events[3].id] }]);
    await holdKeys(tx, 2, [{ messageKey: events[1].message_key, from: at(1), reason: 'refused', error: 'x' }], {
      maxRejections: 5,
      maxBackoffSeconds: 1,
    });
  });
  await stack.db.admin.query(
    `update profile.outbox_deliveries set published_at = now() - interval '8 days' where last_id = $1`,
    [events[2].id],
  );
  expect(await deletePublishedEvents(stack.relayPool, week, 5_000)).toBe(2);
  expect(await deletePublishedEvents(stack.relayPool, week, 5_000)).toBe(0);
  const { rows } = await stack.db.admin.query<{ id: string }>('select id from profile.outbox_events order by xid, id');
  expect(rows.map((r) => r.id)).toEqual([events[1].id, events[3].id]);
  expect(await deleteOldDeliveries(stack.relayPool, week, 5_000)).toBe(1);
  const { rows: left } = await stack.db.admin.query<{ last_id: string }>(
    'select last_id from profile.outbox_deliveries',
  );
  expect(left).toEqual([{ last_id: events[3].id }]);
});

test("the cleanup's delete reads the lanes' index and the deliveries' indexes, never a whole table", async () => {
  await stack.db.admin.query(
    `insert into profile.outbox_events
       (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id)
     select gen_random_uuid(), 'Profile', k, 't', k::text, 'E', 1, '{}', 'c'
       from (select gen_random_uuid() as k from generate_series(1, 20000)) s;
     insert into profile.outbox_deliveries (lane, last_xid, last_id, topic, partition, base_offset, ids, published_at)
     select i % 8, pg_current_xact_id(), gen_random_uuid(), 't', 0, i, '{}', now() - make_interval(mins => i)
       from generate_series(1, 5000) i;
     analyze profile.outbox_events, profile.outbox_deliveries`,
  );
  const { rows } = await stack.db.admin.query<{ 'QUERY PLAN': unknown }>(
    `explain (format json) ${DELETE_PUBLISHED_EVENTS_SQL}`,
    [7 * 86_400, 5_000],
  );
  const plan = JSON.stringify(rows[0]['QUERY PLAN']);
  expect(plan).toContain('ix_outbox_events_lane');
  expect(plan).toMatch(/ix_outbox_deliveries_(lane|published)/);
  expect(plan).not.toMatch(/Seq Scan[^}]*outbox_(events|deliveries)/);
});
