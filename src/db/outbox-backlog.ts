/**
 * The relay's gauges over both outboxes: the old one (`outbox_messages`) and the insert-only one (migration 025),
 * whose unpublished events are those after their lane's cursor and those of held keys from their hold on.
 */
import { LANE_SQL } from './lane-sql';
import { outboxBacklog, type OutboxBacklog } from './outbox';
import type { Queryable } from './pool';

/**
 * The insert-only outbox's share of {@link OutboxBacklog}: a parked key's held event counts as parked, the later
 * events of a parked key as waiting behind it, and the lag is the oldest event neither parked nor behind a
 * parked event. Reads the events after each lane's cursor (the backlog) and the held keys' events.
 */
export async function eventsBacklog(db: Queryable): Promise<OutboxBacklog> {
  const { rows } = await db.query<{ count: number; parked: number; waiting: number; oldest: number | null }>(
    `with parked as (select message_key from profile.outbox_held where parked_at is not null),
          unpublished as (
            select e.message_key, e.created_at, false as held_at
              from profile.outbox_lanes l
              cross join lateral (select message_key, created_at from profile.outbox_events
                                   where ${LANE_SQL} = l.lane and (xid, id) > (l.xid, l.id)) e
            union all
            select h.message_key, e.created_at, (e.xid, e.id) = (h.xid, h.id)
              from profile.outbox_held h
              join profile.outbox_lanes l on l.lane = h.lane
              cross join lateral (select xid, id, created_at from profile.outbox_events e
                                   where e.message_key = h.message_key
                                     and (e.xid, e.id) >= (h.xid, h.id) and (e.xid, e.id) <= (l.xid, l.id)) e)
     select count(*) filter (where not (held_at and message_key in (select message_key from parked)))::int as count,
            (select count(*) from parked)::int as parked,
            count(*) filter (where not held_at and message_key in (select message_key from parked))::int as waiting,
            extract(epoch from now() - min(created_at) filter (
              where message_key not in (select message_key from parked)))::float8 as oldest
       from unpublished`,
  );
  return {
    count: rows[0].count,
    parked: rows[0].parked,
    waitingBehindParked: rows[0].waiting,
    oldestAgeSeconds: Math.max(0, rows[0].oldest ?? 0),
  };
}

/** What the relay's gauges show: {@link outboxBacklog} and {@link eventsBacklog} together. */
export async function relayBacklog(db: Queryable): Promise<OutboxBacklog> {
  const [legacy, events] = [await outboxBacklog(db), await eventsBacklog(db)];
  return {
    count: legacy.count + events.count,
    parked: legacy.parked + events.parked,
    waitingBehindParked: legacy.waitingBehindParked + events.waitingBehindParked,
    oldestAgeSeconds: Math.max(legacy.oldestAgeSeconds, events.oldestAgeSeconds),
  };
}
