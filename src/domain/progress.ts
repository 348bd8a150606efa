/**
 * The cycle's live progress, read by a workflow query. Operators waiting on a cycle (`cycle run --wait`,
 * `schedule trigger --wait`) see it without touching the database, and a query adds nothing to history.
 */
import { defineQuery } from '@temporalio/workflow';
import type { CycleCounts } from './cycle';

/** What the `progress` query answers while the cycle runs (counts cover every run of the cycle). */
export interface CycleProgress extends CycleCounts {
  asOf: string;
  /** Runs so far, counting continue-as-new. */
  runs: number;
  /** A partitioned cycle: how many partitions; the counts above are those of the partitions that ended. */
  partitions?: number;
  /** The workflow ids of the partitions still running; each answers this query with its own counts. */
  partitionsRunning?: string[];
}

/** The query the cycle workflow answers with its `CycleProgress`. */
export const cycleProgressQuery = defineQuery<CycleProgress>('progress');

/** One progress line for a person: pages, owners done/failed/busy, reminders, elapsed time. */
export function formatProgress(p: CycleProgress, elapsedMs: number): string {
  const busy = p.ownersBusy > 0 ? `, ${p.ownersBusy} busy` : '';
  const run = p.runs > 1 ? ` · run ${p.runs}` : '';
  const split = p.partitions
    ? ` · partitions ${p.partitions - (p.partitionsRunning?.length ?? 0)} of ${p.partitions} done`
    : '';
  return (
    `cycle as of ${p.asOf.slice(0, 10)}${split} · page ${p.pages} · owners ${p.ownersProcessed} done, ${p.failedOwners} failed${busy}` +
    ` · ${p.remindersSent} reminders · ${Math.round(elapsedMs / 1000)} s${run}`
  );
}
