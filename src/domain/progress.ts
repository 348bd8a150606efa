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
}

/** The query the cycle workflow answers with its `CycleProgress`. */
export const cycleProgressQuery = defineQuery<CycleProgress>('progress');

/** One progress line for a person: pages, owners done/failed/busy, reminders, elapsed time. */
export function formatProgress(p: CycleProgress, elapsedMs: number): string {
  const busy = p.ownersBusy > 0 ? `, ${p.ownersBusy} busy` : '';
  const run = p.runs > 1 ? ` · run ${p.runs}` : '';
  return (
    `cycle as of ${p.asOf.slice(0, 10)} · page ${p.pages} · owners ${p.ownersProcessed} done, ${p.failedOwners} failed${busy}` +
    ` · ${p.remindersSent} reminders · ${Math.round(elapsedMs / 1000)} s${run}`
  );
}
