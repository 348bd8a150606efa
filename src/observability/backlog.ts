/** The due-documents gauge, counted with the same predicate as the cycle's scan. */
import type pg from 'pg';
import { countDueDocuments } from '../db/candidates';
import { utcDate } from '../domain/dates';
import type { WorkerMetrics } from './metrics';
import { GAUGE_STATEMENT_TIMEOUT_MS, gaugeRefresh, withStatementTimeout, type GaugeRefresh } from './refresh';

/**
 * Keeps the backlog gauge fresh: at most every BACKLOG_REFRESH_INTERVAL on scrape (the count walks the
 * whole window), single-flight, under a statement timeout; a failed count keeps the last value and counts
 * an error. `now()` refreshes after a cycle, when the number changes.
 * @param rule the cycle's thresholds and retention (the worker's `config.cycle`), so the count is the scan's.
 * @param intervalMs BACKLOG_REFRESH_INTERVAL.
 */
export function backlogRefresher(
  pool: pg.Pool,
  rule: { thresholdsDays: readonly number[]; retentionDays: number },
  intervalMs: number,
  metrics: WorkerMetrics,
): GaugeRefresh {
  const { thresholdsDays, retentionDays } = rule;
  return gaugeRefresh({
    intervalMs,
    refresh: async () =>
      metrics.backlog.set(
        await withStatementTimeout(pool, GAUGE_STATEMENT_TIMEOUT_MS, (tx) =>
          countDueDocuments(tx, { asOfDate: utcDate(new Date()), thresholdsDays, retentionDays }),
        ),
      ),
    onError: () => metrics.backlogRefreshErrors.inc(),
  });
}
