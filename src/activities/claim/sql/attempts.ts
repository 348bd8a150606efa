/**
 * The attempt of a claiming activity that may commit (migrations 021, 024): raised when an attempt starts, held
 * by each of its transactions, so that no attempt commits anything once a later one has started. Held without a
 * write: a claim transaction takes its id at its first write, after its owners' locks (docs/DESIGN.md#owner-transaction).
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
 * holds the attempt ({@link holdAttemptSql}) to end, so what that one commits is there for this attempt to read.
 * @returns false when a later attempt started first: this one is over before it began.
 */
export async function raiseAttempt(db: Queryable, key: AttemptKey): Promise<boolean> {
  const { rows } = await db.query<{ raised: boolean }>('select profile.raise_claim_attempt($1, $2, $3) as raised', [
    key.cycleId,
    key.queuedBy,
    key.attempt,
  ]);
  return rows[0].raised;
}

/**
 * The statement a claim transaction opens with after its BEGIN: it holds the attempt (a shared advisory lock,
 * which assigns no transaction id) until the commit and fails (SQLSTATE XR001) when a later attempt has raised
 * it. Literals, not parameters, so that it travels in the BEGIN's own round trip (a simple query of several
 * statements).
 */
export function holdAttemptSql(key: AttemptKey): string {
  return `SELECT profile.enter_claim_attempt(${pg.escapeLiteral(key.cycleId)}::uuid, ${pg.escapeLiteral(key.queuedBy)}, ${Math.trunc(key.attempt)})`;
}
