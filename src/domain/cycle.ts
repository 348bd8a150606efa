/**
 * The cycle's contracts (docs/DESIGN.md#result, #names): workflow input, resolved settings, counts and the
 * result, and the owner-group arithmetic; the settings' bounds are in `settings.ts`, the input rules in
 * `cycle-input.ts`. Shared by workflow and
 * activity code, so nothing here may touch Node APIs.
 */
import { addDays, utcDate } from './dates';
import { CYCLE_SETTINGS } from './settings';

/** Workflow input: every field optional, each overrides the worker's configuration for this run. */
export interface CycleInput {
  /**
   * The cycle's instant (ISO 8601) or date (`YYYY-MM-DD`, read as midnight UTC), never after today's
   * UTC date. Default: the schedule's action time, else the cycle's start.
   */
  asOf?: string;
  thresholdsDays?: number[];
  batchSize?: number;
  /** Accepted only when equal to the worker's configured retention: it is the ledger's, not a run's. */
  retentionDays?: number;
  maxRunDurationMs?: number;
  /** Owners in flight at once (in `ownerConcurrency / ownerGroupSize` activities). */
  ownerConcurrency?: number;
  /** Owners per activity and transaction; capped by `ownerConcurrency`. */
  ownerGroupSize?: number;
  /** History events one run may use before it continues as new. */
  maxHistoryEvents?: number;
  /**
   * Partitions of the day: one is claimed in the cycle's own run, more each in a child workflow
   * (docs/DESIGN.md#partitions); default: from the
   * day's due count and the worker's `REMINDER_PARTITIONS` / `REMINDER_PARTITION_SIZE`.
   */
  partitions?: number;
  /**
   * Pages one `claimPage` activity claims at most (docs/DESIGN.md#page-claims); default 64, the bound
   * (`CYCLE_SETTINGS.pagesPerClaim` in settings.ts). Fewer make more, smaller activities: a finer spread over
   * workers, and more orchestration per page.
   */
  pagesPerClaim?: number;
  /** Set by the workflow itself when it continues as new; validated like the rest when it arrives. */
  continuation?: CycleContinuation;
}

/** Settings a cycle runs with, fixed at its start and recorded in history. */
export interface CycleSettings {
  asOf: string;
  asOfDate: string;
  thresholdsDays: number[];
  batchSize: number;
  retentionDays: number;
  maxRunDurationMs: number;
  ownerConcurrency: number;
  ownerGroupSize: number;
  maxHistoryEvents: number;
  /** The partition count the input asked for; absent: the cycle plans it from the day's due count. */
  partitions?: number;
  /** Pages per `claimPage` activity the input asked for; absent: the setting's default (settings.ts). */
  pagesPerClaim?: number;
  /**
   * How long owners found busy (another transaction holds their lock) are retried at the end of the
   * scan, with backoff, before they count as failed. From the worker's configuration, never from input.
   */
  busyRetryWindowMs: number;
}

/** The worker's configured defaults for the overridable settings. */
export type CycleDefaults = Omit<CycleSettings, 'asOf' | 'asOfDate' | 'partitions'>;

export interface CycleCounts {
  remindersSent: number;
  ownersNotified: number;
  skippedAlreadyMarked: number;
  failedOwners: number;
  ownersProcessed: number;
  /** Owners found locked by another transaction and retried later in the cycle. */
  ownersBusy: number;
  pages: number;
  documentsSeen: number;
}

/**
 * State carried from one run of a cycle to the next when it continues as new. No document value: the
 * scan's position stays in PostgreSQL, keyed by the cycle and `counts.pages`.
 */
export interface CycleContinuation {
  settings: CycleSettings;
  startedAtMs: number;
  counts: CycleCounts;
  runs: number;
  /** Owners found busy and not yet retried. */
  busyOwnerIds: string[];
  /**
   * Set when a run handed over in the middle of its busy-owner retries, its history nearly full: the scan is
   * done, and the next run goes on with the rounds where this one stopped. Absent otherwise.
   */
  busyRetry?: BusyRetryState;
}

/** Where the busy-owner retries stand: rounds done, and the pauses waited so far (within `busyRetryWindowMs`). */
export interface BusyRetryState {
  round: number;
  waitedMs: number;
  /** The first `pending` busy owners carried have not had their try of round `round` yet (its pause is over). */
  pending?: number;
}

export type CycleStatus = 'completed' | 'time-limit' | 'cancelled';

/** The cycle's result (camelCase). */
export interface CycleResult extends CycleCounts {
  status: CycleStatus;
  jobRunId: string;
  asOf: string;
  /** The schedule's action time of a scheduled or backfilled run; a backfilled day runs as of its start. */
  scheduledAt?: string;
  thresholdsDays: number[];
  pruned: number;
  durationMs: number;
  /** Runs of the workflow this cycle used (more than one when it continued as new). */
  runs: number;
  /** Partitions the day ran in, each a child workflow; absent for a day of one (claimed in the cycle's own run). */
  partitions?: number;
}

/** Adds `add`'s counts to `into`: a claim's ({@link claimCounts}) to its run's, a partition's to its cycle's. */
export function addCounts(into: CycleCounts, add: CycleCounts): void {
  for (const key of Object.keys(ZERO_COUNTS) as (keyof CycleCounts)[]) into[key] += add[key];
}

/**
 * What a claim of owners reports, in counts: a partition's `claimPage` (its pages' groups together) or a busy
 * retry's `remindOwners` (one group). Failed owners come by id, each counted once.
 */
export interface ClaimTally {
  ownersProcessed: number;
  ownersNotified: number;
  remindersSent: number;
  skippedAlreadyMarked: number;
  failed: readonly unknown[];
}

/**
 * A claim's report as counts, with what the scan adds (`pages`, `documentsSeen`, owners found busy for the
 * first time): the one rule by which every claim reaches the cycle's counts, through {@link addCounts}.
 */
export function claimCounts(
  r: ClaimTally,
  scan: Partial<Pick<CycleCounts, 'pages' | 'documentsSeen' | 'ownersBusy'>> = {},
): CycleCounts {
  return {
    ...ZERO_COUNTS,
    ownersProcessed: r.ownersProcessed,
    ownersNotified: r.ownersNotified,
    remindersSent: r.remindersSent,
    skippedAlreadyMarked: r.skippedAlreadyMarked,
    failedOwners: r.failed.length,
    ...scan,
  };
}

/** One partition of a cycle's scan: the `index`-th (from 0) of `count` id ranges. */
export interface PartitionRef {
  index: number;
  count: number;
}

/** The input of a partition's child workflow: everything its parent fixed, and its own continuation. */
export interface PartitionInput {
  partition: PartitionRef;
  /** The cycle's workflow id: the events' `correlation_id`, as for a small day's claims in the cycle's run. */
  jobRunId: string;
  settings: CycleSettings;
  /** When the cycle started: the partitions share its time limit. */
  cycleStartedAtMs: number;
  /** Set by the partition itself when it continues as new. */
  continuation?: CycleContinuation;
}

/** What a partition reports to its cycle. */
export interface PartitionResult {
  status: CycleStatus;
  counts: CycleCounts;
  runs: number;
  /** The partition's first run id, which keys its scan positions; the cycle's prune deletes them. */
  firstRunId: string;
}

/** A partition's workflow id: its cycle's, then which of how many (the Web UI lists it under the cycle). */
export function partitionWorkflowId(jobRunId: string, { index, count }: PartitionRef): string {
  return `${jobRunId}/partition-${index + 1}-of-${count}`;
}

/** Which partition a workflow id of {@link partitionWorkflowId} names; undefined for any other id (a cycle's). */
export function partitionOfWorkflowId(workflowId: string): PartitionRef | undefined {
  const m = /\/partition-(\d+)-of-(\d+)$/.exec(workflowId);
  return m ? { index: Number(m[1]) - 1, count: Number(m[2]) } : undefined;
}

/**
 * How many partitions a day of `due` documents gets: one per `partitionSize` due documents, at least one,
 * at most `maxPartitions`. A small day is one partition, in the cycle's own run; a big one spreads over the workers.
 */
export function partitionCount(due: number, maxPartitions: number, partitionSize: number): number {
  const wanted = Math.ceil(Math.max(0, due) / Math.max(1, partitionSize));
  return Math.max(1, Math.min(maxPartitions, CYCLE_SETTINGS.partitions.max, wanted));
}

export const ZERO_COUNTS: CycleCounts = {
  remindersSent: 0,
  ownersNotified: 0,
  skippedAlreadyMarked: 0,
  failedOwners: 0,
  ownersProcessed: 0,
  ownersBusy: 0,
  pages: 0,
  documentsSeen: 0,
};

/**
 * How a cycle spreads owners over activities: `size` owners per activity (one transaction each), at most
 * `activities` of them in flight, so never more than `ownerConcurrency` owners at once.
 */
export function ownerGroups(settings: Pick<CycleSettings, 'ownerConcurrency' | 'ownerGroupSize'>): {
  size: number;
  activities: number;
} {
  const size = Math.max(1, Math.min(settings.ownerGroupSize, settings.ownerConcurrency));
  return { size, activities: Math.max(1, Math.floor(settings.ownerConcurrency / size)) };
}

/** History events an activity may cost at worst (scheduled, started, completed, plus a workflow task). */
export const EVENTS_PER_ACTIVITY = 6;

/**
 * History one page may add at worst: its own activity and one group activity per `ownerGroupSize` of its
 * `batchSize` documents (each document another owner). A run continues as new between pages, so one page
 * must fit in `maxHistoryEvents`, or a run may pass it, and the server's 51,200-event limit with it.
 */
export function pageHistoryEvents(
  settings: Pick<CycleSettings, 'batchSize' | 'ownerConcurrency' | 'ownerGroupSize'>,
): number {
  return (Math.ceil(settings.batchSize / ownerGroups(settings).size) + 1) * EVENTS_PER_ACTIVITY;
}

/**
 * How long a cycle retries owners it found busy. An owner stays locked for as long as the transaction
 * holding it lives; one orphaned by a dead worker lives until PostgreSQL ends its idle session, so twice
 * that timeout plus a margin covers it. Without the timeout nothing bounds it; ten minutes then.
 */
export function busyRetryWindowMs(idleInTransactionTimeoutMs: number): number {
  return idleInTransactionTimeoutMs > 0 ? 2 * idleInTransactionTimeoutMs + 10_000 : 10 * 60_000;
}

/**
 * The execution timeout of scheduled cycles: 90 % of the polling interval, and never below a minute.
 * With overlap SKIP, a cycle that never ends (a workflow-task failure loop after a bad deploy, say)
 * would skip every later tick; timed out before the next tick, it cannot. The margin leaves room for
 * the next tick's start. REMINDER_MAX_RUN_DURATION must stay below it, so a healthy cycle ends itself
 * (as `time-limit`, with its result) long before the server would end it.
 */
export function scheduledCycleTimeoutMs(intervalMs: number): number {
  return Math.max(60_000, Math.round(intervalMs * 0.9));
}

/** The prune's cutoff, and the AsOf it would have used when the worker's clock held it back. */
export interface PruneCutoff {
  cutoff: string;
  /** AsOfDate − RetentionDays, when it lay past what the worker's clock allows (the cycle's clock ran ahead). */
  heldBackFrom?: string;
}

/**
 * The date before which the prune deletes markers: AsOfDate − RetentionDays, but never past the worker's
 * own today − RetentionDays. The cutoff is raised for good (docs/DESIGN.md#resolutions), so one cycle whose
 * AsOf came from a clock that jumped ahead (the Temporal server's, or a workflow's) would otherwise hide
 * days from every later scan; the worker's clock has the last word.
 */
export function pruneCutoffFor(asOfDate: string, retentionDays: number, now: Date): PruneCutoff {
  const wanted = addDays(asOfDate, -retentionDays);
  const allowed = addDays(utcDate(now), -retentionDays);
  return wanted <= allowed ? { cutoff: wanted } : { cutoff: allowed, heldBackFrom: wanted };
}
