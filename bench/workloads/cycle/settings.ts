/** The settings every path of the cycle workload runs with, so they all do the same work. */
import type { CandidateWindow } from '../../../src/db/candidates';
import type { BenchOptions } from '../../options';

/** The schedule's defaults: reminders 30, 7, 1 and 0 days before expiry, markers kept 90 days. */
const THRESHOLDS = [30, 7, 1, 0];
const RETENTION = 90;

export interface CycleSettings {
  asOf: string;
  /** Page size of the candidate scan (the cycle's batchSize, the baselines' page). */
  batchSize: number;
  ownerConcurrency: number;
  ownerGroupSize: number;
  /** The cycle's partition count; absent: planned (the baselines do not partition). */
  partitions?: number;
  /** The cycle's time limit in ms; absent: its default. */
  maxRunDurationMs?: number;
  /** The worker's pool, and baseline A's. */
  poolSize: number;
  window: CandidateWindow;
}

/** The cycle settings of the command line. */
export function cycleSettings(options: BenchOptions): CycleSettings {
  return {
    asOf: options.asOf,
    batchSize: options.batchSize,
    ownerConcurrency: options.ownerConcurrency,
    ownerGroupSize: options.ownerGroupSize,
    ...(options.partitions !== undefined ? { partitions: options.partitions } : {}),
    ...(options.maxRunMinutes !== undefined ? { maxRunDurationMs: options.maxRunMinutes * 60_000 } : {}),
    poolSize: options.poolSize,
    window: { asOfDate: options.asOf, thresholdsDays: THRESHOLDS, retentionDays: RETENTION },
  };
}

/** The instant the baselines claim as of: midnight UTC of AsOf, as the cycle does. */
export function asOfInstant(s: CycleSettings): string {
  return `${s.asOf}T00:00:00.000Z`;
}
