/**
 * What the cycle reports to the worker process outside history: metrics. Sink calls are not recorded
 * and not repeated on replay, so a counter counts each event once.
 */
import type { Sinks } from '@temporalio/workflow';
import type { CycleResult } from '../domain/cycle';

export interface CycleSinks extends Sinks {
  cycleMetrics: {
    /** An owner still failed after its retries. */
    ownerFailed(): void;
    /** The cycle ended with a result (completed, time-limit or cancelled). */
    cycleEnded(result: CycleResult): void;
    /** The cycle failed outright (its page query or prune exhausted their retries, or bad input). */
    cycleFailed(): void;
  };
}
