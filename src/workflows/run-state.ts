/**
 * What the steps of one run share, for a cycle's own run and a partition's alike: the settings, the counts
 * that travel to the next run, the stop reasons (a cancel request, the time limit), the busy owners, the
 * progress the Web UI and the `progress` query show, and the hand-over to a next run (continue-as-new).
 */
import {
  CancellationScope,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  EVENTS_PER_ACTIVITY,
  ZERO_COUNTS,
  type BusyRetryState,
  type CycleContinuation,
  type CycleCounts,
  type CycleSettings,
  type CycleStatus,
  type PartitionRef,
} from '../domain/cycle';
import { MAX_CARRIED_BUSY_OWNERS } from '../domain/cycle-input';
import { cycleProgressQuery } from '../domain/progress';
import { REMINDERS_SENT } from '../domain/search-attributes';
import { BusyOwners } from './busy-retries';

/** What the steps of one run share; `state` and `counts` belong to the cycle and travel to its next run. */
export interface CycleRun {
  jobRunId: string;
  /** The first run id of this chain of runs: stable across continue-as-new, it keys the scan positions. */
  firstRunId: string;
  settings: CycleSettings;
  state: CycleContinuation;
  counts: CycleCounts;
  scheduledAt: Date | undefined;
  /** Owners found busy, and their retries. */
  busy: BusyOwners;
  /** Why the run must stop scheduling new work now, if it must. */
  stopReason: () => CycleStatus | undefined;
  /** Resolves when a cancel is requested. */
  cancelRequested: Promise<void>;
  /** Shows the counts so far in the Web UI. */
  progress: () => void;
  /** The id range this run claims: the whole id space ({0, 1}) for a small day in the cycle's own run. */
  partition?: PartitionRef;
  /** Partitions the cycle fans its day out to (a big day's cycle run). */
  partitions?: number;
  /** The partitions still running, by workflow id: the progress query names them (their counts are theirs). */
  partitionsRunning: Set<string>;
  /** Hands the run over to its next run. */
  continueAs: (continuation: CycleContinuation) => Promise<never>;
}

/** The state of a chain's first run. */
export function firstState(settings: CycleSettings, startedAtMs: number): CycleContinuation {
  return { settings, startedAtMs, counts: { ...ZERO_COUNTS }, runs: 1, busyOwnerIds: [] };
}

/**
 * The run's shared state: counts, the progress query and line, the stop reasons (a cancel request, the
 * cycle's time limit) and the busy owners carried over. `eager`: whether its activities may run on the
 * worker that schedules them (a small day in the cycle's own run) or go through matching (a partition, so
 * every worker polling the task queue takes a share).
 */
export function runState(
  jobRunId: string,
  settings: CycleSettings,
  state: CycleContinuation,
  scheduledAt: Date | undefined,
  eager: boolean,
  continueAs: (continuation: CycleContinuation) => Promise<never>,
): CycleRun {
  const counts: CycleCounts = { ...state.counts };
  const deadline = state.startedAtMs + settings.maxRunDurationMs;
  let cancelled = false;
  // Cancellation is observed, not propagated: in-flight owner transactions run to their end and the
  // run stops scheduling new ones, then reports `cancelled` with what it did.
  const cancelRequested = new Promise<void>((resolve) => {
    CancellationScope.current().cancelRequested.catch(() => {
      cancelled = true;
      resolve();
    });
  });
  const stopReason = (): CycleStatus | undefined =>
    cancelled ? 'cancelled' : Date.now() >= deadline ? 'time-limit' : undefined;
  const progress = () => setCurrentDetails(`Running · ${progressLine(run)}`);
  const firstRunId = workflowInfo().firstExecutionRunId;
  const run: CycleRun = {
    jobRunId,
    firstRunId,
    settings,
    state,
    counts,
    scheduledAt,
    busy: new BusyOwners(settings, jobRunId, firstRunId, counts, progress, eager, state.busyOwnerIds),
    stopReason,
    cancelRequested,
    progress,
    partitionsRunning: new Set(),
    continueAs,
  };
  // Read by `cycle run --wait` and `schedule trigger --wait`; answering a query records nothing.
  setHandler(cycleProgressQuery, () => ({
    ...counts,
    asOf: settings.asOf,
    runs: state.runs,
    ...(run.partitions ? { partitions: run.partitions, partitionsRunning: [...run.partitionsRunning] } : {}),
  }));
  return run;
}

/** The reminders sent so far, in the search attribute operators filter on. */
export function showRemindersSent({ counts }: CycleRun): void {
  upsertSearchAttributes([{ key: REMINDERS_SENT, value: counts.remindersSent }]);
}

/**
 * Continues as new with the run's settings, counts and busy owners; busy owners past what a continuation
 * carries are counted failed. Returns only when a cancel request (or the time limit) came first: that ends
 * the run here, as a new run would not know of it.
 */
export async function continueAsNextRun(run: CycleRun, busyRetry?: BusyRetryState): Promise<CycleStatus> {
  const { busy, settings, state, counts } = run;
  // The counts it carries promise that everything before them is done.
  await busy.drain();
  const stopped = run.stopReason();
  if (stopped) return stopped;
  const busyOwnerIds = busy.take();
  busy.failNotCarried(busyOwnerIds.slice(MAX_CARRIED_BUSY_OWNERS), MAX_CARRIED_BUSY_OWNERS);
  return run.continueAs({
    settings,
    startedAtMs: state.startedAtMs,
    counts,
    runs: state.runs + 1,
    busyOwnerIds: busyOwnerIds.slice(0, MAX_CARRIED_BUSY_OWNERS),
    ...(busyRetry ? { busyRetry } : {}),
  });
}

/**
 * Activities the run's history still has room for, keeping `reserve` events for what follows them (a timer,
 * the prune, the hand-over or the end); 0 once the server suggests continuing as new.
 */
export function activitiesThatFit({ maxHistoryEvents }: CycleSettings, reserve: number): number {
  const now = workflowInfo();
  if (now.continueAsNewSuggested) return 0;
  return Math.max(0, Math.floor((maxHistoryEvents - now.historyLength - reserve) / EVENTS_PER_ACTIVITY));
}

/** The run's progress for a person: the day, the partition, pages, owners and reminders so far. */
export function progressLine({
  settings,
  counts,
  state,
  scheduledAt,
  partition,
  partitions,
  partitionsRunning,
}: CycleRun): string {
  // A backfilled day runs as of today; the Web UI shows both, so an operator sees which day it stood for.
  const scheduled = scheduledAt ? ` (scheduled ${scheduledAt.toISOString().slice(0, 10)})` : '';
  const split =
    partition && partition.count > 1
      ? ` · partition ${partition.index + 1} of ${partition.count}`
      : partitions
        ? ` · partitions ${partitions - partitionsRunning.size} of ${partitions} done (the counts are theirs)`
        : '';
  return (
    `AsOf ${settings.asOfDate}${scheduled}${split} · thresholds ${settings.thresholdsDays.join(', ')} · page ${counts.pages} · ` +
    `owners ${counts.ownersProcessed} done, ${counts.ownersBusy} busy, ${counts.failedOwners} failed · ` +
    `reminders ${counts.remindersSent} · run ${state.runs}`
  );
}
