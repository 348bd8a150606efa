/**
 * The attempt of a claiming activity that may commit (migration 021): raised when an attempt starts, held by
 * each of its transactions, so that no attempt commits anything once a later one has started.
 */
import pg from 'pg';
import type { Queryable } from '../../../db/pool';

/** Which attempt of which activity of which partition: a claim's key. */
export interface AttemptKey {
  /** The partition's first run id: the scan positions' and the receipts' `cycle_id`. */
  cycleId: string;
  /** `<workflow run id>/<activity id>`, the same for every attempt of the activity. */
  queuedBy: string;
  attempt: number;
}

/**
 * Raises the activity's attempt to `key.attempt`. It waits for a transaction of an earlier attempt that still
 * holds the row ({@link holdAttemptSql}) to end, so what that one commits is there for this attempt to read.
 * @returns false when a later attempt started first: this one is over before it began.
 */
export async function raiseAttempt(db: Queryable, key: AttemptKey): Promise<boolean> {
  const { rowCount } = await db.query(
    `insert into profile.document_expiry_reminder_claim_attempts as a (cycle_id, queued_by, attempt)
     values ($1, $2, $3)
     on conflict (cycle_id, queued_by) do update set attempt = excluded.attempt, started_at = now()
      where a.attempt <= excluded.attempt`,
    [key.cycleId, key.queuedBy, key.attempt],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * The statement a claim transaction opens with after its BEGIN: it holds the attempt's row until the commit and
 * fails (SQLSTATE XR001) when a later attempt has raised it. Literals, not parameters, so that it travels in
 * the BEGIN's own round trip (a simple query of several statements).
 */
export function holdAttemptSql(key: AttemptKey): string {
  return `SELECT profile.hold_claim_attempt(${pg.escapeLiteral(key.cycleId)}::uuid, ${pg.escapeLiteral(key.queuedBy)}, ${Math.trunc(key.attempt)})`;
}
