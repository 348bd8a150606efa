/**
 * Connection pool and transaction helper. Every SQL function takes a `Queryable` so it runs the same
 * inside `withTransaction` or on the pool.
 */
import pg from 'pg';
import { explainingClient } from './connection-errors';
import { errorOf } from '../domain/failures';

/** A pool, a pooled client or a plain client: anything that runs a statement. */
export type Queryable = Pick<pg.ClientBase, 'query'>;

const DATE_OID = 1082;

/**
 * `date` columns stay `YYYY-MM-DD` strings: pg's default turns them into local-midnight `Date`s,
 * which shifts expiry dates by a day west of UTC.
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === DATE_OID
      ? (value: string) => value
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * The startup options of every session the job opens, whatever the server's, database's or role's settings:
 * - `DateStyle=ISO`: `date` values come back as `YYYY-MM-DD` (the parser above keeps them as text) and
 *   timestamps in the form pg parses. Under `SQL, DMY` a date reads `30/08/2026`: the sliced scan would sort it
 *   after `05/09/2026` and its first page would hold the wrong documents.
 * - `plan_cache_mode=force_custom_plan`: each statement is planned for its own values. The job's statements
 *   are unnamed, and PostgreSQL plans those for their values unless told to force generic plans, which a DBA
 *   may set for a database of short queries; planned once for any owners, the claim took 3.1–3.6× as long
 *   (bench/REPORT.md).
 * @param extra further `-c name=value` options of the session.
 */
export function connectionOptions(extra?: string): string {
  const own = '-c DateStyle=ISO -c plan_cache_mode=force_custom_plan';
  return extra ? `${own} ${extra}` : own;
}

/**
 * The server's TCP keepalives for a session, as startup options: probes after `idleMs` of silence, then every
 * 10 s, 3 times; what ends a backend whose client vanished without closing the socket.
 */
export function serverKeepalives(idleMs: number): string {
  return `-c tcp_keepalives_idle=${Math.ceil(idleMs / 1000)} -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3`;
}

export interface PoolOptions {
  connectionString: string;
  max?: number;
  /** Shown in `pg_stat_activity`, so an operator can tell the worker's sessions apart. */
  applicationName?: string;
  /** Server-side limits of every session of the pool (the worker's); none when absent. */
  session?: SessionLimits;
  /** The variable `connectionString` came from, named by a refused connection's error; default DATABASE_URL. */
  urlVariable?: string;
  /**
   * How long a checkout waits for a connection to open, or for a free client of a full pool (default 10 s).
   */
  connectTimeoutMs?: number;
}

/**
 * Limits the worker sets on each of its PostgreSQL sessions, so that a transaction orphaned by a worker
 * whose network died (the backend still holds its owner locks) ends within a known time: PostgreSQL ends a
 * session idle in a transaction after `idleInTransactionTimeoutMs`, cancels a statement running longer than
 * `statementTimeoutMs`, and probes a silent client after `tcpKeepaliveIdleMs` (then every 10 s, 3 times).
 * 0 leaves a limit off.
 */
export interface SessionLimits {
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  tcpKeepaliveIdleMs: number;
}

/**
 * The limits as connection parameters, sent when each session starts (no extra round trip). The
 * keepalives are the server's (`tcp_keepalives_*`): they are what ends a backend whose client vanished
 * without closing the socket; the client's own keepalive only notices the loss on the worker's side.
 */
function sessionParameters(
  limits: SessionLimits,
): Pick<
  pg.PoolConfig,
  | 'statement_timeout'
  | 'query_timeout'
  | 'idle_in_transaction_session_timeout'
  | 'keepAlive'
  | 'keepAliveInitialDelayMillis'
  | 'options'
> {
  const keepaliveSeconds = Math.ceil(limits.tcpKeepaliveIdleMs / 1000);
  return {
    statement_timeout: limits.statementTimeoutMs || undefined,
    // The client's own limit, a little longer: a reply lost on a silent network (the server's limit
    // never reaches the worker then) fails the statement instead of hanging the activity.
    query_timeout: limits.statementTimeoutMs ? limits.statementTimeoutMs + 5_000 : undefined,
    idle_in_transaction_session_timeout: limits.idleInTransactionTimeoutMs || undefined,
    keepAlive: keepaliveSeconds > 0,
    keepAliveInitialDelayMillis: limits.tcpKeepaliveIdleMs || undefined,
    options: keepaliveSeconds > 0 ? serverKeepalives(limits.tcpKeepaliveIdleMs) : undefined,
  };
}

/**
 * A pool whose sessions use ISO dates, parsed as strings, whose idle errors do not crash the process, and
 * whose refused connections say what to set (plaintext, password, certificate: see `explainConnectionError`).
 */
export function createPool(options: PoolOptions, onError?: (err: Error) => void): pg.Pool {
  const session = options.session ? sessionParameters(options.session) : {};
  const pool = new pg.Pool({
    Client: explainingClient(options.urlVariable ?? 'DATABASE_URL'),
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'expiry-reminder',
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    types,
    ...session,
    options: connectionOptions(session.options),
  });
  // A client losing its server (restart, failover, terminated backend) emits 'error' in whatever state it
  // is in: idle in the pool (the pool re-emits it here), checked out between statements, or already
  // released after a failed query when the server's FATAL message arrives. Unheard, any of them crashes
  // the process, so every client gets a listener for its whole life; the statements in flight still
  // fail on their own and are retried by their callers.
  pool.on('error', (err) => onError?.(err));
  pool.on('connect', (client) => {
    client.on('error', (err) => onError?.(err));
  });
  return pool;
}

/**
 * The job's transactions are READ COMMITTED whatever the database's `default_transaction_isolation`: the
 * owner transaction takes its locks in one statement and reads the ledger in the next, which must see
 * every commit made before it got the locks (docs/DESIGN.md#owner-transaction). Under REPEATABLE READ the
 * snapshot of the first statement would hide them, and a late claim would send "14 days" after "7".
 */
const BEGIN_READ_COMMITTED = 'BEGIN ISOLATION LEVEL READ COMMITTED';

/**
 * Runs `fn` in one transaction on a client of `pool`: commit on success, rollback on any error.
 * A client whose rollback failed, or whose server went away, is destroyed rather than returned to the pool.
 * @param begin the statement that opens the transaction ({@link BEGIN_READ_COMMITTED} unless given), e.g.
 *   with READ ONLY; it names its isolation level, so the database's default never decides it.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  begin = BEGIN_READ_COMMITTED,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client whose server goes away between statements (restart, failover, terminated
  // backend) emits 'error'; unheard, that crashes the process. Keep it, fail this transaction, and
  // destroy the client instead of pooling it.
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = errorOf(rollbackError);
    }
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
