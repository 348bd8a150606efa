/** The candidate scan, keyset-paged on `(expires_at, id)` over the partial index, and the one "due" predicate. */
import { addDays } from '../domain/dates';
import pg from 'pg';
import { withTransaction, type Queryable } from './pool';

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
 * smallest t ≥ DaysLeft (null when DaysLeft is above them all). The sorted array is an uncorrelated subquery
 * computed once per statement, so a document costs two array lookups
 * (bench/REPORT-HISTORY.md#7-the-idle-day-the-current-threshold-expression-and-the-page-scanned-in-slices).
 */
export const currentThresholdSql = (doc: string, asOfDate: string, thresholds: string) => {
  const ascending = `(select array_agg(t order by t) from unnest(${thresholds}::int[]) as t)`;
  return `(${ascending})[width_bucket(${doc}.expires_at - ${asOfDate}::date - 1, ${ascending}) + 1]`;
};

/**
 * The highest prune cutoff the ledger has applied (migration 011), or null before the first prune. A
 * scalar subquery: `greatest` ignores its null, so the bound is then AsOfDate − RetentionDays alone.
 */
const PRUNE_CUTOFF_SQL = '(select c.cutoff from profile.document_expiry_reminder_prune_cutoff c)';

/** Documents of alias `doc` that have an expiry within `bounds` (SQL conditions), are active and not deleted. */
const activeDocumentSql = (doc: string, bounds: readonly [string, string]) =>
  [`${doc}.expires_at is not null`, ...bounds, `${doc}.status = 'Active'`, `not ${doc}.is_deleted`].join(
    '\n        and ',
  );

/** Documents of alias `doc` that are active, not deleted, and expire in `[from, to]` (SQL date expressions). */
export const windowSql = (doc: string, from: string, to: string) =>
  activeDocumentSql(doc, [`${doc}.expires_at >= ${from}`, `${doc}.expires_at <= ${to}`]);

/**
 * The window half of "due" on document alias `doc`:
 * `greatest(AsOfDate − RetentionDays, prune cutoff) ≤ expires_at ≤ AsOfDate + MaxThreshold`, active and
 * not deleted. The lower bound is the prune's: a document whose markers any prune deleted, whatever its
 * AsOf, is never scanned again, so a past AsOf or a longer retention cannot remind it twice
 * (docs/DESIGN.md#resolutions, resolution 1).
 */
const inWindowSql = (doc: string, asOfDate: string, thresholds: string, retentionDays: string) =>
  windowSql(
    doc,
    `greatest(${asOfDate}::date - ${retentionDays}::int, ${PRUNE_CUTOFF_SQL})`,
    `${asOfDate}::date + (select max(t) from unnest(${thresholds}::int[]) as t)`,
  );

/**
 * {@link inWindowSql} for a statement that reaches documents by owner (the claim): the same rows, the
 * bounds written on days left (`expires_at − AsOfDate`), which no index serves, so the planner reaches each
 * owner's few documents by the owner index, never the whole window
 * (bench/REPORT-HISTORY.md#the-owner-statements-plan-issue-22-measured-2026-12-04-explain-on-the-working-tree-of-4ed5e9d).
 */
export const ownerInWindowSql = (doc: string, asOfDate: string, thresholds: string, retentionDays: string) =>
  activeDocumentSql(doc, [
    `${doc}.expires_at - ${asOfDate}::date >= greatest(-${retentionDays}::int, ${PRUNE_CUTOFF_SQL} - ${asOfDate}::date)`,
    `${doc}.expires_at - ${asOfDate}::date <= (select max(t) from unnest(${thresholds}::int[]) as t)`,
  ]);

/** The scan's window as dates, computed before the page statement so the planner sees constants. */
export interface ScanBounds {
  from: string;
  to: string;
}

/** {@link inWindowSql}'s bounds for `window`, given the ledger's prune cutoff (null: none yet). */
export function scanBounds(window: CandidateWindow, pruneCutoff: string | null): ScanBounds {
  const byRetention = addDays(window.asOfDate, -window.retentionDays);
  return {
    from: pruneCutoff && pruneCutoff > byRetention ? pruneCutoff : byRetention,
    to: addDays(window.asOfDate, Math.max(...window.thresholdsDays)),
  };
}

/** The ledger's prune cutoff, `YYYY-MM-DD`, or null when nothing was ever pruned. */
export async function selectPruneCutoff(db: Queryable): Promise<string | null> {
  const { rows } = await db.query<{ cutoff: string }>(
    `select cutoff from profile.document_expiry_reminder_prune_cutoff`,
  );
  return rows[0]?.cutoff ?? null;
}

/**
 * The ledger half of "due": no marker at any threshold `t ≤ current(d)` (resolution 2). Equality with
 * the current threshold alone is not enough once a threshold is removed: a document reminded at 3 under
 * `30,3,0` would get a "7 days" reminder under `30,7,1,0`, and one reminded at 0 would get a "2 days"
 * reminder under `14,2`. A marker at or below the current threshold means something at least as urgent
 * was sent. The probe is a range scan of the dedupe index `(document_id, threshold_days)`.
 */
export const notRemindedSql = (doc: string, currentThreshold: string) =>
  `not exists (
          select 1 from profile.document_expiry_reminders r
           where r.document_id = ${doc}.id
             and r.threshold_days <= ${currentThreshold})`;

/**
 * The one "due" predicate on `profile.person_documents d`: in the window and not reminded at or below
 * its current threshold. The page scan, the backlog gauge and baseline B use it whole; the owner
 * statement and `cycle preview` use its two halves (`dueCtes`), so all of them agree on what is due.
 */
const dueDocumentSql = (asOfDate: string, thresholds: string, retentionDays: string) =>
  `${inWindowSql('d', asOfDate, thresholds, retentionDays)}
        and ${notRemindedSql('d', currentThresholdSql('d', asOfDate, thresholds))}`;

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The page statement: {@link dueDocumentSql} with the window's bounds as date parameters (`$1` from,
 * `$2` to, `$3` AsOfDate, `$4` thresholds), after the keyset `($5, $6)`, ids in `[$8, $9)`, `$7` rows.
 * The bounds are constants, not subqueries, so the planner estimates the window's rows
 * (bench/REPORT-HISTORY.md#the-page-plan-issue-22-history-measured-2026-12-04-on-7d302e2).
 */
export const CANDIDATE_PAGE_SQL = `select d.id, d.owner_user_id, d.expires_at
       from profile.person_documents d
      where ${windowSql('d', '$1::date', '$2::date')}
        and ${notRemindedSql('d', currentThresholdSql('d', '$3', '$4'))}
        and (d.expires_at, d.id) > ($5::date, $6::uuid)
        and d.id >= $8::uuid
        and ($9::uuid is null or d.id < $9::uuid)
      order by d.expires_at, d.id
      limit $7`;

/**
 * How a page's transaction opens: read-only, with the plan pinned to the keyset walk of the partial
 * index and a ledger probe per document. Statistics older than a bulk load (a backlog seeded or
 * imported an hour ago) made the planner prefer a bitmap scan and a sort of the whole window per page.
 */
export const PAGE_PLAN_BEGIN = ['BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY', ...pagePlanSettings('off')].join(
  '; ',
);

/** The planner settings that pin the page plan, `off`, or back to the server's `DEFAULT`. */
function pagePlanSettings(value: 'off' | 'DEFAULT'): string[] {
  return ['enable_sort', 'enable_bitmapscan', 'enable_hashjoin', 'enable_mergejoin', 'enable_seqscan'].map(
    (setting) => `SET LOCAL ${setting} TO ${value}`,
  );
}

/**
 * How a page claim's transaction opens (`src/activities/claim/page.ts`): read-write, with the page plan pinned for
 * its first statement; {@link PAGE_PLAN_UNPIN} gives the claim after it the planner's own choices back.
 */
export const PAGE_CLAIM_BEGIN = ['BEGIN ISOLATION LEVEL READ COMMITTED', ...pagePlanSettings('off')].join('; ');

/** The planner settings of {@link PAGE_CLAIM_BEGIN} back to the server's. */
export const PAGE_PLAN_UNPIN = pagePlanSettings('DEFAULT').join('; ');

/** Runs `fn` on a pool in a read-only transaction with {@link PAGE_PLAN_BEGIN}; on a client, in its session. */
function inPagePlan<T>(db: Queryable, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, fn, PAGE_PLAN_BEGIN) : fn(db);
}

/**
 * Where a page starts: after `cursor`, or for the first page just below the window, not at -infinity: the
 * keyset bound is what the index scan starts from, and from -infinity it reads every index entry below the
 * window (bench/REPORT-HISTORY.md#the-idle-cycle).
 */
export function scanStart(bounds: ScanBounds, cursor: PageCursor | null): PageCursor {
  return cursor ?? { expiresAt: addDays(bounds.from, -1), id: NIL_UUID };
}

/** The page statement's parameters for one id slice. */
export function candidatePageParams(
  window: CandidateWindow,
  bounds: ScanBounds,
  after: PageCursor,
  limit: number,
  fromId: string = NIL_UUID,
  untilId: string | null = null,
): unknown[] {
  return [
    bounds.from,
    bounds.to,
    window.asOfDate,
    window.thresholdsDays,
    after.expiresAt,
    after.id,
    limit,
    fromId,
    untilId,
  ];
}

/**
 * One page of due documents ({@link dueDocumentSql}) after `cursor` (from the window's lower bound when
 * null). Reads only open columns and takes no locks. On a pool, each slice runs in its own read-only
 * transaction with the plan pinned ({@link PAGE_PLAN_BEGIN}); on a client, in the caller's session.
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
  range: IdRange = [NIL_UUID, null],
): Promise<CandidateRow[]> {
  const bounds = scanBounds(window, await selectPruneCutoff(db));
  const after = scanStart(bounds, cursor);
  const pages = await Promise.all(
    subRanges(range, slices).map(async ([from, until]) => {
      const params = candidatePageParams(window, bounds, after, limit, from, until);
      const { rows } = await inPagePlan(db, (q) => q.query<CandidateRow>(CANDIDATE_PAGE_SQL, params));
      return rows;
    }),
  );
  if (pages.length === 1) return pages[0];
  return pages
    .flat()
    .sort((x, y) => compareKeys(x.expires_at, x.id, y.expires_at, y.id))
    .slice(0, limit);
}

/** `[from, until)` of the UUID space; `until` null: to the end. */
export type IdRange = [string, string | null];

const UUID_SPACE = 1n << 128n;
const uuidOf = (n: bigint) => {
  const hex = n.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
const numberOf = (uuid: string) => BigInt(`0x${uuid.replace(/-/g, '')}`);

/** `range` in `parts` equal consecutive ranges; the last keeps `range`'s end. */
function subRanges([from, until]: IdRange, parts: number): IdRange[] {
  const n = Math.max(1, Math.floor(parts));
  const start = numberOf(from);
  const end = until === null ? UUID_SPACE : numberOf(until);
  const bound = (i: number) => uuidOf(start + ((end - start) * BigInt(i)) / BigInt(n));
  return Array.from({ length: n }, (_, i): IdRange => [bound(i), i + 1 < n ? bound(i + 1) : until]);
}

/**
 * `[from, until)` ranges of the UUID space in `slices` equal parts; `until` null for the last one.
 * UUIDs compare as their lower-case hex text does, in PostgreSQL and here.
 */
export function idRanges(slices: number): IdRange[] {
  return subRanges([NIL_UUID, null], slices);
}

/** The scan order, `(expires_at, id)`, on the text the driver returns. */
function compareKeys(aDate: string, aId: string, bDate: string, bId: string): number {
  if (aDate !== bDate) return aDate < bDate ? -1 : 1;
  return aId < bId ? -1 : aId > bId ? 1 : 0;
}

/**
 * How many documents are due now, counting at most `cap` (the rest of a big day is not read): the
 * partition plan of a cycle. Runs the page statement's predicate and pinned plan without its keyset, in
 * `slices` id ranges at once on a pool, so an idle day (nothing due: the whole window read once) costs what
 * its one sliced page costs.
 */
export async function countDueDocumentsUpTo(
  db: Queryable,
  window: CandidateWindow,
  cap: number,
  slices = 1,
): Promise<number> {
  const bounds = scanBounds(window, await selectPruneCutoff(db));
  const after = scanStart(bounds, null);
  const counts = await Promise.all(
    idRanges(slices).map(async ([from, until]) => {
      const params = candidatePageParams(window, bounds, after, cap, from, until);
      const { rows } = await inPagePlan(db, (q) =>
        q.query<{ n: number }>(`select count(*)::int as n from (${CANDIDATE_PAGE_SQL}) page`, params),
      );
      return rows[0].n;
    }),
  );
  return Math.min(
    cap,
    counts.reduce((a, b) => a + b, 0),
  );
}

/**
 * How many documents are due now, by the scan's predicate: the reminder backlog.
 * An index range scan over the window plus one ledger probe per document.
 */
export async function countDueDocuments(db: Queryable, window: CandidateWindow): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n
       from profile.person_documents d
      where ${dueDocumentSql('$1', '$2', '$3')}`,
    [window.asOfDate, window.thresholdsDays, window.retentionDays],
  );
  return rows[0].n;
}
