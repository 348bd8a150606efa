/**
 * The claim of owners the caller's transaction has locked (docs/DESIGN.md#owner-transaction), and the receipt
 * of what it did, in one statement: the markers, the outbox rows and the receipt commit together or not at all.
 */
import type { CandidateWindow } from '../../../db/candidates';
import type { Queryable } from '../../../db/pool';
import { claimCtes, type ClaimPlaceholders, type WonDocument } from '../../../db/reminders';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../../domain/names';
import type { ClaimCounts } from '../types';

/** The owners to claim (locked by the caller's transaction) and the claim's values. */
export interface ClaimParams extends CandidateWindow {
  ownerUserIds: readonly string[];
  /** AsOf as an ISO instant: `reminded_at` of the markers and `remindedAt` of the events. */
  asOf: string;
  /** The cycle's workflow id: the outbox row's `correlation_id`. */
  jobRunId: string;
  /** W3C traceparent of the calling span, stored with the events for the relay's span. */
  traceContext?: string;
  /** `<workflow run id>/<activity id>`, kept on the markers (support reads who queued a reminder). */
  queuedBy?: string;
}

/** Where the receipt goes (migration 021) and what it says beside the counts. */
export interface ReceiptKey {
  cycleId: string;
  part: string;
  attempt: number;
  /** The owners of a second try or of an owner claimed alone; none for a page's groups. */
  ownerIds?: readonly string[];
  busyOwnerIds: readonly string[];
  clearedOwnerIds: readonly string[];
}

/** What a claim did: its counts (the receipt's), and the documents each owner won, in event order. */
export interface Claimed extends ClaimCounts {
  won: Map<string, WonDocument[]>;
}

const PLACEHOLDERS: ClaimPlaceholders = {
  asOfDate: '$2',
  thresholds: '$3',
  retentionDays: '$4',
  asOf: '$5',
  asOfText: '$6',
  aggregateType: '$7',
  topic: '$8',
  eventType: '$9',
  contractVersion: '$10',
  jobRunId: '$11',
  traceContext: '$12',
  queuedBy: '$13',
};

/**
 * `$1` the locked owners, `$2`–`$13` {@link PLACEHOLDERS}, `$14`–`$19` the receipt (none when `$14` is null).
 * One row of counts (`owner_user_id` null), then a row per document won: no count per owner, which cost the
 * claim 2–5 ms of a page's CPU to aggregate and return (bench/REPORT.md), and no json per document.
 */
const CLAIM_SQL = `with locked as (select distinct o.id as owner_user_id from unnest($1::uuid[]) as o(id)),
     ${claimCtes('locked', PLACEHOLDERS)},
     tally as (
       select (select count(*)::int from locked) as owners_processed,
              (select count(distinct owner_user_id)::int from won) as owners_notified,
              (select count(*)::int from won) as reminders_sent,
              (select count(*)::int from marks) as markers_inserted,
              (select count(*)::int from due) - (select count(*)::int from won) as skipped_already_marked
     ),
     receipt as (
       insert into profile.document_expiry_reminder_claim_receipts
              (cycle_id, queued_by, part, attempt, owners_processed, owners_notified, reminders_sent,
               markers_inserted, skipped_already_marked, owner_ids, busy_owner_ids, cleared_owner_ids)
       select $14::uuid, $13::text, $15::text, $16::int, t.owners_processed, t.owners_notified, t.reminders_sent,
              t.markers_inserted, t.skipped_already_marked, $17::uuid[], $18::uuid[], $19::uuid[]
         from tally t
        where $14::uuid is not null
     )
     select t.owners_processed, t.owners_notified, t.reminders_sent, t.markers_inserted, t.skipped_already_marked,
            null::uuid as owner_user_id, null::uuid as document_id, null::text as type, null::int as threshold_days,
            null::int as days_left
       from tally t
     union all
     select null, null, null, null, null, owner_user_id, id, type, current_threshold, days_left from won`;

/** Null for an empty list: the receipt keeps no empty arrays. */
const listOrNull = (ids: readonly string[] | undefined) => (ids && ids.length > 0 ? ids : null);

const claimParams = (p: ClaimParams, receipt: ReceiptKey | undefined) => [
  p.ownerUserIds,
  p.asOfDate,
  p.thresholdsDays,
  p.retentionDays,
  p.asOf,
  p.asOf,
  AGGREGATE_TYPE,
  TOPIC,
  EVENT_TYPE,
  CONTRACT_VERSION,
  p.jobRunId,
  p.traceContext ?? null,
  p.queuedBy ?? null,
  receipt?.cycleId ?? null,
  receipt?.part ?? null,
  receipt?.attempt ?? null,
  listOrNull(receipt?.ownerIds),
  listOrNull(receipt?.busyOwnerIds),
  listOrNull(receipt?.clearedOwnerIds),
];

/** A row of {@link CLAIM_SQL}: the counts (no owner), or a document an owner won. */
interface ClaimRow {
  owners_processed: number | null;
  owners_notified: number | null;
  reminders_sent: number | null;
  markers_inserted: number | null;
  skipped_already_marked: number | null;
  owner_user_id: string | null;
  document_id: string | null;
  type: string | null;
  threshold_days: number | null;
  days_left: number | null;
}

/**
 * Claims the owners the caller's transaction has locked: finds their due documents, inserts markers for every
 * crossed threshold (`ON CONFLICT DO NOTHING`: the unique index decides who sends) and one outbox row per
 * owner that won the current-threshold marker of at least one document, listing exactly those; with
 * `receipt`, writes what it did as that receipt in the same statement.
 */
export async function claimLockedOwners(db: Queryable, p: ClaimParams, receipt?: ReceiptKey): Promise<Claimed> {
  const { rows } = await db.query<ClaimRow>(CLAIM_SQL, claimParams(p, receipt));
  const claimed: Claimed = {
    ownersProcessed: 0,
    ownersNotified: 0,
    remindersSent: 0,
    markersInserted: 0,
    skippedAlreadyMarked: 0,
    won: new Map(),
  };
  for (const r of rows) {
    if (r.owner_user_id === null) {
      claimed.ownersProcessed = r.owners_processed!;
      claimed.ownersNotified = r.owners_notified!;
      claimed.remindersSent = r.reminders_sent!;
      claimed.markersInserted = r.markers_inserted!;
      claimed.skippedAlreadyMarked = r.skipped_already_marked!;
      continue;
    }
    const list = claimed.won.get(r.owner_user_id) ?? [];
    list.push({ documentId: r.document_id!, type: r.type!, thresholdDays: r.threshold_days!, daysLeft: r.days_left! });
    claimed.won.set(r.owner_user_id, list);
  }
  // Event order: days left, then id (the order of `expires_at, id` for documents seen as of one day).
  for (const list of claimed.won.values()) {
    list.sort(
      (a, b) => a.daysLeft - b.daysLeft || (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0),
    );
  }
  return claimed;
}

/** The plan of {@link claimLockedOwners} for `p` (EXPLAIN without ANALYZE: nothing is written). */
export async function explainClaimLockedOwners(db: Queryable, p: ClaimParams): Promise<string> {
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain ${CLAIM_SQL}`, claimParams(p, undefined));
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}
