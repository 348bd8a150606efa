/**
 * The candidate scan's position per cycle and page (migrations/008): the workflow names pages by number,
 * and the keyset position they end at stays in PostgreSQL, out of Temporal history.
 */
import type { PageCursor } from './candidates';
import type { Queryable } from './pool';

export interface ScanPosition extends PageCursor {
  /** The cycle's first run id, stable across continue-as-new (column `cycle_id`). */
  firstRunId: string;
  jobRunId: string;
  page: number;
  /** The activity attempt that recorded it. */
  attempt: number;
  /** The page's first row (migration 016); absent on positions recorded before it. */
  first?: PageCursor;
}

/** Where a recorded page ends, and where it starts when that was recorded (migration 016). */
export interface RecordedPage {
  end: PageCursor;
  first?: PageCursor;
}

/** Where page `page` of the cycle whose first run is `firstRunId` ended, or undefined when no such page was read. */
export async function selectScanPosition(
  db: Queryable,
  firstRunId: string,
  page: number,
): Promise<PageCursor | undefined> {
  return (await selectRecordedPage(db, firstRunId, page))?.end;
}

/** Page `page` of the cycle whose first run is `firstRunId` as recorded: its end, and its first row. */
export async function selectRecordedPage(
  db: Queryable,
  firstRunId: string,
  page: number,
): Promise<RecordedPage | undefined> {
  const { rows } = await db.query<{
    expires_at: string;
    document_id: string;
    first_expires_at: string | null;
    first_document_id: string | null;
  }>(
    `select expires_at, document_id, first_expires_at, first_document_id
       from profile.document_expiry_reminder_scan_positions where cycle_id = $1 and page = $2`,
    [firstRunId, page],
  );
  const row = rows[0];
  if (!row) return undefined;
  const end = { expiresAt: row.expires_at, id: row.document_id };
  return row.first_expires_at && row.first_document_id
    ? { end, first: { expiresAt: row.first_expires_at, id: row.first_document_id } }
    : { end };
}

/**
 * Records where a page starts and ends, once: a page's end is written by the attempt that claimed it and never
 * moved, so every later read of the page (a retry, or another activity asking for it) covers the same rows.
 * @returns whether this call recorded it (false: it was recorded already).
 */
export async function insertScanPosition(db: Queryable, p: ScanPosition): Promise<boolean> {
  const { rowCount } = await db.query(insertScanPositionSql('values ($1, $2, $3, $4, $5, $6, $7::date, $8::uuid)'), [
    p.firstRunId,
    p.page,
    p.jobRunId,
    p.expiresAt,
    p.id,
    p.attempt,
    p.first?.expiresAt ?? null,
    p.first?.id ?? null,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * The insert of {@link insertScanPosition} for the rows of `source` (a `values` list or a `select` of cycle id,
 * page, job run id, expires_at, document id, attempt, and the first row's expires_at and id), for statements
 * that record a page's ends as they read it. A page recorded already keeps its ends.
 */
export const insertScanPositionSql = (source: string) =>
  `insert into profile.document_expiry_reminder_scan_positions
          (cycle_id, page, job_run_id, expires_at, document_id, attempt, first_expires_at, first_document_id)
     ${source}
     on conflict (cycle_id, page) do nothing`;

/**
 * Deletes the positions of a finished cycle, and those of any cycle older than `staleAfterDays` (one
 * that was cancelled, terminated or timed out never deletes its own).
 * @returns how many rows it deleted.
 */
export async function deleteScanPositions(db: Queryable, firstRunId: string, staleAfterDays: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from profile.document_expiry_reminder_scan_positions
      where cycle_id = $1 or created_at < now() - make_interval(days => $2)`,
    [firstRunId, staleAfterDays],
  );
  return rowCount ?? 0;
}
