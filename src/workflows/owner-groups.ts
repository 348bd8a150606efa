/**
 * The owner half of a cycle: groups of owners reminded by a bounded number of activities in flight, and
 * the rounds that retry owners another transaction held. Tallies what each group reports into the
 * cycle's counts.
 */
import { CancellationScope, log, proxyActivities, proxySinks, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { Activities, RemindOwnersResult } from '../activities';
import {
  ownerGroups,
  type BusyRetryState,
  type CycleCounts,
  type CycleSettings,
  type CycleStatus,
} from '../domain/cycle';
import { MAX_QUEUED_BY_PER_OWNER } from '../domain/cycle-input';
import { describeFailure } from '../domain/failures';
import type { CycleSinks } from './sinks';

// A group is one statement in one transaction, tens of milliseconds; the last attempt isolates its
// owners one by one, which takes longer, hence the wide start-to-close. The activity heartbeats every
// few seconds while it runs, so a group lost with a crashed worker is retried after 10 s, not 2 min.
const OWNER_GROUP_ACTIVITY = {
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
} satisfies ActivityOptions;
const { remindOwners } = proxyActivities<Activities>(OWNER_GROUP_ACTIVITY);

const { cycleMetrics } = proxySinks<CycleSinks>();

/** Pauses between rounds of retrying busy owners: 1 s, doubling, at most 30 s. */
const BUSY_RETRY_FIRST_MS = 1_000;
const BUSY_RETRY_MAX_MS = 30_000;

/** How {@link retryBusyOwners} ended: a stop reason, or a hand-over to the next run (its history nearly full). */
export interface BusyRetryOutcome {
  stopped?: CycleStatus;
  handOver?: BusyRetryState;
}

/**
 * Owners another transaction held when their group ran get more tries once the scan is done: after 1 s,
 * then doubling up to 30 s, for `busyRetryWindowMs` (twice the database's idle-in-transaction timeout,
 * the longest an orphaned transaction can keep them). A parallel cycle's hold lasts milliseconds, so
 * the first retry usually finds them free, with nothing left to send.
 *
 * Each round adds a timer and a group activity per `ownerGroupSize` busy owners to history, and owners may
 * stay busy round after round: a round schedules only the groups `groupsThatFit` says the run's history has
 * room for (at least one per run, so every run makes progress), and hands the rest over to the next run
 * with the rounds' state (`from` there: the round, the pauses waited, the owners of the round not retried
 * yet), so no run passes its history limit and each owner still gets one try per round.
 */
export async function retryBusyOwners(
  groups: RemindOwnersInFlight,
  settings: CycleSettings,
  stopReason: () => CycleStatus | undefined,
  cancelRequested: Promise<void>,
  groupsThatFit: () => number,
  from: BusyRetryState = { round: 0, waitedMs: 0 },
): Promise<BusyRetryOutcome> {
  let { round, waitedMs } = from;
  // Owners at the head of the busy list not yet retried in round `round` (its pause already waited).
  let pending = from.pending ?? 0;
  let retriedHere = false;
  while (groups.busyCount() > 0) {
    if (pending === 0) {
      const pause = Math.min(BUSY_RETRY_FIRST_MS * 2 ** round, BUSY_RETRY_MAX_MS);
      if (waitedMs + pause > settings.busyRetryWindowMs) return {};
      if (retriedHere && groupsThatFit() < 1) return { handOver: { round, waitedMs } };
      // The timer is not cancellable: a cancel request ends the pause through the race instead, so the
      // cycle still reports `cancelled` with its counts.
      await Promise.race([CancellationScope.nonCancellable(() => sleep(pause)), cancelRequested]);
      waitedMs += pause;
      const stop = stopReason();
      if (stop) return { stopped: stop };
      const all = groups.takeBusy();
      groups.keepBusy(all);
      pending = all.length;
    }
    // A run that has retried nothing yet takes at least one group, so every run makes progress.
    const room = retriedHere ? groupsThatFit() : Math.max(1, groupsThatFit());
    if (room < 1) return { handOver: { round, waitedMs, pending } };
    const busy = groups.takeBusy();
    const now = busy.slice(0, Math.min(pending, room * groups.groupSize));
    // The round's owners not retried yet stay first, ahead of those it retried that are busy again.
    groups.keepBusy(busy.slice(now.length));
    retriedHere = true;
    const scheduled = await groups.schedule(now, stopReason, { retry: true });
    await groups.drain();
    if (scheduled.stopped) return { stopped: scheduled.stopped };
    pending -= now.length;
    if (pending === 0) round += 1;
  }
  return {};
}

/**
 * Reminds owner groups of `ownerGroupSize`, at most `ownerConcurrency / ownerGroupSize` group activities
 * in flight across pages: a page's groups start while the previous page's still run, so the activities in
 * flight do not drain at every page boundary ("window" is the documents' date range, not this limit). An
 * owner the activity reports failed (after its retries and isolation) is counted and logged; so is every
 * owner of a group whose activity failed as a whole. The cycle goes on. Owners it reports busy are kept
 * for {@link retryBusyOwners}.
 */
export class RemindOwnersInFlight {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly size: number;
  private readonly activities: number;
  private busy: string[];
  /**
   * For each busy owner, the `queuedBy` of every activity that found it busy: one of their earlier attempts
   * may have been the transaction holding it, so its retry reads back what they queued.
   */
  private readonly busyQueuedBy = new Map<string, Set<string>>();
  /**
   * Whether a group may run eagerly on the worker that schedules it (no trip through matching). A cycle that
   * scans alone keeps it (one box, faster); a partition's groups go through matching, so every worker
   * polling the task queue takes a share (docs/DESIGN.md#partitions).
   */
  allowEagerDispatch = true;

  constructor(
    private readonly settings: CycleSettings,
    private readonly jobRunId: string,
    private readonly counts: CycleCounts,
    private readonly progress: () => void,
    carriedBusy: string[],
    carriedBusyQueuedBy: Record<string, string[]> = {},
  ) {
    ({ size: this.size, activities: this.activities } = ownerGroups(settings));
    this.busy = [...carriedBusy];
    for (const [owner, keys] of Object.entries(carriedBusyQueuedBy)) this.busyQueuedBy.set(owner, new Set(keys));
  }

  /**
   * The `queuedBy` keys of the activities that found `ownerUserIds` busy (for a retry, or a continuation to
   * carry); undefined when none of them has one.
   */
  busyQueuedByOf(ownerUserIds: string[]): Record<string, string[]> | undefined {
    const entries = ownerUserIds.flatMap((id) => {
      const keys = this.busyQueuedBy.get(id);
      return keys ? [[id, [...keys]] as [string, string[]]] : [];
    });
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  }

  /**
   * Schedules the owners' groups, each once fewer than the limit are in flight. Resolves once all are
   * scheduled (or a stop reason came up first); `settled` resolves when this call's groups have ended.
   * `retry` marks owners found busy before, so they are not counted busy twice.
   */
  async schedule(
    ownerUserIds: string[],
    stopReason: () => CycleStatus | undefined,
    { retry = false }: { retry?: boolean } = {},
  ): Promise<{ stopped: CycleStatus | undefined; settled: Promise<void> }> {
    const mine: Promise<void>[] = [];
    let stopped: CycleStatus | undefined;
    for (let i = 0; i < ownerUserIds.length; i += this.size) {
      while (this.inFlight.size >= this.activities) await Promise.race(this.inFlight);
      stopped = stopReason();
      if (stopped) {
        // Busy owners not retried yet stay busy, so they are counted failed at the end.
        if (retry) this.busy.push(...ownerUserIds.slice(i));
        break;
      }
      mine.push(this.start(ownerUserIds.slice(i, i + this.size), retry));
    }
    return { stopped: stopped ?? stopReason(), settled: Promise.all(mine).then(() => undefined) };
  }

  /** Waits for every group in flight. */
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  busyCount(): number {
    return this.busy.length;
  }

  /** Owners a group holds. */
  get groupSize(): number {
    return this.size;
  }

  /** Owners taken for a retry that did not fit in this run: still busy, for the next run to carry. */
  keepBusy(ownerUserIds: string[]): void {
    this.busy.push(...ownerUserIds);
  }

  /** The owners found busy so far (each once), handed over for a retry or a continuation. */
  takeBusy(): string[] {
    const ids = [...new Set(this.busy)];
    this.busy = [];
    return ids;
  }

  /** Owners still busy when the cycle ends: counted failed and logged by id, so the errors alert sees them. */
  failStillBusy(): void {
    this.failBusy(this.takeBusy(), 'OwnerBusy: another transaction held the owner until the end of the cycle');
  }

  /**
   * Busy owners a continuation cannot carry (more than `MAX_CARRIED_BUSY_OWNERS`): counted failed and
   * logged by id like the owners still busy at the end, so the result and the errors alert tell the
   * operator; the next cycle finds them again.
   */
  failNotCarried(ownerUserIds: string[], carried: number): void {
    if (ownerUserIds.length === 0) return;
    log.warn('busy owners not carried into the next run', {
      jobRunId: this.jobRunId,
      carried,
      notCarried: ownerUserIds.length,
    });
    this.failBusy(
      ownerUserIds,
      `OwnerBusy: busy, and past the ${carried} busy owners a continue-as-new carries; not retried in this cycle`,
    );
  }

  private failBusy(ownerUserIds: string[], error: string): void {
    for (const ownerUserId of ownerUserIds) {
      this.counts.failedOwners += 1;
      cycleMetrics.ownerFailed();
      log.warn('owner failed', { jobRunId: this.jobRunId, ownerUserId, error });
    }
    this.progress();
  }

  /**
   * Adds what a claim reported (a group's, or a page's: docs/DESIGN.md#partitions) to the counts, `foundBusy` of
   * its owners to `ownersBusy` (those found busy for the first time), and keeps its busy owners, with its
   * `queuedBy`, for the retries.
   */
  record(r: RemindOwnersResult, foundBusy: number): void {
    tallyGroup(this.counts, r, this.jobRunId);
    this.counts.ownersBusy += foundBusy;
    this.busy.push(...r.busyOwnerIds);
    if (r.busyQueuedBy) {
      for (const id of r.busyOwnerIds) {
        const keys = this.busyQueuedBy.get(id) ?? new Set<string>();
        if (keys.size < MAX_QUEUED_BY_PER_OWNER) keys.add(r.busyQueuedBy);
        this.busyQueuedBy.set(id, keys);
      }
    }
  }

  private start(ownerUserIds: string[], retry: boolean): Promise<void> {
    const { settings, jobRunId, counts } = this;
    const first = ownerUserIds[0];
    const owners =
      ownerUserIds.length === 1
        ? `owner ${first}`
        : `${ownerUserIds.length} owners, ${first} … ${ownerUserIds[ownerUserIds.length - 1]}`;
    const earlier = retry ? this.busyQueuedByOf(ownerUserIds) : undefined;
    const run: Promise<void> = CancellationScope.nonCancellable(() =>
      // The summary (ids only) names the activity in the Web UI's timeline.
      remindOwners.executeWithOptions(
        {
          ...OWNER_GROUP_ACTIVITY,
          summary: retry ? `busy before: ${owners}` : owners,
          allowEagerDispatch: this.allowEagerDispatch,
        },
        [
          {
            ownerUserIds,
            asOf: settings.asOf,
            asOfDate: settings.asOfDate,
            thresholdsDays: settings.thresholdsDays,
            retentionDays: settings.retentionDays,
            jobRunId,
            lastAttempt: OWNER_GROUP_ACTIVITY.retry.maximumAttempts,
            ...(earlier ? { earlierQueuedBy: earlier } : {}),
          },
        ],
      ),
    )
      .then(
        (r) => this.record(r, retry ? 0 : r.busyOwnerIds.length),
        (err: unknown) => {
          counts.failedOwners += ownerUserIds.length;
          for (let n = 0; n < ownerUserIds.length; n += 1) cycleMetrics.ownerFailed();
          log.warn('owner group failed', {
            jobRunId,
            owners: ownerUserIds.length,
            firstOwnerUserId: first,
            error: describeFailure(err),
          });
        },
      )
      .finally(() => {
        this.inFlight.delete(run);
        this.progress();
      });
    this.inFlight.add(run);
    return run;
  }
}

function tallyGroup(counts: CycleCounts, r: RemindOwnersResult, jobRunId: string): void {
  counts.ownersProcessed += r.ownersProcessed;
  counts.remindersSent += r.remindersSent;
  counts.skippedAlreadyMarked += r.skippedAlreadyMarked;
  counts.ownersNotified += r.ownersNotified;
  counts.failedOwners += r.failed.length;
  for (const f of r.failed) {
    cycleMetrics.ownerFailed();
    log.warn('owner failed', { jobRunId, ownerUserId: f.ownerUserId, error: f.error });
  }
}
