/**
 * The relay's statements on the insert-only outbox (migration 025; docs/DESIGN.md, "The relay's next outbox"):
 * a lane's try-lock, its batch below the horizon, the cursor's move, the batch's deliveries and the held keys.
 * Each takes a client so that a lane's pass runs them in one transaction: its lock, its reads and its writes
 * commit or roll back together.
 */
import { pinClaimPlan, type OutboxMessage } from './outbox';
import { LANE_SQL } from './lane-sql';
import type { Queryable } from './pool';

/** The advisory lock class of a lane's try-lock; the lane is the second key. */
const LANE_LOCK_CLASS = 48_022;

/** A place in a lane's (xid, id) order. `xid` is the xid8 as text: it does not fit a JavaScript number. */
export interface LanePosition {
  xid: string;
  id: string;
}

/** Where a lane starts: before every event. */
export const LANE_START: LanePosition = { xid: '0', id: '00000000-0000-0000-0000-000000000000' };

/** An event as the relay sends it, with its place in its lane. */
export interface LaneEvent extends OutboxMessage {
  /** The writing transaction's id (xid8, as text). */
  event_xid: string;
}

/**
 * Takes lane `lane` for the calling transaction, unless another transaction holds it.
 * @returns false when another relay loop has it: this pass does nothing with the lane.
 */
export async function tryLockLane(db: Queryable, lane: number): Promise<boolean> {
  const { rows } = await db.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1, $2) as ok', [
    LANE_LOCK_CLASS,
    lane,
  ]);
  return rows[0].ok;
}

/** The lane's cursor: the last event its relay published or held. */
export async function laneCursor(db: Queryable, lane: number): Promise<LanePosition> {
  const { rows } = await db.query<LanePosition>(
    'select xid::text as xid, id from profile.outbox_lanes where lane = $1',
    [lane],
  );
  if (rows.length === 0) throw new Error(`outbox lane ${lane} has no cursor row: is migration 025 applied?`);
  return rows[0];
}

/**
 * Pins the lane read's plan for the rest of the calling transaction: the lane's index in order, stopped at the
 * limit. Without it, statistics of a lane with a few thousand events chose a bitmap scan of the whole lane and
 * a sort (`outbox-lanes.test.ts`). The same settings as the old outbox's claim, for the same reason.
 */
export async function pinLanePlan(db: Queryable): Promise<void> {
  await pinClaimPlan(db);
}

/** The columns the relay sends, from `profile.outbox_events` aliased `e`: a lane's batch, and a held key's events. */
export const EVENT_COLUMNS = `e.id, e.aggregate_type, e.aggregate_id, e.topic, e.message_key, e.event_type,
  e.contract_version, e.payload::text as payload, e.correlation_id, 0 as attempts, e.trace_context,
  e.xid::text as event_xid`;

/**
 * The lane's batch (see {@link readLane}). Not `xid::text as xid`: ORDER BY would then take the output column,
 * sort the lane's events as text and read them all for each batch.
 */
const READ_LANE_SQL = `
  select ${EVENT_COLUMNS},
         exists (select 1 from profile.outbox_messages where published_at is null) as old_rows_waiting
    from profile.outbox_events e
   where ${LANE_SQL} = $1
     and (e.xid, e.id) > ($2::xid8, $3::uuid)
     and e.xid < pg_snapshot_xmin(pg_current_snapshot())
     and e.message_key not in (select message_key from profile.outbox_held where lane = $1)
   order by e.xid, e.id
   limit $4`;

/** A lane's batch, and whether the old outbox had rows not published yet when it was read. */
export interface LaneBatch {
  events: LaneEvent[];
  /**
   * True while `profile.outbox_messages` has a row not published yet (a deploy from the old outbox is not over):
   * only then are the batch's keys looked up there (`legacyKeys`). Read by the batch's own statement, once (an
   * uncorrelated subquery), so that a relay past the deploy spends no round trip on it.
   */
  oldRowsWaiting: boolean;
}

/**
 * Up to `limit` events of `lane` after `after`, in (xid, id) order, leaving out held keys' events (they are
 * published when their key is released). Only events of transactions older than every transaction still
 * running are read: such a transaction has ended, so no event can later appear before the last one read,
 * and moving the cursor past it skips nothing. Call {@link pinLanePlan} first in the transaction.
 */
export async function readLane(db: Queryable, lane: number, after: LanePosition, limit: number): Promise<LaneBatch> {
  const { rows } = await db.query<LaneEvent & { old_rows_waiting: boolean }>(READ_LANE_SQL, [
    lane,
    after.xid,
    after.id,
    limit,
  ]);
  return { events: rows, oldRowsWaiting: rows[0]?.old_rows_waiting ?? false };
}

/** The lane read's plan as PostgreSQL would run it now (for tests). */
export async function explainReadLane(db: Queryable, lane: number, limit: number): Promise<string> {
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain ${READ_LANE_SQL}`, [
    lane,
    LANE_START.xid,
    LANE_START.id,
    limit,
  ]);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/**
 * Moves the lane's cursor from `from` to `to`, in the transaction that holds the lane.
 * @throws Error when the cursor was not at `from`: something moved it without the lane's lock, and this
 *   transaction must not commit what it did from a stale cursor.
 */
export async function moveLane(db: Queryable, lane: number, from: LanePosition, to: LanePosition): Promise<void> {
  const { rowCount } = await db.query(
    `update profile.outbox_lanes set xid = $4::xid8, id = $5, moved_at = now()
      where lane = $1 and (xid, id) = ($2::xid8, $3::uuid)`,
    [lane, from.xid, from.id, to.xid, to.id],
  );
  if (rowCount !== 1) throw new Error(`outbox lane ${lane}'s cursor was moved by a relay that did not hold the lane`);
}

/** Consecutive offsets of one partition a batch appended: event i of `ids` sits at `baseOffset + i`. */
export interface DeliveryRun {
  topic: string;
  partition: number;
  baseOffset: string;
  ids: string[];
}

/**
 * Records where a batch of `lane` went, up to `last` (the last event it covered), one row a run.
 */
export async function insertDeliveries(
  db: Queryable,
  lane: number,
  last: LanePosition,
  runs: readonly DeliveryRun[],
): Promise<void> {
  if (runs.length === 0) return;
  await db.query(
    `insert into profile.outbox_deliveries (lane, last_xid, last_id, topic, partition, base_offset, ids)
     select $1, $2::xid8, $3, r.topic, r.partition, r.base_offset, array(select jsonb_array_elements_text(r.ids)::uuid)
       from jsonb_to_recordset($4::jsonb) as r(topic text, partition int, base_offset bigint, ids jsonb)`,
    [
      lane,
      last.xid,
      last.id,
      JSON.stringify(
        runs.map((r) => ({ topic: r.topic, partition: r.partition, base_offset: r.baseOffset, ids: r.ids })),
      ),
    ],
  );
}

/**
 * The cleanup's delete of events ($1 seconds, $2 rows): per lane, the events up to the last one a delivery older
 * than the retention covered (its cursor had passed them by then, so they were published that long ago), found
 * through the lane's index, never a held key's (its events wait for their release), deleted by ctid.
 */
export const DELETE_PUBLISHED_EVENTS_SQL = `delete from profile.outbox_events
  where ctid = any(array(
    select e.ctid
      from profile.outbox_lanes l
      cross join lateral (select d.last_xid, d.last_id from profile.outbox_deliveries d
                           where d.lane = l.lane and d.published_at < now() - make_interval(secs => $1)
                           order by d.last_xid desc, d.last_id desc limit 1) d
      cross join lateral (select e.ctid from profile.outbox_events e
                           where ${LANE_SQL} = l.lane and (e.xid, e.id) <= (d.last_xid, d.last_id)
                             and e.message_key not in (select message_key from profile.outbox_held)
                           limit $2) e
     limit $2))`;

/** Deletes up to `limit` events published more than `olderThanSeconds` ago; returns how many. */
export async function deletePublishedEvents(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(DELETE_PUBLISHED_EVENTS_SQL, [olderThanSeconds, limit]);
  return rowCount ?? 0;
}

/**
 * Deletes up to `limit` deliveries older than `olderThanSeconds` (after {@link deletePublishedEvents}, which
 * reads the newest of them as its bound); returns how many.
 */
export async function deleteOldDeliveries(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from profile.outbox_deliveries
      where ctid = any(array(select ctid from profile.outbox_deliveries
                              where published_at < now() - make_interval(secs => $1) limit $2))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
