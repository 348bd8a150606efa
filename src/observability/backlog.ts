/** The due-documents gauge, counted with the same predicate as the cycle's scan. */
import type pg from 'pg';
import type { Config } from '../config';
import { countDueDocuments } from '../db/candidates';
import { utcDate } from '../domain/dates';
import type { WorkerMetrics } from './metrics';
import { GAUGE_STATEMENT_TIMEOUT_MS, gaugeRefresh, withStatementTimeout, type GaugeRefresh } from './refresh';

/**
 * Keeps the backlog gauge fresh: at most every BACKLOG_REFRESH_INTERVAL on scrape (the count walks the
 * whole window), single-flight, under a statement timeout; a failed count keeps the last value and counts
 * an error. `now()` refreshes after a cycle, when the number changes.
 */
export function backlogRefresher(pool: pg.Pool, config: Config, metrics: WorkerMetrics): GaugeRefresh {
  const { thresholdsDays, retentionDays } = config.cycle;
  return gaugeRefresh({
    intervalMs: config.backlogRefreshIntervalMs,
    refresh: async () =>
      metrics.backlog.set(
        await withStatementTimeout(pool, GAUGE_STATEMENT_TIMEOUT_MS, (tx) =>
          countDueDocuments(tx, { asOfDate: utcDate(new Date()), thresholdsDays, retentionDays }),
        ),
      ),
    onError: () => metrics.backlogRefreshErrors.inc(),
  });
}
