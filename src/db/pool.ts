/**
 * Connection pool and transaction helper. Every SQL function takes a `Queryable` so it runs the same
 * inside `withTransaction` or on the pool.
 */
import pg from 'pg';

/** A pool, a pooled client or a plain client: anything that runs a statement. */
export type Queryable = Pick<pg.ClientBase, 'query'>;

const DATE_OID = 1082;

/**
 * `date` columns stay `YYYY-MM-DD` strings: pg's default turns them into local-midnight `Date`s,
 * which shifts expiry dates by a day west of UTC.
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === DATE_OID ? (value: string) => value : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export interface PoolOptions {
  connectionString: string;
  max?: number;
  /** Shown in `pg_stat_activity`, so an operator can tell the worker's sessions apart. */
  applicationName?: string;
}

/** A pool whose clients parse dates as strings and whose idle errors do not crash the process. */
export function createPool(options: PoolOptions, onError?: (err: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'expiry-reminder',
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    types,
  });
  // An idle client losing its server (restart, failover) emits here; without a listener Node exits.
  pool.on('error', (err) => onError?.(err));
  return pool;
}

/**
 * Runs `fn` in one transaction on a client of `pool`: commit on success, rollback on any error.
 * A client whose rollback failed is destroyed rather than returned to the pool.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw err;
  } finally {
    client.release(broken);
  }
}
