/** What the worker gives the activities: its pool, logger, configuration and metrics. */
import type pg from 'pg';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import type { WorkerMetrics } from '../observability/metrics';

export interface ActivityDeps {
  pool: pg.Pool;
  logger: Logger;
  config: Pick<Config, 'cycle' | 'scanSlices' | 'partitions'>;
  metrics?: WorkerMetrics;
}
