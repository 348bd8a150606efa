/** SPEC §3.2 and §3.3: the owner's marker-plus-outbox statement, the owner lock, and the prune. */
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../names';
import { CURRENT_THRESHOLD_SQL, type CandidateWindow } from './candidates';
import type { Queryable } from './pool';

/** A document this owner transaction won the current-threshold marker for. No document values. */
export interface WonDocument {
  documentId: string;
  type: string;
  thresholdDays: number;
  daysLeft: number;
}

export interface OwnerStatementResult {
  /** Documents due at the statement's snapshot (no marker for their current threshold). */
  due: number;
  /** Markers inserted, the silent ones for less urgent crossed thresholds included. */
  markersInserted: number;
  /** Due documents whose current-threshold marker another transaction won first. */
  lostToOthers: number;
  won: WonDocument[];
}

/**
 * Takes a transaction-scoped advisory lock on the owner without waiting. False means another
 * transaction (a parallel instance, or this cycle's own second look at the owner) holds it right now;
 * the caller skips the owner, as the seed skips rows locked by a parallel instance. The key is the
 * first 64 bits of the owner uuid, so no table privilege is needed and collisions are negligible.
 */
export async function tryLockOwner(db: Queryable, ownerUserId: string): Promise<boolean> {
  const { rows } = await db.query<{ locked: boolean }>(
    `select pg_try_advisory_xact_lock(('x' || left(replace($1::uuid::text, '-', ''), 16))::bit(64)::bigint) as locked`,
    [ownerUserId],
  );
  return rows[0].locked;
}

export interface OwnerStatementParams extends CandidateWindow {
  ownerUserId: string;
  /** AsOf as an ISO instant: `reminded_at` of the markers and `remindedAt` of the event. */
  asOf: string;
  correlationId: string;
  /** W3C traceparent of the owner span, stored with the event for the relay's span. */
  traceContext?: string;
}

/**
 * One set-based statement for one owner: finds the owner's due documents, inserts markers for every
 * crossed threshold (`ON CONFLICT DO NOTHING`), and when this statement won the current-threshold marker
 * of at least one document, inserts one outbox row listing exactly those documents. Run it inside the
 * owner's transaction so markers and event commit together.
 */
export async function markAndEnqueueOwner(db: Queryable, p: OwnerStatementParams): Promise<OwnerStatementResult> {
  const { rows } = await db.query<{ due: number; inserted: number; won: WonDocument[] }>(
    `with candidates as (
       select d.id, d.type, d.number_mask, d.expires_at,
              d.expires_at - $2::date as days_left,
              ${CURRENT_THRESHOLD_SQL('d', '$2', '$3')} as current_threshold
         from profile.person_documents d
        where d.owner_user_id = $1
          and d.expires_at is not null
          and d.expires_at >= $2::date - $4::int
          and d.expires_at <= $2::date + (select max(t) from unnest($3::int[]) as t)
          and d.status = 'Active'
          and not d.is_deleted
     ),
     due as (
       select c.* from candidates c
        where not exists (
          select 1 from profile.document_expiry_reminders r
           where r.document_id = c.id and r.threshold_days = c.current_threshold)
     ),
     marks as (
       insert into profile.document_expiry_reminders
              (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
       select gen_random_uuid(), due.id, $1, due.type, t, due.expires_at, $5::timestamptz
         from due cross join unnest($3::int[]) as t
        where due.days_left <= t
       on conflict (document_id, threshold_days) do nothing
       returning document_id, threshold_days
     ),
     won as (
       select due.* from due
         join marks on marks.document_id = due.id and marks.threshold_days = due.current_threshold
     ),
     event as (
       insert into profile.outbox_messages
              (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
               correlation_id, trace_context)
       select gen_random_uuid(), $7, $1, $8, $1::text, $9, $10,
              jsonb_build_object(
                'ownerUserId', $1::text,
                'remindedAt', $6::text,
                'documents', jsonb_agg(jsonb_build_object(
                  'documentId', won.id,
                  'type', won.type,
                  'numberMask', won.number_mask,
                  'expiresAt', won.expires_at,
                  'thresholdDays', won.current_threshold,
                  'daysLeft', won.days_left) order by won.expires_at, won.id)),
              $11, $12
         from won
       having count(*) > 0
     )
     select (select count(*)::int from due) as due,
            (select count(*)::int from marks) as inserted,
            coalesce((select jsonb_agg(jsonb_build_object(
                        'documentId', won.id, 'type', won.type,
                        'thresholdDays', won.current_threshold, 'daysLeft', won.days_left)
                        order by won.expires_at, won.id) from won), '[]'::jsonb) as won`,
    [
      p.ownerUserId,
      p.asOfDate,
      p.thresholdsDays,
      p.retentionDays,
      p.asOf,
      p.asOf,
      AGGREGATE_TYPE,
      TOPIC,
      EVENT_TYPE,
      CONTRACT_VERSION,
      p.correlationId,
      p.traceContext ?? null,
    ],
  );
  const { due, inserted, won } = rows[0];
  return { due, markersInserted: inserted, lostToOthers: due - won.length, won };
}

/**
 * Deletes up to `limit` ledger rows whose document expired before `cutoffDate`.
 * @returns how many rows it deleted; fewer than `limit` means nothing is left to prune.
 */
export async function deleteExpiredMarkers(db: Queryable, cutoffDate: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from profile.document_expiry_reminders
      where id in (select id from profile.document_expiry_reminders
                    where expires_at < $1::date
                    limit $2)`,
    [cutoffDate, limit],
  );
  return rowCount ?? 0;
}
