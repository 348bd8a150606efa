/**
 * Owners another transaction held when their page was claimed ("busy"): kept by id, retried in groups of
 * `remindOwners` activities once the claim loop is done, round after round with backoff, and counted
 * failed if still busy at the end. The only place the workflow schedules owner groups itself.
 */
import { CancellationScope, log, proxyActivities, proxySinks, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  addCounts,
  claimCounts,
  ownerGroups,
  type BusyRetryState,
  type ClaimTally,
  type CycleCounts,
  type CycleSettings,
  type CycleStatus,
} from '../domain/cycle';
import { describeFailure } from '../domain/failures';
import type { CycleSinks } from './sinks';

/**
 * The options of an activity that claims owners (a partition's pages, or a group of busy owners): tens of
 * milliseconds a transaction, but the last attempt isolates a failing group's owners one by one, hence the
 * wide start-to-close. It heartbeats while it runs, so work lost with a crashed worker is retried after 10 s.
 */
export function ownerClaimActivity(maximumAttempts: number) {
  return {
    startToCloseTimeout: '2m',
    heartbeatTimeout: '10s',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts },
  } satisfies ActivityOptions;
}

// A group's claim is one transaction of two or three statements; five attempts.
const OWNER_GROUP_ACTIVITY = ownerClaimActivity(5);
const { remindOwners } = proxyActivities<Activities>(OWNER_GROUP_ACTIVITY);

const { cycleMetrics } = proxySinks<CycleSinks>();

/** Pauses between rounds of retrying busy owners: 1 s, doubling, at most 30 s. */
const BUSY_RETRY_FIRST_MS = 1_000;
const BUSY_RETRY_MAX_MS = 30_000;

/** What a claim reports of its owners beyond counts: who was busy, and who failed for good. */
export interface ClaimReport extends ClaimTally {
  busyOwnerIds: string[];
  failed: { ownerUserId: string; error: string }[];
}

/** How {@link retryBusyOwners} ended: a stop reason, or a hand-over to the next run (its history nearly full). */
export interface BusyRetryOutcome {
  stopped?: CycleStatus;
  handOver?: BusyRetryState;
}

/**
 * Owners another transaction held get more tries once the claims are done: after 1 s, then doubling up to
 * 30 s, for `busyRetryWindowMs` (twice the database's idle-in-transaction timeout, the longest an orphaned
 * transaction can keep them). A parallel partition's hold lasts milliseconds, so the first retry usually
 * finds them free, with nothing left to send.
 *
 * Each round adds a timer and a group activity per `ownerGroupSize` busy owners to history, and owners may
 * stay busy round after round: a round schedules only the groups `groupsThatFit` says the run's history has
 * room for (at least one per run, so every run makes progress), and hands the rest over to the next run
 * with the rounds' state (`from` there: the round, the pauses waited, the owners of the round not retried
 * yet), so no run passes its history limit and each owner still gets one try per round.
 */
export async function retryBusyOwners(
  busy: BusyOwners,
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
  while (busy.count() > 0) {
    if (pending === 0) {
      const pause = Math.min(BUSY_RETRY_FIRST_MS * 2 ** round, BUSY_RETRY_MAX_MS);
      if (waitedMs + pause > settings.busyRetryWindowMs) return {};
      if (retriedHere && groupsThatFit() < 1) return { handOver: { round, waitedMs } };
      // The timer is not cancellable: a cancel request ends the pause through the race instead, so the
      // run still reports `cancelled` with its counts.
      await Promise.race([CancellationScope.nonCancellable(() => sleep(pause)), cancelRequested]);
      waitedMs += pause;
      const stop = stopReason();
      if (stop) return { stopped: stop };
      const all = busy.take();
      busy.keep(all);
      pending = all.length;
    }
    // A run that has retried nothing yet takes at least one group, so every run makes progress.
    const room = retriedHere ? groupsThatFit() : Math.max(1, groupsThatFit());
    if (room < 1) return { handOver: { round, waitedMs, pending } };
    const all = busy.take();
    const now = all.slice(0, Math.min(pending, room * busy.groupSize));
    // The round's owners not retried yet stay first, ahead of those it retried that are busy again.
    busy.keep(all.slice(now.length));
    retriedHere = true;
    const stopped = await busy.retry(now, stopReason);
    await busy.drain();
    if (stopped) return { stopped };
    pending -= now.length;
    if (pending === 0) round += 1;
  }
  return {};
}

/**
 * The run's busy owners, and their retries: groups of `ownerGroupSize`, at most `ownerConcurrency /
 * ownerGroupSize` group activities in flight. An owner a claim reports failed (after its retries and
 * isolation) is counted and logged; so is every owner of a group whose activity failed as a whole. A retried
 * group counts only what it claims: the transaction that held an owner belongs to another activity, which
 * counts its own (an activity's later attempt never runs beside its earlier one: docs/DESIGN.md#a-retry).
 */
export class BusyOwners {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly size: number;
  private readonly activities: number;
  private busy: string[];

  /**
   * `eager`: whether a group may run on the worker that schedules it (no trip through matching): a small
   * day in the cycle's own run keeps it; a partition's groups go through matching (docs/DESIGN.md#partitions).
   */
  /** @param cycleId the run chain's first run id, which keys the retries' receipts with their activities'. */
  constructor(
    private readonly settings: CycleSettings,
    private readonly jobRunId: string,
    private readonly cycleId: string,
    private readonly counts: CycleCounts,
    private readonly progress: () => void,
    private readonly eager: boolean,
    carriedBusy: string[],
  ) {
    ({ size: this.size, activities: this.activities } = ownerGroups(settings));
    this.busy = [...carriedBusy];
  }

  /**
   * Adds what a claim reported to the counts (with `scan`: its pages, documents and owners found busy for
   * the first time), logs its failed owners, and keeps its busy owners for the retries.
   */
  record(r: ClaimReport, scan: Partial<Pick<CycleCounts, 'pages' | 'documentsSeen' | 'ownersBusy'>>): void {
    addCounts(this.counts, claimCounts(r, scan));
    for (const f of r.failed) {
      cycleMetrics.ownerFailed();
      log.warn('owner failed', { jobRunId: this.jobRunId, ownerUserId: f.ownerUserId, error: f.error });
    }
    this.busy.push(...r.busyOwnerIds);
  }

  /**
   * Schedules the owners' retry groups, each once fewer than the limit are in flight, until all are
   * scheduled or a stop reason comes up (returned; the owners not retried stay busy, so they are counted
   * failed at the end).
   */
  async retry(ownerUserIds: string[], stopReason: () => CycleStatus | undefined): Promise<CycleStatus | undefined> {
    for (let i = 0; i < ownerUserIds.length; i += this.size) {
      while (this.inFlight.size >= this.activities) await Promise.race(this.inFlight);
      const stopped = stopReason();
      if (stopped) {
        this.busy.push(...ownerUserIds.slice(i));
        return stopped;
      }
      this.start(ownerUserIds.slice(i, i + this.size));
    }
    return stopReason();
  }

  /** Waits for every group in flight. */
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  count(): number {
    return this.busy.length;
  }

  /** Owners a group holds. */
  get groupSize(): number {
    return this.size;
  }

  /** Owners taken for a retry that did not fit in this run: still busy, for the next run to carry. */
  keep(ownerUserIds: string[]): void {
    this.busy.push(...ownerUserIds);
  }

  /** The owners found busy so far (each once), handed over for a retry or a continuation. */
  take(): string[] {
    const ids = [...new Set(this.busy)];
    this.busy = [];
    return ids;
  }

  /** Owners still busy when the run ends: counted failed and logged by id, so the errors alert sees them. */
  failStillBusy(): void {
    this.fail(this.take(), 'OwnerBusy: another transaction held the owner until the end of the cycle');
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
    this.fail(
      ownerUserIds,
      `OwnerBusy: busy, and past the ${carried} busy owners a continue-as-new carries; not retried in this cycle`,
    );
  }

  private fail(ownerUserIds: string[], error: string): void {
    this.record(nothingDoneFor(ownerUserIds.map((ownerUserId) => ({ ownerUserId, error }))), {});
    this.progress();
  }

  private start(ownerUserIds: string[]): void {
    const { settings, jobRunId } = this;
    const first = ownerUserIds[0];
    const owners =
      ownerUserIds.length === 1
        ? `owner ${first}`
        : `${ownerUserIds.length} owners, ${first} … ${ownerUserIds[ownerUserIds.length - 1]}`;
    const run: Promise<void> = CancellationScope.nonCancellable(() =>
      // The summary (ids only) names the activity in the Web UI's timeline.
      remindOwners.executeWithOptions(
        { ...OWNER_GROUP_ACTIVITY, summary: `busy before: ${owners}`, allowEagerDispatch: this.eager },
        [
          {
            ownerUserIds,
            asOf: settings.asOf,
            asOfDate: settings.asOfDate,
            thresholdsDays: settings.thresholdsDays,
            retentionDays: settings.retentionDays,
            jobRunId,
            cycleId: this.cycleId,
            lastAttempt: OWNER_GROUP_ACTIVITY.retry.maximumAttempts,
          },
        ],
      ),
    )
      .then(
        // Owners found busy again were counted busy when first found.
        (r) => this.record(r, {}),
        (err: unknown) => {
          // Counted failed, each, but logged once for the group: the activity's failure says why.
          addCounts(this.counts, claimCounts(nothingDoneFor(ownerUserIds)));
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
  }
}

/** A claim that reminded nobody and failed `failed`. */
function nothingDoneFor<F>(failed: F[]): ClaimTally & { busyOwnerIds: string[]; failed: F[] } {
  return { ownersProcessed: 0, ownersNotified: 0, remindersSent: 0, skippedAlreadyMarked: 0, busyOwnerIds: [], failed };
}
