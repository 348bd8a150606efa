/**
 * docs/DESIGN.md#owner-transaction, #prune: the owner's marker-plus-outbox CTEs, which the claim's statement
 * (src/activities/claim/sql/claim-owners.ts), `cycle preview` and the benchmark's baselines share, and the
 * prune. One file because they are the statements that write the reminder ledger, and they share its "due"
 * and window rules.
 */
import { currentThresholdSql, notRemindedSql, ownerInWindowSql } from './candidates';
import type { Queryable } from './pool';

/** A document this owner transaction won the current-threshold marker for. No document values. */
export interface WonDocument {
  documentId: string;
  type: string;
  thresholdDays: number;
  daysLeft: number;
}

/** Where a statement keeps the claim's parameters (`$n`), so statements of other shapes can share it. */
export interface ClaimPlaceholders {
  asOfDate: string;
  thresholds: string;
  retentionDays: string;
  /** AsOf, read as `timestamptz` for `reminded_at`. */
  asOf: string;
  /** AsOf again, read as text for the event's `remindedAt`. */
  asOfText: string;
  aggregateType: string;
  topic: string;
  eventType: string;
  contractVersion: string;
  jobRunId: string;
  traceContext: string;
  queuedBy: string;
}

/**
 * The read half of the claim for the owners of relation `owners` (any relation with an `owner_user_id`
 * column), as the CTEs `candidates` (their documents in the window, with DaysLeft and the current
 * threshold) and `due` (those not reminded at or below their current threshold): the scan's predicate,
 * per owner. `cycle preview` runs it alone; {@link claimCtes} writes after it.
 */
export function dueCtes(
  owners: string,
  $: Pick<ClaimPlaceholders, 'asOfDate' | 'thresholds' | 'retentionDays'>,
): string {
  return `candidates as (
       select d.id, d.owner_user_id, d.type, d.number_mask, d.expires_at,
              d.expires_at - ${$.asOfDate}::date as days_left,
              ${currentThresholdSql('d', $.asOfDate, $.thresholds)} as current_threshold
         from ${owners} o
         join profile.person_documents d on d.owner_user_id = o.owner_user_id
        where ${ownerInWindowSql('d', $.asOfDate, $.thresholds, $.retentionDays)}
     ),
     due as (
       select c.* from candidates c
        where ${notRemindedSql('c', 'c.current_threshold')}
     )`;
}

/**
 * The claim for the owners of relation `owners`: {@link dueCtes}, then the CTEs `marks` (every crossed
 * threshold of the due documents, `ON CONFLICT DO NOTHING`, returning what was inserted), `won` (due
 * documents whose current-threshold marker this statement inserted) and `events` (one outbox row per owner
 * that won anything; it returns nothing, since the worker's role may insert outbox rows but not read
 * them). The claim's statement (`claimLockedOwners`) and the benchmark's one-statement baseline share it, so they cannot
 * drift apart. `ordered`: markers are inserted in (document, threshold) order, for claimers that hold no owner
 * locks (the benchmark's B∥): two that meet in the unique index then wait for each other in one order and never
 * deadlock (PostgreSQL finds a deadlock only after `deadlock_timeout`, 1 s, and fails one of them).
 */
export function claimCtes(
  owners: string,
  $: ClaimPlaceholders,
  { ordered = false }: { ordered?: boolean } = {},
): string {
  return `${dueCtes(owners, $)},
     marks as (
       insert into profile.document_expiry_reminders
              (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at, queued_by)
       select profile.time_ordered_uuid(), due.id, due.owner_user_id, due.type, t, due.expires_at, ${$.asOf}::timestamptz,
              ${$.queuedBy}::text
         from due cross join unnest(${$.thresholds}::int[]) as t
        where due.days_left <= t${ordered ? '\n        order by due.id, t' : ''}
       on conflict (document_id, threshold_days) do nothing
       returning document_id, threshold_days, owner_user_id
     ),
     won as (
       select due.* from due
         join marks on marks.document_id = due.id and marks.threshold_days = due.current_threshold
     ),
     events as (
       insert into profile.outbox_events
              (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
               correlation_id, trace_context, created_at)
       select profile.time_ordered_uuid(), ${$.aggregateType}, won.owner_user_id, ${$.topic}, won.owner_user_id::text,
              ${$.eventType}, ${$.contractVersion},
              jsonb_build_object(
                'ownerUserId', won.owner_user_id::text,
                'remindedAt', ${$.asOfText}::text,
                'documents', jsonb_agg(jsonb_build_object(
                  'documentId', won.id,
                  'type', won.type,
                  'numberMask', won.number_mask,
                  'expiresAt', won.expires_at,
                  'thresholdDays', won.current_threshold,
                  'daysLeft', won.days_left) order by won.expires_at, won.id)),
              ${$.jobRunId}, ${$.traceContext},
              -- The time of the insert, which runs under the owner's lock, not the transaction's start: a
              -- transaction that began before another of this owner but locked after it committed must sort
              -- after that one's row, or a second relay publishes the two at once (migration 014).
              clock_timestamp()
         from won
        group by won.owner_user_id
     )`;
}

/**
 * The prune's delete: the oldest `$2` ledger rows whose document expired before `$1`, found by walking
 * `ix_document_expiry_reminders_expires_at` in order (the ORDER BY makes the walk cheaper than any
 * other plan, whatever the statistics say) and deleted by their ctid. Without the order, statistics that
 * overestimate what is left (the last passes of a prune, before autovacuum analyzes the table) led the
 * planner to a sequential scan with a limit, which reads the whole ledger when few rows qualify
 * (`test/integration/prune-plan.test.ts`).
 */
export const DELETE_EXPIRED_MARKERS_SQL = `delete from profile.document_expiry_reminders
  where ctid = any(array(select ctid from profile.document_expiry_reminders
                          where expires_at < $1::date
                          order by expires_at
                          limit $2))`;

/**
 * Deletes up to `limit` ledger rows whose document expired before `cutoffDate`.
 * @returns how many rows it deleted; fewer than `limit` means nothing is left to prune.
 */
export async function deleteExpiredMarkers(db: Queryable, cutoffDate: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(DELETE_EXPIRED_MARKERS_SQL, [cutoffDate, limit]);
  return rowCount ?? 0;
}

/**
 * Raises the ledger's prune cutoff to `cutoffDate` (never lowers it). The prune calls it before it deletes
 * anything: from then on no scan reads below the cutoff, whatever its AsOf, so the markers about to go
 * can no longer be missed by a run as of an earlier day (docs/DESIGN.md#resolutions, resolution 1).
 */
export async function raisePruneCutoff(db: Queryable, cutoffDate: string): Promise<void> {
  await db.query(
    `insert into profile.document_expiry_reminder_prune_cutoff as c (singleton, cutoff)
     values (true, $1::date)
     on conflict (singleton) do update set cutoff = excluded.cutoff, updated_at = now()
      where c.cutoff < excluded.cutoff`,
    [cutoffDate],
  );
}
