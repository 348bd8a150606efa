/** The relay's statements on `profile.outbox_messages` (docs/DESIGN.md#tables); it connects as `outbox_relay`. */
import type { Queryable } from './pool';

/** The channel the outbox trigger notifies on commit. */
export const OUTBOX_CHANNEL = 'profile_outbox_messages';

/** Keys with a parked row; a hashed subplan over `ix_outbox_messages_parked`, empty on a healthy day. */
const PARKED_KEYS_SQL = `select message_key from profile.outbox_messages where published_at is null and parked_at is not null`;

export interface OutboxMessage {
  id: string;
  aggregate_type: string;
  aggregate_id: string;
  topic: string;
  message_key: string;
  event_type: string;
  contract_version: number;
  /** The jsonb as PostgreSQL prints it, sent unparsed: parsing costs CPU (bench/REPORT-HISTORY.md#relay-issue-12). */
  payload: string;
  correlation_id: string;
  attempts: number;
  /** W3C traceparent of the owner transaction that wrote the row, when it was traced. */
  trace_context: string | null;
}

/**
 * Pins the claim's plan for the rest of the calling transaction: walk `ix_outbox_messages_claimable` in
 * order and stop at the limit, then look each claimed row's key up in `ix_outbox_messages_unpublished_key`.
 * A queue's statistics are wrong most of the time, so only a pinned plan costs the same whatever the backlog
 * (docs/DESIGN.md#relay-at-least-once-in-order-per-key). `test/integration/relay-claim-plan.test.ts` checks
 * the plan under three kinds of statistics.
 */
export async function pinClaimPlan(db: Queryable): Promise<void> {
  await db.query('set local enable_seqscan = off; set local enable_bitmapscan = off; set local enable_sort = off');
}

/** The columns of an {@link OutboxMessage}, the payload as text; for anything that sends what the relay sends. */
export const OUTBOX_MESSAGE_COLUMNS = `id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version,
  payload::text as payload, correlation_id, attempts, trace_context`;

/** The claim (see {@link claimUnpublished}); one constant so that its plan can be explained as it runs. */
const CLAIM_SQL = `
  with batch as materialized (
    select ${OUTBOX_MESSAGE_COLUMNS}, created_at
      from profile.outbox_messages
     where published_at is null
       and parked_at is null
       and message_key not in (${PARKED_KEYS_SQL})
     order by created_at, id
     limit $1
       for update skip locked
  )
  select id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
         correlation_id, attempts, trace_context
    from batch b
   -- A scalar subquery, not NOT EXISTS: the planner may turn NOT EXISTS into a join and then scan every
   -- unpublished row for each batch row; a subquery runs per row, as a key lookup.
   where (select 1 from profile.outbox_messages e
           where e.message_key = b.message_key
             and e.published_at is null
             and (e.created_at, e.id) < (b.created_at, b.id)
             and e.id not in (select id from batch)
           limit 1) is null
   -- The deploy to the insert-only outbox (migration 025): an owner's event written there before this row, and
   -- not published yet (after its lane's cursor, or held), goes first.
   and (select 1 from profile.outbox_events_pending ev
         where ev.message_key = b.message_key and ev.created_at < b.created_at
         limit 1) is null
   order by created_at, id`;

/**
 * Locks up to `limit` unpublished rows, oldest first, for the calling transaction, skipping rows another
 * relay holds (`SKIP LOCKED`) and the rows of keys with a parked row (docs/DESIGN.md#relay-poison-rows):
 * those wait behind it, and leaving them out before the limit keeps them from filling every batch.
 *
 * A row is left out when an earlier unpublished row of the same key is not in this batch (another relay
 * holds it, or it lies past the limit): so two relays never have rows of one key in flight at once, and
 * per-key order holds across any number of relays. The check reads the statement's snapshot, which
 * still shows as unpublished any row another relay publishes while this statement runs. A row also waits for
 * an earlier event of its key in the insert-only outbox (migration 025) that is not published yet: during the
 * deploy that moves the worker there, relays of this version keep an owner's events in commit order across both.
 */
export async function claimUnpublished(db: Queryable, limit: number): Promise<OutboxMessage[]> {
  const { rows } = await db.query<OutboxMessage>(CLAIM_SQL, [limit]);
  return rows;
}

/** The claim's plan as PostgreSQL would run it now, in the calling transaction's settings (for tests). */
export async function explainClaim(db: Queryable, limit: number): Promise<string> {
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain ${CLAIM_SQL}`, [limit]);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/** Where Kafka appended a row (see the relay's delivery): partition and offset. */
export interface PublishedPlacement {
  partition: number;
  offset: string;
}

/**
 * Marks claimed rows published (and counts the attempt), with the partition and offset Kafka gave each
 * (migration 015); a row without a placement keeps them null.
 */
export async function markPublished(
  db: Queryable,
  ids: readonly string[],
  placements: ReadonlyMap<string, PublishedPlacement> = new Map(),
): Promise<void> {
  await db.query(
    `update profile.outbox_messages o
        set published_at = now(), attempts = o.attempts + 1, last_error = null,
            published_partition = p.partition, published_offset = p.kafka_offset
       from unnest($1::uuid[], $2::int[], $3::bigint[]) as p(id, partition, kafka_offset)
      where o.id = p.id`,
    [ids, ids.map((id) => placements.get(id)?.partition ?? null), ids.map((id) => placements.get(id)?.offset ?? null)],
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

/** A row Kafka refused when it was sent on its own, and why. */
export interface Rejection {
  id: string;
  error: string;
}

/**
 * Records refusals of rows sent on their own: `attempts` and `rejections` grow, the refusal becomes
 * `last_error`, and a row refused `maxRejections` times is parked (the claim leaves it and its key alone).
 * @returns the ids this call parked.
 */
export async function markRejected(
  db: Queryable,
  rejections: readonly Rejection[],
  maxRejections: number,
): Promise<string[]> {
  if (rejections.length === 0) return [];
  const { rows } = await db.query<{ id: string; parked: boolean }>(
    `update profile.outbox_messages o
        set attempts = o.attempts + 1,
            rejections = o.rejections + 1,
            last_error = left(r.error, 2000),
            parked_at = case when o.rejections + 1 >= $3 then now() end
       from unnest($1::uuid[], $2::text[]) as r(id, error)
      where o.id = r.id
     returning o.id, o.parked_at is not null as parked`,
    [rejections.map((r) => r.id), rejections.map((r) => r.error), maxRejections],
  );
  return rows.filter((r) => r.parked).map((r) => r.id);
}

/**
 * The cleanup's delete ($1 seconds, $2 rows): the rows past retention through `ix_outbox_messages_published`
 * (migration 012), deleted by ctid, since `id in (…)` made the planner scan the whole table
 * (bench/REPORT-HISTORY.md#relay-cleanup-at-1m-published-rows-issue-19-item-4).
 */
export const DELETE_PUBLISHED_SQL = `delete from profile.outbox_messages
  where ctid = any(array(select ctid from profile.outbox_messages
                          where published_at < now() - make_interval(secs => $1)
                          limit $2))`;

/** Deletes up to `limit` rows published before `olderThanSeconds` ago; returns how many. */
export async function deletePublished(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(DELETE_PUBLISHED_SQL, [olderThanSeconds, limit]);
  return rowCount ?? 0;
}

/** What the relay's gauges show; see {@link outboxBacklog}. */
export interface OutboxBacklog {
  /** Unpublished rows that are not parked (those waiting behind a parked row included). */
  count: number;
  /** Parked rows: refused by Kafka `RELAY_MAX_ATTEMPTS` times, left until `outbox retry`. */
  parked: number;
  /** Rows of `count` held back by a parked row of their key: the reminders a parked row delays. */
  waitingBehindParked: number;
  /**
   * Age of the oldest row the relay could publish now: neither parked nor behind a parked row of its key,
   * so the lag measures the relay, and a parked row raises its own alert instead of this one.
   */
  oldestAgeSeconds: number;
}

/** Backlog, parked rows and lag in one pass over the unpublished rows, for progress lines and metrics. */
export async function outboxBacklog(db: Queryable): Promise<OutboxBacklog> {
  const { rows } = await db.query<{ count: number; parked: number; waiting: number; oldest: number | null }>(
    `select count(*) filter (where parked_at is null)::int as count,
            count(*) filter (where parked_at is not null)::int as parked,
            count(*) filter (where parked_at is null and message_key in (${PARKED_KEYS_SQL}))::int as waiting,
            extract(epoch from now() - min(created_at) filter (
              where parked_at is null and message_key not in (${PARKED_KEYS_SQL})))::float8 as oldest
       from profile.outbox_messages where published_at is null`,
  );
  return {
    count: rows[0].count,
    parked: rows[0].parked,
    waitingBehindParked: rows[0].waiting,
    oldestAgeSeconds: rows[0].oldest ?? 0,
  };
}
