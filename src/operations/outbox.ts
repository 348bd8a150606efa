/**
 * The operator's commands on parked outbox rows (`outbox parked`, `outbox retry`), as the relay's role:
 * RELAY_DATABASE_URL (else DATABASE_URL) must be the `outbox_relay` connection, the only role that may read the outbox.
 */
import type pg from 'pg';
import { requireDatabaseUrl, type Config } from '../config';
import { notifyRelays, selectParked, unparkAll, unparkOne, type ParkedRow } from '../db/outbox-parked';
import { createPool, withTransaction } from '../db/pool';
import { RELAY_ROLE } from '../domain/names';
import { errorOf } from '../domain/failures';

/** What `outbox parked` prints: the parked rows, never their payload. */
export interface ParkedList {
  count: number;
  rows: ParkedRow[];
}

/** What `outbox retry` prints. */
export interface RetryResult {
  /** Rows un-parked: the relay tries them again (and then the rows waiting behind them). */
  retried: number;
  ids: string[];
}

/** Runs `fn` on a one-connection pool of the relay's URL, saying which role to use when the outbox is out of reach. */
async function withOutbox<T>(config: Config, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = createPool({
    connectionString: requireDatabaseUrl(config, 'relay'),
    urlVariable: 'RELAY_DATABASE_URL (or DATABASE_URL)',
    max: 1,
    applicationName: 'expiry-reminder-outbox',
  });
  try {
    return await fn(pool);
  } catch (err) {
    if ((err as { code?: string }).code === '42501') {
      throw new Error(
        `${errorOf(err).message}: outbox commands connect as the relay; set RELAY_DATABASE_URL (or DATABASE_URL) to the ${RELAY_ROLE} role's connection`,
      );
    }
    throw err;
  } finally {
    await pool.end();
  }
}

/** `outbox parked`: the parked rows, oldest first, at most `limit`. */
export function listParkedCommand(config: Config, options: { limit: number }): Promise<ParkedList> {
  return withOutbox(config, async (pool) => {
    const rows = await selectParked(pool, options.limit);
    return { count: rows.length, rows };
  });
}

/**
 * `outbox retry <id>` or `outbox retry --all`: un-parks rows so the relay tries them again, and wakes the
 * relays. Fix the cause first (the payload, the topic's `max.message.bytes`): a row refused again is parked
 * again after RELAY_MAX_ATTEMPTS refusals.
 * @throws Error for an id that is unknown, already published, or not parked; nothing is changed then.
 */
export function retryParkedCommand(config: Config, target: { id: string } | { all: true }): Promise<RetryResult> {
  return withOutbox(config, (pool) =>
    withTransaction(pool, async (tx) => {
      if ('all' in target) {
        const ids = await unparkAll(tx);
        if (ids.length > 0) await notifyRelays(tx);
        return { retried: ids.length, ids };
      }
      const outcome = await unparkOne(tx, target.id);
      if (outcome === 'unknown') throw new Error(`no outbox row has id ${target.id}`);
      if (outcome === 'published') throw new Error(`outbox row ${target.id} is already published; nothing to retry`);
      if (outcome === 'not-parked') {
        throw new Error(`outbox row ${target.id} is not parked (the relay is still trying it); nothing to retry`);
      }
      await notifyRelays(tx);
      return { retried: 1, ids: [target.id] };
    }),
  );
}
