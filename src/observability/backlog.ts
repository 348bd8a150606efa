/** The due-documents gauge, counted with the same predicate as the cycle's scan. */
import type pg from 'pg';
import type { Config } from '../config';
import { countDueDocuments } from '../db/candidates';
import { utcDate } from '../domain/thresholds';
import type { WorkerMetrics } from './metrics';

/** Keeps the backlog gauge fresh on scrape, at most every `minIntervalMs`; a failed count keeps the last value. */
export function backlogRefresher(pool: pg.Pool, config: Config, metrics: WorkerMetrics, minIntervalMs = 15_000) {
  let last = 0;
  return async () => {
    if (Date.now() - last < minIntervalMs) return;
    last = Date.now();
    const { thresholdsDays, retentionDays } = config.cycle;
    metrics.backlog.set(
      await countDueDocuments(pool, { asOfDate: utcDate(new Date()), thresholdsDays, retentionDays }),
    );
  };
}
