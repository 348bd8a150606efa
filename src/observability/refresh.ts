/**
 * Gauges read from the database, refreshed at most every interval and never twice at once: a scrape
 * loop (every replica, every 15 s) must not cost the database more than the work the gauge watches.
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../db/pool';

/** How long a gauge's statement may run before PostgreSQL cancels it (the gauge keeps its last value). */
export const GAUGE_STATEMENT_TIMEOUT_MS = 10_000;

export interface GaugeRefresh {
  /** For a scrape: refreshes when the last refresh began `intervalMs` ago or more; joins one in flight. */
  scrape(): Promise<void>;
  /** Refreshes now (after a cycle), or joins the refresh in flight. */
  now(): Promise<void>;
}

/**
 * Single-flight, throttled refresh of gauges. A failed refresh keeps the gauges' last values and calls
 * `onError` (which counts it); the next one is tried after the interval, like any other.
 */
export function gaugeRefresh(options: {
  intervalMs: number;
  refresh: () => Promise<void>;
  onError: (err: Error) => void;
  clock?: () => number;
}): GaugeRefresh {
  const clock = options.clock ?? Date.now;
  let lastStart = -Infinity;
  let inFlight: Promise<void> | undefined;
  const start = () => {
    lastStart = clock();
    inFlight = options
      .refresh()
      .catch((err: Error) => options.onError(err))
      .finally(() => (inFlight = undefined));
    return inFlight;
  };
  return {
    scrape: () => inFlight ?? (clock() - lastStart < options.intervalMs ? Promise.resolve() : start()),
    now: () => inFlight ?? start(),
  };
}

/** Runs a gauge's statements in a transaction under `set local statement_timeout`. */
export function withStatementTimeout<T>(
  pool: pg.Pool,
  timeoutMs: number,
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return withTransaction(pool, async (tx) => {
    await tx.query(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
    return fn(tx);
  });
}
