/**
 * The first statement of a page claim's transaction (docs/DESIGN.md#page-claims): the page read, where it
 * ends recorded, and the owner locks of its first group taken, in one round trip. The claim of the locked
 * owners follows in the same transaction ({@link remindLockedOwners}), so the page's end commits with its
 * first group's reminders or not at all.
 */
import {
  candidatePageParams,
  CANDIDATE_PAGE_SQL,
  type CandidateWindow,
  type IdRange,
  type PageCursor,
  type ScanBounds,
} from './candidates';
import type { Queryable } from './pool';
import { ownerLockKeySql } from './reminders';
import { insertScanPositionSql } from './scan-positions';

/** Which page to read, where to record its end, and how many of its owners to lock. */
export interface PageToClaim {
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
  /** The page's first owners in scan order to lock (without waiting): the first group. */
  lockFirst: number;
}

/** A page's owners in scan order, and what its first statement did. */
export interface ReadPage {
  /** Distinct owners of the page, in the order of their first document in it. */
  ownerUserIds: string[];
  /** Owners of the first group whose lock this transaction holds now. */
  locked: string[];
  /** Owners of the first group another transaction held. */
  busy: string[];
  documentCount: number;
  /** The page's last row, where the next page starts; null when the page had none. */
  end: PageCursor | null;
  /**
   * The page had rows but its ends were recorded before (by an earlier attempt, or another activity asked for
   * the same page): this read may differ from that one, so the caller rolls back and reads the recorded page.
   */
  recordedBefore: boolean;
}

/**
 * Reads page `p.page` (the page statement, its plan pinned by the transaction: `PAGE_CLAIM_BEGIN`),
 * records its first row and its end when it has rows (unless recorded already), and tries the owner locks of its first `p.lockFirst` owners. The
 * locks are taken in scan order without waiting, as {@link lockOwners} does for a group.
 */
export async function selectAndLockPage(db: Queryable, p: PageToClaim): Promise<ReadPage> {
  const pageParams = candidatePageParams(p.window, p.bounds, p.after, p.limit, p.range[0], p.range[1]);
  const { rows } = await db.query<{
    owner_user_id: string;
    locked: boolean | null;
    documents: number;
    recorded: boolean;
    end_expires_at: string | null;
    end_id: string | null;
  }>(
    `with page as materialized (${CANDIDATE_PAGE_SQL}),
     last_row as (select expires_at, id from page order by expires_at desc, id desc limit 1),
     first_row as (select expires_at, id from page order by expires_at, id limit 1),
     position as (
       ${insertScanPositionSql(
         `select $10::uuid, $11::int, $12::text, l.expires_at, l.id, $13::int, f.expires_at, f.id
            from last_row l, first_row f`,
       )}
       returning 1
     ),
     owners as (
       select owner_user_id, min(n) as first_row
         from (select owner_user_id, row_number() over (order by expires_at, id) as n from page) rows
        group by owner_user_id
     ),
     ranked as (select owner_user_id, row_number() over (order by first_row) as rank from owners)
     select r.owner_user_id,
            case when r.rank <= $14 then pg_try_advisory_xact_lock(${ownerLockKeySql('r.owner_user_id')}) end as locked,
            (select count(*)::int from page) as documents,
            exists (select from position) as recorded,
            l.expires_at as end_expires_at,
            l.id as end_id
       from ranked r, last_row l
      order by r.rank`,
    [...pageParams, p.cycleId, p.page, p.jobRunId, p.attempt, p.lockFirst],
  );
  return {
    ownerUserIds: rows.map((r) => r.owner_user_id),
    locked: rows.filter((r) => r.locked === true).map((r) => r.owner_user_id),
    busy: rows.filter((r) => r.locked === false).map((r) => r.owner_user_id),
    documentCount: rows[0]?.documents ?? 0,
    end: rows[0]?.end_expires_at && rows[0].end_id ? { expiresAt: rows[0].end_expires_at, id: rows[0].end_id } : null,
    recordedBefore: rows.length > 0 && !rows[0].recorded,
  };
}
