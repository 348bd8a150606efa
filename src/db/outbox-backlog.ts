/**
 * The relay's gauges over both outboxes: the old one (`outbox_messages`) and the insert-only one (migration 025).
 */
import { outboxBacklog, type OutboxBacklog } from './outbox';
import type { Queryable } from './pool';

/**
 * The insert-only outbox's share of {@link OutboxBacklog}, over its unpublished events
 * (`profile.outbox_events_pending`, migration 026): a parked key's held event counts as parked, the later
 * events of a parked key as waiting behind it, and the lag is the oldest event neither parked nor behind a
 * parked event.
 */
export async function eventsBacklog(db: Queryable): Promise<OutboxBacklog> {
  const { rows } = await db.query<{ count: number; parked: number; waiting: number; oldest: number | null }>(
    `with parked as (select message_key from profile.outbox_held where parked_at is not null)
     select count(*) filter (where not (held_event and message_key in (select message_key from parked)))::int as count,
            (select count(*) from parked)::int as parked,
            count(*) filter (where not held_event and message_key in (select message_key from parked))::int as waiting,
            extract(epoch from now() - min(created_at) filter (
              where message_key not in (select message_key from parked)))::float8 as oldest
       from profile.outbox_events_pending`,
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
