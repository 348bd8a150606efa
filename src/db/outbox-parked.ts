/**
 * The operator's statements on parked outbox rows (docs/DESIGN.md#relay-poison-rows), as the relay's role
 * `outbox_relay`: list them (never the payload, which holds document masks) and un-park them. A parked row is a
 * row of the old outbox (`outbox_messages`) or the event a parked key of the insert-only one is held at
 * (`outbox_held`, migration 025); the commands take both, by the event's id.
 */
import { OUTBOX_CHANNEL } from './outbox';
import type { Queryable } from './pool';

/** A parked row as `outbox parked` shows it: who and what failed, without the payload. */
export interface ParkedRow {
  id: string;
  messageKey: string;
  correlationId: string;
  createdAt: Date;
  parkedAt: Date;
  /** Every try, batch failures (Kafka unreachable, timeouts) included. */
  attempts: number;
  /** Tries on its own that Kafka refused; the row was parked when they reached RELAY_MAX_ATTEMPTS. */
  rejections: number;
  lastError: string | null;
  /** Times an operator un-parked the row (`outbox retry`); `attempts` goes on counting across them. */
  retries: number;
  lastRetriedAt: Date | null;
  /** Later unpublished rows of the same key, waiting behind this one. */
  waitingBehind: number;
}

/** Parked rows of both outboxes, oldest first. */
export async function selectParked(db: Queryable, limit: number): Promise<ParkedRow[]> {
  const { rows } = await db.query<ParkedRow>(
    `select * from (
       select p.id, p.message_key as "messageKey", p.correlation_id as "correlationId", p.created_at as "createdAt",
              p.parked_at as "parkedAt", p.attempts, p.rejections, p.last_error as "lastError",
              p.retries, p.last_retried_at as "lastRetriedAt",
              (select count(*)::int from profile.outbox_messages w
                where w.message_key = p.message_key and w.published_at is null
                  and (w.created_at, w.id) > (p.created_at, p.id)) as "waitingBehind"
         from profile.outbox_messages p
        where p.published_at is null and p.parked_at is not null
       union all
       select h.id, h.message_key, e.correlation_id, e.created_at, h.parked_at, h.attempts, h.rejections, h.last_error,
              h.retries, h.last_retried_at,
              (select count(*)::int from profile.outbox_events w
                where w.message_key = h.message_key and (w.xid, w.id) > (h.xid, h.id))
         from profile.outbox_held h join profile.outbox_events e on e.id = h.id
        where h.parked_at is not null) parked
      order by "createdAt", id
      limit $1`,
    [limit],
  );
  return rows;
}

/** What un-parking one row found. */
export type RetryOutcome = 'retried' | 'not-parked' | 'published' | 'unknown';

/**
 * What un-parking does to a row: the relay tries it again (and then the rows waiting behind it), with its
 * refusals counted from 0 towards the next parking. `attempts` and `last_error` stay, so the row's history
 * does; `retries` and `last_retried_at` record the retry.
 */
const UNPARK_SET = 'parked_at = null, rejections = 0, retries = retries + 1, last_retried_at = now()';

/** Un-parks one row of either outbox (see {@link unparkOneRow}, {@link unparkOneEvent}). */
export async function unparkOne(db: Queryable, id: string): Promise<RetryOutcome> {
  const outcome = await unparkOneRow(db, id);
  return outcome === 'unknown' ? unparkOneEvent(db, id) : outcome;
}

/**
 * Un-parks the key held at event `id` of the insert-only outbox: its relay sends the key's events again now,
 * its refusals counted from 0, `retries` and `last_retried_at` recording the retry. Says why when nothing
 * changed: the event is not a held key's (`published` when its lane's cursor passed it and its key is not held
 * from an earlier event, else `not-parked`).
 */
async function unparkOneEvent(db: Queryable, id: string): Promise<RetryOutcome> {
  const { rows } = await db.query<{ held: boolean; retried: boolean; passed: boolean | null }>(
    `with target as (select message_key, parked_at from profile.outbox_held where id = $1),
          retried as (
            update profile.outbox_held h
               set parked_at = null, rejections = 0, retries = retries + 1, last_retried_at = now(), retry_at = now()
              from target t
             where h.message_key = t.message_key and t.parked_at is not null
            returning h.id)
     select exists (select 1 from target) as held, exists (select 1 from retried) as retried,
            (select not exists (select 1 from profile.outbox_events_pending p where p.id = e.id)
               from profile.outbox_events e where e.id = $1) as passed`,
    [id],
  );
  const r = rows[0];
  if (r.retried) return 'retried';
  if (r.held) return 'not-parked';
  if (r.passed === null) return 'unknown';
  return r.passed ? 'published' : 'not-parked';
}

/** Un-parks one row of the old outbox ({@link UNPARK_SET}). Says why when nothing changed. */
async function unparkOneRow(db: Queryable, id: string): Promise<RetryOutcome> {
  const { rows } = await db.query<{ published: boolean; retried: boolean }>(
    `with target as (select id, published_at, parked_at from profile.outbox_messages where id = $1),
          retried as (
            update profile.outbox_messages o set ${UNPARK_SET}
              from target t
             where o.id = t.id and t.published_at is null and t.parked_at is not null
            returning o.id)
     select t.published_at is not null as published, exists (select 1 from retried) as retried from target t`,
    [id],
  );
  if (!rows[0]) return 'unknown';
  return rows[0].retried ? 'retried' : rows[0].published ? 'published' : 'not-parked';
}

/** Un-parks every parked row of both outboxes (as {@link unparkOne}); returns their ids. */
export async function unparkAll(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `with rows as (
       update profile.outbox_messages set ${UNPARK_SET}
        where published_at is null and parked_at is not null
       returning id),
     keys as (
       update profile.outbox_held
          set parked_at = null, rejections = 0, retries = retries + 1, last_retried_at = now(), retry_at = now()
        where parked_at is not null
       returning id)
     select id from rows union all select id from keys`,
  );
  return rows.map((r) => r.id);
}

/** Wakes the relays at commit, as new rows do, so un-parked rows go out now rather than at the next poll. */
export async function notifyRelays(db: Queryable): Promise<void> {
  await db.query(`select pg_notify($1, '')`, [OUTBOX_CHANNEL]);
}
