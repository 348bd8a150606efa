/** The candidate scan, keyset-paged on `(expires_at, id)` over the partial index, and the one "due" predicate. */
import { addDays } from '../domain/thresholds';
import type { Queryable } from './pool';

/** Keyset position: the last `(expires_at, id)` a page returned. A document value: never in history. */
export interface PageCursor {
  expiresAt: string;
  id: string;
}

export interface CandidateWindow {
  asOfDate: string;
  thresholdsDays: readonly number[];
  retentionDays: number;
}

export interface CandidateRow {
  id: string;
  owner_user_id: string;
  expires_at: string;
}

/**
 * The current-threshold expression, min{t : DaysLeft <= t}, over the `$thresholds` and `$asOfDate`
 * parameters; shared by the scan and the owner statement so both agree on what "due" means.
 * `width_bucket(DaysLeft − 1, ascending)` counts the thresholds below DaysLeft, so the next one is the
 * smallest t ≥ DaysLeft (null when DaysLeft is above them all). The sorted array is an uncorrelated
 * subquery, computed once per statement: per document this is two array lookups, where a correlated
 * `min(t)` over `unnest` was a subplan per row (15 % of an idle scan over 330k documents).
 */
export const CURRENT_THRESHOLD_SQL = (doc: string, asOfDate: string, thresholds: string) => {
  const ascending = `(select array_agg(t order by t) from unnest(${thresholds}::int[]) as t)`;
  return `(${ascending})[width_bucket(${doc}.expires_at - ${asOfDate}::date - 1, ${ascending}) + 1]`;
};

/**
 * The window half of "due" on document alias `doc`: active, not deleted, and
 * `AsOfDate − RetentionDays ≤ expires_at ≤ AsOfDate + MaxThreshold`. The lower bound is the prune's, so a
 * document whose markers were pruned is never scanned again (docs/DESIGN.md#resolutions, resolution 1).
 */
export const IN_WINDOW_SQL = (doc: string, asOfDate: string, thresholds: string, retentionDays: string) =>
  `${doc}.expires_at is not null
        and ${doc}.expires_at >= ${asOfDate}::date - ${retentionDays}::int
        and ${doc}.expires_at <= ${asOfDate}::date + (select max(t) from unnest(${thresholds}::int[]) as t)
        and ${doc}.status = 'Active'
        and not ${doc}.is_deleted`;

/**
 * The ledger half of "due": no marker at any threshold `t ≤ current(d)` (resolution 2). Equality with
 * the current threshold alone is not enough once a threshold is removed: a document reminded at 3 under
 * `30,3,0` would get a "7 days" reminder under `30,7,1,0`, and one reminded at 0 would get a "2 days"
 * reminder under `14,2`. A marker at or below the current threshold means something at least as urgent
 * was sent. The probe is a range scan of the dedupe index `(document_id, threshold_days)`.
 */
export const NOT_REMINDED_SQL = (doc: string, currentThreshold: string) =>
  `not exists (
          select 1 from profile.document_expiry_reminders r
           where r.document_id = ${doc}.id
             and r.threshold_days <= ${currentThreshold})`;

/**
 * The one "due" predicate on `profile.person_documents d`: in the window and not reminded at or below
 * its current threshold. The page scan, the backlog gauge and baseline B use it whole; the owner
 * statement and `cycle preview` use its two halves (`dueCtes`), so all of them agree on what is due.
 */
export const DUE_DOCUMENT_SQL = (asOfDate: string, thresholds: string, retentionDays: string) =>
  `${IN_WINDOW_SQL('d', asOfDate, thresholds, retentionDays)}
        and ${NOT_REMINDED_SQL('d', CURRENT_THRESHOLD_SQL('d', asOfDate, thresholds))}`;

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * One page of due documents ({@link DUE_DOCUMENT_SQL}) after `cursor` (from the window's lower bound when
 * null). Reads only open columns and takes no locks.
 *
 * With `slices` > 1 the documents are split by id into that many ranges, scanned at once on separate
 * connections (when `db` is a pool), and the page is the first `limit` of their rows in scan order: the
 * same page as one scan. The planner never runs this LIMIT query in parallel, and a page that finds
 * little (the idle day, when every in-window document is already reminded) costs a heap visit and a
 * ledger probe per in-window document; each slice still walks the window's index entries but pays
 * those costs for its own ids only. Ids are random UUIDs, so the slices get equal shares.
 */
export async function selectCandidatePage(
  db: Queryable,
  window: CandidateWindow,
  cursor: PageCursor | null,
  limit: number,
  slices = 1,
): Promise<CandidateRow[]> {
  // The first page starts just below the window, not at -infinity: the keyset bound is what the
  // index scan starts from, and from -infinity it reads every index entry below the window
  // (bench/REPORT.md, "The idle cycle").
  const after: PageCursor = cursor ?? { expiresAt: addDays(window.asOfDate, -window.retentionDays - 1), id: NIL_UUID };
  const pages = await Promise.all(
    idRanges(slices).map(([from, until]) => selectCandidateSlice(db, window, after, limit, from, until)),
  );
  if (pages.length === 1) return pages[0];
  return pages
    .flat()
    .sort((x, y) => compareKeys(x.expires_at, x.id, y.expires_at, y.id))
    .slice(0, limit);
}

/**
 * `[from, until)` ranges of the UUID space in `slices` equal parts; `until` null for the last one.
 * UUIDs compare as their lower-case hex text does, in PostgreSQL and here.
 */
export function idRanges(slices: number): [string, string | null][] {
  const parts = Math.max(1, Math.floor(slices));
  const bound = (i: number) => {
    const hex = ((BigInt(i) << 128n) / BigInt(parts)).toString(16).padStart(32, '0');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  return Array.from({ length: parts }, (_, i) => [bound(i), i + 1 < parts ? bound(i + 1) : null]);
}

/** The scan order, `(expires_at, id)`, on the text the driver returns. */
function compareKeys(aDate: string, aId: string, bDate: string, bId: string): number {
  if (aDate !== bDate) return aDate < bDate ? -1 : 1;
  return aId < bId ? -1 : aId > bId ? 1 : 0;
}

async function selectCandidateSlice(
  db: Queryable,
  window: CandidateWindow,
  after: PageCursor,
  limit: number,
  fromId: string,
  untilId: string | null,
): Promise<CandidateRow[]> {
  const { rows } = await db.query<CandidateRow>(
    `select d.id, d.owner_user_id, d.expires_at
       from profile.person_documents d
      where ${DUE_DOCUMENT_SQL('$1', '$2', '$3')}
        and (d.expires_at, d.id) > ($4::date, $5::uuid)
        and d.id >= $7::uuid
        and ($8::uuid is null or d.id < $8::uuid)
      order by d.expires_at, d.id
      limit $6`,
    [window.asOfDate, window.thresholdsDays, window.retentionDays, after.expiresAt, after.id, limit, fromId, untilId],
  );
  return rows;
}

/**
 * How many documents are due now, by the scan's predicate: the reminder backlog.
 * An index range scan over the window plus one ledger probe per document.
 */
export async function countDueDocuments(db: Queryable, window: CandidateWindow): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n
       from profile.person_documents d
      where ${DUE_DOCUMENT_SQL('$1', '$2', '$3')}`,
    [window.asOfDate, window.thresholdsDays, window.retentionDays],
  );
  return rows[0].n;
}
