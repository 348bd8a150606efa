/**
 * Baseline B of the benchmark (issue 7): what the database alone can do. ONE statement per page does the
 * whole claim: the keyset page of candidate documents (the same predicate as `selectCandidatePage`), its
 * distinct owners, all due documents of those owners, markers for every crossed threshold
 * (`ON CONFLICT DO NOTHING`), and one outbox row per owner that won at least one current-threshold marker.
 * Same ledger/outbox rows as the per-owner statement; no advisory locks (a single claimer).
 */
import { CURRENT_THRESHOLD_SQL, type CandidateWindow } from '../src/db/candidates';
import type { Queryable } from '../src/db/pool';
import type { PageCursor } from '../src/domain/cycle';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../src/names';

export interface ClaimPageResult {
  documentCount: number;
  owners: number;
  markersInserted: number;
  remindersSent: number;
  ownersNotified: number;
  next: PageCursor | null;
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

export async function claimPage(
  db: Queryable,
  window: CandidateWindow,
  cursor: PageCursor | null,
  batchSize: number,
  asOf: string,
  correlationId: string,
): Promise<ClaimPageResult> {
  const { rows } = await db.query<{
    page_count: number;
    last_expires_at: string | null;
    last_id: string | null;
    owners: number;
    inserted: number;
    won: number;
    events: number;
  }>(
    `with page as materialized (
       select d.id, d.owner_user_id, d.expires_at
         from profile.person_documents d
        where d.expires_at is not null
          and d.expires_at >= $1::date - $3::int
          and d.expires_at <= $1::date + (select max(t) from unnest($2::int[]) as t)
          and (d.expires_at, d.id) > ($4::date, $5::uuid)
          and d.status = 'Active'
          and not d.is_deleted
          and not exists (
            select 1 from profile.document_expiry_reminders r
             where r.document_id = d.id
               and r.threshold_days = ${CURRENT_THRESHOLD_SQL('d', '$1', '$2')})
        order by d.expires_at, d.id
        limit $6
     ),
     last_row as (select expires_at, id from page order by expires_at desc, id desc limit 1),
     owners as (select distinct owner_user_id from page),
     candidates as (
       select d.id, d.owner_user_id, d.type, d.number_mask, d.expires_at,
              d.expires_at - $1::date as days_left,
              ${CURRENT_THRESHOLD_SQL('d', '$1', '$2')} as current_threshold
         from owners o
         join profile.person_documents d on d.owner_user_id = o.owner_user_id
        where d.expires_at is not null
          and d.expires_at >= $1::date - $3::int
          and d.expires_at <= $1::date + (select max(t) from unnest($2::int[]) as t)
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
       select gen_random_uuid(), due.id, due.owner_user_id, due.type, t, due.expires_at, $7::timestamptz
         from due cross join unnest($2::int[]) as t
        where due.days_left <= t
       on conflict (document_id, threshold_days) do nothing
       returning document_id, threshold_days
     ),
     won as (
       select due.* from due
         join marks on marks.document_id = due.id and marks.threshold_days = due.current_threshold
     ),
     events as (
       insert into profile.outbox_messages
              (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
               correlation_id)
       select gen_random_uuid(), $8, won.owner_user_id, $9, won.owner_user_id::text, $10, $11,
              jsonb_build_object(
                'ownerUserId', won.owner_user_id::text,
                'remindedAt', $7::text,
                'documents', jsonb_agg(jsonb_build_object(
                  'documentId', won.id,
                  'type', won.type,
                  'numberMask', won.number_mask,
                  'expiresAt', won.expires_at,
                  'thresholdDays', won.current_threshold,
                  'daysLeft', won.days_left) order by won.expires_at, won.id)),
              $12
         from won
        group by won.owner_user_id
       returning 1
     )
     select (select count(*)::int from page) as page_count,
            (select expires_at from last_row) as last_expires_at,
            (select id from last_row) as last_id,
            (select count(*)::int from owners) as owners,
            (select count(*)::int from marks) as inserted,
            (select count(*)::int from won) as won,
            (select count(*)::int from events) as events`,
    [
      window.asOfDate,
      window.thresholdsDays,
      window.retentionDays,
      cursor?.expiresAt ?? '-infinity',
      cursor?.id ?? NIL_UUID,
      batchSize,
      asOf,
      AGGREGATE_TYPE,
      TOPIC,
      EVENT_TYPE,
      CONTRACT_VERSION,
      correlationId,
    ],
  );
  const r = rows[0];
  return {
    documentCount: r.page_count,
    owners: r.owners,
    markersInserted: r.inserted,
    remindersSent: r.won,
    ownersNotified: r.events,
    next: r.page_count === batchSize && r.last_id ? { expiresAt: r.last_expires_at!, id: r.last_id } : null,
  };
}
