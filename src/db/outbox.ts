/** The relay's statements on `profile.outbox_messages` (docs/DESIGN.md#tables); it connects as `outbox_relay`. */
import type { Queryable } from './pool';

/** The channel the outbox trigger notifies on commit. */
export const OUTBOX_CHANNEL = 'profile_outbox_messages';

export interface OutboxMessage {
  id: string;
  aggregate_type: string;
  aggregate_id: string;
  topic: string;
  message_key: string;
  event_type: string;
  contract_version: number;
  payload: unknown;
  correlation_id: string;
  attempts: number;
  /** W3C traceparent of the owner transaction that wrote the row, when it was traced. */
  trace_context: string | null;
}

/**
 * Locks up to `limit` unpublished rows, oldest first, for the calling transaction, skipping rows another
 * relay holds (`SKIP LOCKED`).
 *
 * A row is left out when an earlier unpublished row of the same key is not in this batch (another relay
 * holds it, or it lies past the limit): so two relays never have rows of one key in flight at once, and
 * per-key order holds across any number of relays. The check reads the statement's snapshot, which
 * still shows as unpublished any row another relay publishes while this statement runs.
 */
export async function claimUnpublished(db: Queryable, limit: number): Promise<OutboxMessage[]> {
  const { rows } = await db.query<OutboxMessage>(
    `with batch as materialized (
       select id, message_key, created_at
         from profile.outbox_messages
        where published_at is null
        order by created_at, id
        limit $1
          for update skip locked
     )
     select o.id, o.aggregate_type, o.aggregate_id, o.topic, o.message_key, o.event_type, o.contract_version,
            o.payload, o.correlation_id, o.attempts, o.trace_context
       from batch b
       join profile.outbox_messages o on o.id = b.id
      where not exists (
        select 1 from profile.outbox_messages e
         where e.message_key = b.message_key
           and e.published_at is null
           and (e.created_at, e.id) < (b.created_at, b.id)
           and e.id not in (select id from batch))
      order by b.created_at, b.id`,
    [limit],
  );
  return rows;
}

/** Marks claimed rows published (and counts the attempt). */
export async function markPublished(db: Queryable, ids: readonly string[]): Promise<void> {
  await db.query(
    `update profile.outbox_messages
        set published_at = now(), attempts = attempts + 1, last_error = null
      where id = any($1::uuid[])`,
    [ids],
  );
}

/** Records a failed attempt on claimed rows; they stay unpublished for the next try. */
export async function markFailed(db: Queryable, ids: readonly string[], error: string): Promise<void> {
  await db.query(
    `update profile.outbox_messages
        set attempts = attempts + 1, last_error = left($2, 2000)
      where id = any($1::uuid[])`,
    [ids, error],
  );
}

/** Deletes up to `limit` rows published before `olderThanSeconds` ago; returns how many. */
export async function deletePublished(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from profile.outbox_messages
      where id in (select id from profile.outbox_messages
                    where published_at < now() - make_interval(secs => $1)
                    limit $2)`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/** Unpublished rows and the age of the oldest, for progress lines and metrics. */
export async function outboxBacklog(db: Queryable): Promise<{ count: number; oldestAgeSeconds: number }> {
  const { rows } = await db.query<{ count: number; oldest: number | null }>(
    `select count(*)::int as count,
            extract(epoch from now() - min(created_at))::float8 as oldest
       from profile.outbox_messages where published_at is null`,
  );
  return { count: rows[0].count, oldestAgeSeconds: rows[0].oldest ?? 0 };
}
