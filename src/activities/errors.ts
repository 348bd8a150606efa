/** Sorts database errors into permanent (fail now, a person must act) and transient (let Temporal retry). */
import { ApplicationFailure, CancelledFailure } from '@temporalio/activity';
import { describeFailure } from '../domain/failures';
import { redactUrl } from '../observability/redact';

/**
 * SQLSTATE classes that no retry fixes: data exceptions (22), integrity violations other than the
 * ones we expect (23), authorisation (28), syntax/access rules incl. permission denied and
 * undefined tables (42). Everything else (connection loss, serialization, timeouts) is retried.
 */
const PERMANENT_SQLSTATE_CLASSES = new Set(['22', '23', '28', '42']);

/**
 * SQLSTATE of a claim transaction of an attempt that a later attempt of its activity has replaced (migration
 * 024's `enter_claim_attempt`, 021's `hold_claim_attempt` before it): this attempt is over, and its result would be dropped anyway.
 */
const ATTEMPT_OVER = 'XR001';

/** True when a later attempt of the same activity has started: this one must stop, whatever it was doing. */
export function isAttemptOver(err: unknown): boolean {
  return (err as { code?: unknown })?.code === ATTEMPT_OVER;
}

/** True when retrying cannot help. */
export function isPermanentDatabaseError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && code.length === 5 && PERMANENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
}

/** Node's system error codes for a socket that could not be opened or was lost. */
const CONNECTION_SYSTEM_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
]);

/** SQLSTATEs of a server that is going away: admin shutdown, crash shutdown, cannot connect now. */
const CONNECTION_SQLSTATES = new Set(['57P01', '57P02', '57P03']);

/**
 * What pg and pg-pool throw, without a code, when the connection is gone or never came: the socket closed
 * (`Connection terminated…`, also pg-pool's "due to connection timeout" for a new connection that did not
 * open in time), the client is unusable after it, or no reply came within the client's `query_timeout` (set
 * above the server's statement timeout, so only a silent network gets there). Not pg-pool's "timeout
 * exceeded when trying to connect": that is a wait for a free client of a full pool, which says the worker's
 * other activities hold every connection, not that the database is gone.
 */
const CONNECTION_MESSAGE_RE =
  /^(Connection terminated|Client has encountered a connection error|Client was closed|Query read timeout)/;

/**
 * True when the database did not answer at all (no connection, or the server is shutting down), as
 * opposed to an error about this statement: retrying other owners right away cannot help. Only errors
 * that say so count; one without a code (a `TypeError` from a bug) is about this owner, and the others
 * are still tried.
 */
export function isConnectionError(err: unknown, depth = 0): boolean {
  const e = err as { code?: unknown; message?: unknown; cause?: unknown } | null | undefined;
  if (!e || typeof e !== 'object' || depth > 5) return false;
  if (typeof e.code === 'string') {
    if (CONNECTION_SYSTEM_CODES.has(e.code) || CONNECTION_SQLSTATES.has(e.code)) return true;
    if (/^08[0-9A-Z]{3}$/.test(e.code)) return true;
  }
  if (typeof e.message === 'string' && CONNECTION_MESSAGE_RE.test(e.message)) return true;
  // pg-pool wraps the socket's error as the cause of its own.
  return isConnectionError(e.cause, depth + 1);
}

/**
 * Wraps an error for Temporal (every activity's, through `interceptor.ts`): permanent ones become non-retryable
 * with their SQLSTATE as the type; the message never carries a connection password. An `ApplicationFailure`
 * and a `CancelledFailure` are returned unchanged.
 */
export function toActivityFailure(err: unknown): Error {
  // Already decided by the code that threw it (e.g. a missing scan position is permanent), or the activity's
  // cancellation, which the SDK reports as such: kept as it is.
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return err;
  const e = err as Error & { code?: string };
  const message = redactUrl(e?.message ?? String(err));
  if (isPermanentDatabaseError(err)) {
    return ApplicationFailure.nonRetryable(message, `PostgresError:${e.code}`);
  }
  if (isAttemptOver(err)) return ApplicationFailure.nonRetryable(message, 'AttemptOver');
  return ApplicationFailure.retryable(message, e?.code ? `PostgresError:${e.code}` : (e?.name ?? 'Error'));
}

/** An error in words for a log line or an owner's `failed` entry: as Temporal would get it, without secrets. */
export function describeError(err: unknown): string {
  return describeFailure(toActivityFailure(err));
}
