/**
 * A partition's pages as recorded (migrations 008, 016, 021): the workflow names pages by number, and what a
 * page held stays here, out of Temporal history: where it ends (the next page's start), how many due documents
 * and owners it had, the owners its first transaction left to later ones, and the activity that read it.
 */
import {
  candidatePageParams,
  CANDIDATE_PAGE_SQL,
  type CandidateWindow,
  type IdRange,
  type PageCursor,
  type ScanBounds,
} from '../../../db/candidates';
import type { Queryable } from '../../../db/pool';
import { ownerLockKeySql } from './lock-owners';

const POSITIONS = 'profile.document_expiry_reminder_scan_positions';

/** Which page to read, where to record it, and how many of its first owners to lock. */
export interface PageToRead {
  window: CandidateWindow;
  bounds: ScanBounds;
  /** The previous page's end, or the window's start. */
  after: PageCursor;
  limit: number;
  range: IdRange;
  /** The partition's first run id: the scan positions' `cycle_id`. */
  cycleId: string;
  jobRunId: string;
  page: number;
  attempt: number;
  queuedBy: string;
  /** The page's first owners in scan order to lock, without waiting: its first transaction's. 0: none. */
  lockFirst: number;
}

/** A page as its first statement read it. */
export interface ReadPage {
  /** Distinct owners of the page, in the order of their first document in it. */
  ownerUserIds: string[];
  /** Owners of the first `lockFirst` whose lock this transaction holds now. */
  locked: string[];
  /** Owners of the first `lockFirst` another transaction held. */
  busy: string[];
  documentCount: number;
  /** The page's last row, where the next page starts; null when the page had none. */
  end: PageCursor | null;
  /**
   * The page had rows but was recorded before (by an earlier attempt, or another activity asked for the same
   * page): this read may differ from that one, so the caller rolls back and takes the recorded page.
   */
  recordedBefore: boolean;
}

/**
 * Reads page `p.page` (the page statement; the caller's transaction pins its plan), tries the locks of its first
 * `p.lockFirst` owners, then records it when it has rows and was not recorded already (its end, its documents and
 * owners, and the owners after the first `p.lockFirst`, which later transactions claim), in one round trip. The
 * locks come before the record, the transaction's first write (docs/DESIGN.md#owner-transaction).
 */
export async function readAndLockPage(db: Queryable, p: PageToRead): Promise<ReadPage> {
  const pageParams = candidatePageParams(p.window, p.bounds, p.after, p.limit, p.range[0], p.range[1]);
  const { rows } = await db.query<{
    owner_user_id: string;
    locked: boolean | null;
    documents: number;
    recorded: boolean;
    end_expires_at: string;
    end_id: string;
  }>(
    `with page as materialized (${CANDIDATE_PAGE_SQL}),
     last_row as (select expires_at, id from page order by expires_at desc, id desc limit 1),
     owners as (
       select owner_user_id, min(n) as first_row
         from (select owner_user_id, row_number() over (order by expires_at, id) as n from page) rows
        group by owner_user_id
     ),
     ranked as materialized (select owner_user_id, row_number() over (order by first_row) as rank from owners),
     locks as materialized (
       select r.owner_user_id, r.rank,
              case when r.rank <= $14 then pg_try_advisory_xact_lock(${ownerLockKeySql('r.owner_user_id')}) end as locked
         from ranked r
     ),
     position as (
       insert into ${POSITIONS}
              (cycle_id, page, job_run_id, expires_at, document_id, attempt, documents, owners, later_owner_ids, queued_by)
       select $10::uuid, $11::int, $12::text, l.expires_at, l.id, $13::int, (select count(*) from page),
              (select count(*) from ranked),
              (select array_agg(owner_user_id order by rank) from ranked where rank > $14), $15::text
         from last_row l
        -- A one-time filter, run before the insert's first row: every lock is taken before the transaction's
        -- first write, which gives it its id (the outbox's order, migration 024).
        where (select count(*) from locks) >= 0
       on conflict (cycle_id, page) do nothing
       returning 1
     )
     select k.owner_user_id,
            k.locked,
            (select count(*)::int from page) as documents,
            exists (select from position) as recorded,
            l.expires_at as end_expires_at,
            l.id as end_id
       from locks k, last_row l
      order by k.rank`,
    [...pageParams, p.cycleId, p.page, p.jobRunId, p.attempt, p.lockFirst, p.queuedBy],
  );
  const first = rows[0];
  return {
    ownerUserIds: rows.map((r) => r.owner_user_id),
    locked: rows.filter((r) => r.locked === true).map((r) => r.owner_user_id),
    busy: rows.filter((r) => r.locked === false).map((r) => r.owner_user_id),
    documentCount: first?.documents ?? 0,
    end: first ? { expiresAt: first.end_expires_at, id: first.end_id } : null,
    recordedBefore: first !== undefined && !first.recorded,
  };
}

/** A page as recorded: what its first read found, and who read it. */
export interface PageRecord {
  page: number;
  end: PageCursor;
  documentCount: number;
  /** Distinct owners of the page. */
  owners: number;
  /** The owners the page's first transaction did not lock, in scan order: later transactions claim them. */
  laterOwnerIds: string[];
  /** The activity that read it; null on a page recorded by a worker before migration 021. */
  queuedBy: string | null;
}

interface PageRecordRow {
  page: number;
  expires_at: string;
  document_id: string;
  documents: number | null;
  owners: number | null;
  later_owner_ids: string[] | null;
  queued_by: string | null;
}

const recordOf = (r: PageRecordRow): PageRecord => ({
  page: r.page,
  end: { expiresAt: r.expires_at, id: r.document_id },
  documentCount: r.documents ?? 0,
  owners: r.owners ?? 0,
  laterOwnerIds: r.later_owner_ids ?? [],
  queuedBy: r.documents === null ? null : r.queued_by,
});

/** Pages `fromPage` and after of the partition whose first run is `cycleId`, as recorded, in page order. */
export async function selectPagesFrom(db: Queryable, cycleId: string, fromPage: number): Promise<PageRecord[]> {
  const { rows } = await db.query<PageRecordRow>(
    `select page, expires_at, document_id, documents, owners, later_owner_ids, queued_by
       from ${POSITIONS} where cycle_id = $1 and page >= $2 order by page`,
    [cycleId, fromPage],
  );
  return rows.map(recordOf);
}

/** Where page `page` of the partition whose first run is `cycleId` ends, or undefined when it was never read. */
export async function selectPageEnd(db: Queryable, cycleId: string, page: number): Promise<PageCursor | undefined> {
  const { rows } = await db.query<{ expires_at: string; document_id: string }>(
    `select expires_at, document_id from ${POSITIONS} where cycle_id = $1 and page = $2`,
    [cycleId, page],
  );
  return rows[0] ? { expiresAt: rows[0].expires_at, id: rows[0].document_id } : undefined;
}

/**
 * Deletes what the claims of the partitions `cycleIds` kept (their pages, receipts and attempts), and what any
 * partition kept that is older than `staleAfterDays` (one cancelled, terminated or timed out deletes nothing).
 * @returns how many pages it deleted.
 */
export async function deleteClaimRecords(
  db: Queryable,
  cycleIds: readonly string[],
  staleAfterDays: number,
): Promise<number> {
  const { rows } = await db.query<{ pages: number }>(
    `with receipts as (
       delete from profile.document_expiry_reminder_claim_receipts
        where cycle_id = any($1::uuid[]) or created_at < now() - make_interval(days => $2)
     ),
     attempts as (
       delete from profile.document_expiry_reminder_claim_attempts
        where cycle_id = any($1::uuid[]) or started_at < now() - make_interval(days => $2)
     ),
     pages as (
       delete from ${POSITIONS}
        where cycle_id = any($1::uuid[]) or created_at < now() - make_interval(days => $2)
       returning 1
     )
     select count(*)::int as pages from pages`,
    [cycleIds, staleAfterDays],
  );
  return rows[0].pages;
}
