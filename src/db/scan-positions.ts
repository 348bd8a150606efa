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
  /** The activity attempt that wrote it: a stale attempt never overwrites a later one's position. */
  attempt: number;
}

/** Where page `page` of the cycle whose first run is `firstRunId` ended, or undefined when no such page was read. */
export async function selectScanPosition(
  db: Queryable,
  firstRunId: string,
  page: number,
): Promise<PageCursor | undefined> {
  const { rows } = await db.query<{ expires_at: string; document_id: string }>(
    `select expires_at, document_id from profile.document_expiry_reminder_scan_positions where cycle_id = $1 and page = $2`,
    [firstRunId, page],
  );
  return rows[0] && { expiresAt: rows[0].expires_at, id: rows[0].document_id };
}

/** Records where a page ended; a retry of the same page by a later attempt replaces it. */
export async function upsertScanPosition(db: Queryable, p: ScanPosition): Promise<void> {
  await db.query(upsertScanPositionSql('values ($1, $2, $3, $4, $5, $6)'), [
    p.firstRunId,
    p.page,
    p.jobRunId,
    p.expiresAt,
    p.id,
    p.attempt,
  ]);
}

/**
 * The upsert of {@link upsertScanPosition} for the rows of `source` (a `values` list or a `select` of
 * cycle id, page, job run id, expires_at, document id and attempt), for statements that record a page's end
 * as they read it.
 */
export const upsertScanPositionSql = (source: string) =>
  `insert into profile.document_expiry_reminder_scan_positions (cycle_id, page, job_run_id, expires_at, document_id, attempt)
     ${source}
     on conflict (cycle_id, page) do update
        set expires_at = excluded.expires_at, document_id = excluded.document_id, attempt = excluded.attempt, created_at = now()
      where profile.document_expiry_reminder_scan_positions.attempt <= excluded.attempt`;

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
