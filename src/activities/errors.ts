/** Sorts database errors into permanent (fail now, a person must act) and transient (let Temporal retry). */
import { ApplicationFailure } from '@temporalio/activity';
import { redactUrl } from '../config';

/**
 * SQLSTATE classes that no retry fixes: data exceptions (22), integrity violations other than the
 * ones we expect (23), authorisation (28), syntax/access rules incl. permission denied and
 * undefined tables (42). Everything else (connection loss, serialization, timeouts) is retried.
 */
const PERMANENT_SQLSTATE_CLASSES = new Set(['22', '23', '28', '42']);

/** True when retrying cannot help. */
export function isPermanentDatabaseError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && code.length === 5 && PERMANENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
}

/**
 * True when the database did not answer at all (no connection, or the server is shutting down), as
 * opposed to an error about this statement: retrying other owners right away cannot help.
 */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return true;
  return !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || ['57P01', '57P02', '57P03'].includes(code);
}

/**
 * Wraps an error for Temporal: permanent ones become non-retryable with their SQLSTATE as the type;
 * the message never carries a connection password.
 */
export function toActivityFailure(err: unknown): Error {
  const e = err as Error & { code?: string };
  const message = redactUrl(e?.message ?? String(err));
  if (isPermanentDatabaseError(err)) {
    return ApplicationFailure.nonRetryable(message, `PostgresError:${e.code}`);
  }
  return ApplicationFailure.retryable(message, e?.code ? `PostgresError:${e.code}` : (e?.name ?? 'Error'));
}
