/**
 * `documentExpiryReminderCycle` (SPEC §3, §5). Deterministic orchestration only: pages owner ids out of
 * PostgreSQL and runs one owner transaction per owner with bounded concurrency. PostgreSQL decides who
 * sends a reminder; the workflow only decides what to try next, and carries ids and counts, never
 * document values.
 */
import * as otel from '@opentelemetry/api';
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities, CandidatePage, RemindOwnerResult, RemindOwnersResult } from '../activities';
import {
  ZERO_COUNTS,
  ownerGroups,
  type CycleContinuation,
  type CycleCounts,
  type CycleInput,
  type CycleResult,
  type CycleSettings,
  type CycleStatus,
  type PageCursor,
} from '../domain/cycle';
import { REMINDER_AS_OF, REMINDER_OUTCOME, REMINDERS_SENT, TEMPORAL_SCHEDULED_START_TIME } from '../search-attributes';
import type { CycleSinks } from './sinks';

const { resolveCycleSettings } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5 },
});

// Short start-to-close timeouts: they are also how soon work lost with a crashed worker is retried.
const { findCandidatePage } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 10 },
});

const OWNER_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '20s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
};
const { remindOwner } = proxyActivities<Activities>(OWNER_ACTIVITY);

// A group is one statement in one transaction, tens of milliseconds; the last attempt isolates its
// owners one by one, which takes longer, hence the wide start-to-close. The activity heartbeats every
// few seconds while it runs, so a group lost with a crashed worker is retried after 10 s, not 2 min.
const OWNER_GROUP_ACTIVITY = {
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
} satisfies ActivityOptions;
const { remindOwners: remindOwnerGroup } = proxyActivities<Activities>(OWNER_GROUP_ACTIVITY);

/**
 * Cycles started before this patch run one `remindOwner` activity per owner and read pages one after
 * another; later ones group owners per activity and read the next page while owners run.
 */
const OWNER_GROUPS_PATCH = 'owner-groups';

const { pruneReminders } = proxyActivities<Activities>({
  startToCloseTimeout: '15m',
  heartbeatTimeout: '1m',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 10 },
});

const { cycleMetrics } = proxySinks<CycleSinks>();

/**
 * Spans from workflow code go through the tracer that Temporal's OpenTelemetry workflow interceptors
 * register in the workflow sandbox (exported through a sink, never on replay); without them it is a no-op.
 */
const tracer = otel.trace.getTracer('expiry-reminder-cycle');

/** History events an activity may cost at worst (scheduled, started, completed, plus a workflow task). */
const EVENTS_PER_OWNER = 6;
const EVENTS_PER_ACTIVITY = EVENTS_PER_OWNER;

/** Runs one reminder cycle; see SPEC §3 for what it guarantees. */
export async function documentExpiryReminderCycle(input: CycleInput = {}): Promise<CycleResult> {
  try {
    return await runCycle(input);
  } catch (err) {
    if (!isCancellation(err) && !(err instanceof ContinueAsNew)) {
      cycleMetrics.cycleFailed();
      upsertSearchAttributes([{ key: REMINDER_OUTCOME, value: 'failed' }]);
    }
    throw err;
  }
}

async function runCycle(input: CycleInput): Promise<CycleResult> {
  const jobRunId = workflowInfo().workflowId;
  const first = input.continuation === undefined;
  const state: CycleContinuation = input.continuation ?? {
    // Settings are fixed once per cycle, here, and travel with it through continue-as-new.
    settings: await CancellationScope.nonCancellable(() =>
      resolveCycleSettings({ ...withoutContinuation(input), startedAt: defaultAsOf().toISOString() }),
    ),
    startedAtMs: Date.now(),
    cursor: null,
    counts: { ...ZERO_COUNTS },
    runs: 1,
  };
  const { settings } = state;
  const counts: CycleCounts = { ...state.counts };
  let cursor: PageCursor | null = state.cursor;
  const deadline = state.startedAtMs + settings.maxRunDurationMs;
  const progress = () => showProgress(settings, counts, state.runs);

  otel.trace.getActiveSpan()?.setAttributes({
    correlationId: jobRunId,
    asOf: settings.asOf,
    batchSize: settings.batchSize,
    run: state.runs,
  });
  if (first) {
    log.info('cycle started', {
      jobRunId,
      asOf: settings.asOf,
      thresholdsDays: settings.thresholdsDays,
      batchSize: settings.batchSize,
    });
    upsertSearchAttributes([
      { key: REMINDER_AS_OF, value: new Date(settings.asOf) },
      { key: REMINDER_OUTCOME, value: 'running' },
      { key: REMINDERS_SENT, value: 0 },
    ]);
  }
  progress();

  let cancelled = false;
  // Cancellation is observed, not propagated: in-flight owner transactions run to their end and the
  // cycle stops scheduling new ones, then reports `cancelled` with what it did.
  CancellationScope.current().cancelRequested.catch(() => {
    cancelled = true;
  });
  const stopReason = (): CycleStatus | undefined =>
    cancelled ? 'cancelled' : Date.now() >= deadline ? 'time-limit' : undefined;

  const window = {
    asOfDate: settings.asOfDate,
    thresholdsDays: settings.thresholdsDays,
    retentionDays: settings.retentionDays,
  };

  // The paths split once the first page is in hand, so that is where the patch is decided.
  let owners: { groups: OwnerGroupWindow | undefined } | undefined;
  const ownerPath = () =>
    (owners ??= { groups: patched(OWNER_GROUPS_PATCH) ? new OwnerGroupWindow(settings, jobRunId, counts, progress) : undefined });
  const findPage = (at: PageCursor | null) =>
    CancellationScope.nonCancellable(() => findCandidatePage({ window, cursor: at, batchSize: settings.batchSize }));
  // History a page may still add: its own activity, and its owners' activities.
  const historyNearlyFull = (pagesAhead: number) => {
    const pageEvents = ownerPath().groups
      ? (Math.ceil(settings.batchSize / ownerGroups(settings).size) + 1) * EVENTS_PER_ACTIVITY
      : settings.batchSize * EVENTS_PER_OWNER;
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength + pagesAhead * pageEvents > settings.maxHistoryEvents;
  };

  let status: CycleStatus = 'completed';
  let prefetched: Promise<CandidatePage> | undefined;
  for (;;) {
    const stop = stopReason();
    if (stop) {
      status = stop;
      break;
    }
    const { page, pageStop } = await tracer.startActiveSpan(
      'page',
      { attributes: { correlationId: jobRunId, page: counts.pages + 1, batchSize: settings.batchSize } },
      async (span) => {
        let spanEnded: Promise<void> | undefined;
        try {
          const page = await (prefetched ?? findPage(cursor));
          prefetched = undefined;
          counts.pages += 1;
          counts.documentsSeen += page.documentCount;
          span.setAttributes({ documentCount: page.documentCount, owners: page.ownerIds.length });
          log.info('batch selected', {
            jobRunId,
            page: counts.pages,
            count: page.documentCount,
            owners: page.ownerIds.length,
          });
          const { groups } = ownerPath();
          if (!groups) {
            return { page, pageStop: await remindOwnersOneByOne(page.ownerIds, settings, jobRunId, counts, stopReason, progress) };
          }
          // The next page is read while this one's owners run, unless this run will continue as new
          // after this page (the new run reads it itself).
          if (page.next && !historyNearlyFull(2)) prefetched = findPage(page.next);
          const scheduled = await groups.schedule(page.ownerIds, stopReason);
          spanEnded = scheduled.settled.then(() => span.end());
          return { page, pageStop: scheduled.stopped };
        } finally {
          if (!spanEnded) span.end();
        }
      },
    );
    upsertSearchAttributes([{ key: REMINDERS_SENT, value: counts.remindersSent }]);
    if (pageStop) {
      status = pageStop;
      break;
    }
    if (!page.next) break;
    cursor = page.next;

    if (!prefetched && historyNearlyFull(1)) {
      // The continuation's cursor promises that everything before it is done.
      await owners?.groups?.drain();
      await continueAsNew<typeof documentExpiryReminderCycle>({
        continuation: { settings, startedAtMs: state.startedAtMs, cursor, counts, runs: state.runs + 1 },
      });
    }
  }
  await owners?.groups?.drain();
  // A page read ahead of a stop is not used; its activity must still end before the run does.
  await prefetched?.catch(() => undefined);

  let pruned = 0;
  if (status !== 'cancelled') {
    pruned = await CancellationScope.nonCancellable(() =>
      pruneReminders({ asOfDate: settings.asOfDate, retentionDays: settings.retentionDays }),
    );
  }

  const result: CycleResult = {
    status,
    jobRunId,
    asOf: settings.asOf,
    thresholdsDays: settings.thresholdsDays,
    ...counts,
    pruned,
    durationMs: Date.now() - state.startedAtMs,
    runs: state.runs,
  };
  upsertSearchAttributes([
    { key: REMINDER_OUTCOME, value: status },
    { key: REMINDERS_SENT, value: counts.remindersSent },
  ]);
  setCurrentDetails(`**${status}** · ${progressLine(settings, counts, state.runs)} · pruned ${pruned} · ${result.durationMs} ms`);
  cycleMetrics.cycleEnded(result);
  log.info('cycle completed', { ...result, prunedCount: pruned });
  return result;
}

/**
 * Owner groups of `ownerGroupSize` through a sliding window that spans pages: at most
 * `ownerConcurrency / ownerGroupSize` group activities in flight, so the window does not drain at every
 * page boundary. An owner the activity reports failed (after its retries and isolation) is counted and
 * logged; so is every owner of a group whose activity failed as a whole. The cycle goes on.
 */
class OwnerGroupWindow {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly size: number;
  private readonly activities: number;

  constructor(
    private readonly settings: CycleSettings,
    private readonly jobRunId: string,
    private readonly counts: CycleCounts,
    private readonly progress: () => void,
  ) {
    ({ size: this.size, activities: this.activities } = ownerGroups(settings));
  }

  /**
   * Schedules the owners' groups, waiting for room in the window. Resolves once all are scheduled (or
   * a stop reason came up first); `settled` resolves when this call's groups have ended.
   */
  async schedule(
    ownerIds: string[],
    stopReason: () => CycleStatus | undefined,
  ): Promise<{ stopped: CycleStatus | undefined; settled: Promise<void> }> {
    const mine: Promise<void>[] = [];
    let stopped: CycleStatus | undefined;
    for (let i = 0; i < ownerIds.length; i += this.size) {
      while (this.inFlight.size >= this.activities) await Promise.race(this.inFlight);
      stopped = stopReason();
      if (stopped) break;
      mine.push(this.start(ownerIds.slice(i, i + this.size)));
    }
    return { stopped: stopped ?? stopReason(), settled: Promise.all(mine).then(() => undefined) };
  }

  /** Waits for every group in flight. */
  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }

  private start(ownerUserIds: string[]): Promise<void> {
    const { settings, jobRunId, counts } = this;
    const first = ownerUserIds[0];
    const summary =
      ownerUserIds.length === 1 ? `owner ${first}` : `${ownerUserIds.length} owners, ${first} … ${ownerUserIds[ownerUserIds.length - 1]}`;
    const run: Promise<void> = CancellationScope.nonCancellable(() =>
      // The summary (ids only) names the activity in the Web UI's timeline.
      remindOwnerGroup.executeWithOptions({ ...OWNER_GROUP_ACTIVITY, summary }, [
        {
          ownerUserIds,
          asOf: settings.asOf,
          asOfDate: settings.asOfDate,
          thresholdsDays: settings.thresholdsDays,
          retentionDays: settings.retentionDays,
          correlationId: jobRunId,
          lastAttempt: OWNER_GROUP_ACTIVITY.retry.maximumAttempts,
        },
      ]),
    )
      .then(
        (r) => tallyGroup(counts, r, jobRunId),
        (err: unknown) => {
          counts.failedOwners += ownerUserIds.length;
          for (let n = 0; n < ownerUserIds.length; n += 1) cycleMetrics.ownerFailed();
          log.warn('owner group failed', { jobRunId, owners: ownerUserIds.length, firstOwnerUserId: first, error: describeFailure(err) });
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

/**
 * Cycles from before `OWNER_GROUPS_PATCH`: the page's owners through a sliding window of
 * `ownerConcurrency` single-owner activities. Returns why it stopped early.
 */
async function remindOwnersOneByOne(
  ownerIds: string[],
  settings: CycleSettings,
  jobRunId: string,
  counts: CycleCounts,
  stopReason: () => CycleStatus | undefined,
  progress: () => void,
): Promise<CycleStatus | undefined> {
  const inFlight = new Set<Promise<void>>();
  let stopped: CycleStatus | undefined;
  for (const ownerUserId of ownerIds) {
    while (inFlight.size >= settings.ownerConcurrency) await Promise.race(inFlight);
    stopped = stopReason();
    if (stopped) break;
    const run: Promise<void> = CancellationScope.nonCancellable(() =>
      // The summary (owner id only) names the activity in the Web UI's timeline.
      remindOwner.executeWithOptions({ ...OWNER_ACTIVITY, summary: `owner ${ownerUserId}` }, [
        {
          ownerUserId,
          asOf: settings.asOf,
          asOfDate: settings.asOfDate,
          thresholdsDays: settings.thresholdsDays,
          retentionDays: settings.retentionDays,
          correlationId: jobRunId,
        },
      ]),
    )
      .then(
        (r) => tally(counts, r),
        (err: unknown) => {
          counts.failedOwners += 1;
          cycleMetrics.ownerFailed();
          log.warn('owner failed', { jobRunId, ownerUserId, error: describeFailure(err) });
        },
      )
      .finally(() => {
        inFlight.delete(run);
        progress();
      });
    inFlight.add(run);
  }
  await Promise.all(inFlight);
  return stopped ?? stopReason();
}

/** AsOf when the input names none: the schedule's action time (so a backfill computes as of its day), else now. */
function defaultAsOf(): Date {
  return workflowInfo().typedSearchAttributes.get(TEMPORAL_SCHEDULED_START_TIME) ?? new Date();
}

function progressLine(settings: CycleSettings, counts: CycleCounts, runs: number): string {
  return (
    `AsOf ${settings.asOfDate} · thresholds ${settings.thresholdsDays.join(', ')} · page ${counts.pages} · ` +
    `owners ${counts.ownersProcessed} done, ${counts.failedOwners} failed · reminders ${counts.remindersSent} · run ${runs}`
  );
}

/** Live progress in the Web UI's "current details" (not recorded in history). */
function showProgress(settings: CycleSettings, counts: CycleCounts, runs: number): void {
  setCurrentDetails(`Running · ${progressLine(settings, counts, runs)}`);
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

function tally(counts: CycleCounts, r: RemindOwnerResult): void {
  counts.ownersProcessed += 1;
  counts.remindersSent += r.remindersSent;
  counts.skippedAlreadyMarked += r.skippedAlreadyMarked;
  if (r.remindersSent > 0) counts.ownersNotified += 1;
}

function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) {
    const cause = err.cause;
    return cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ${cause.message}` : cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}

function withoutContinuation(input: CycleInput): CycleInput {
  const { continuation: _ignored, ...rest } = input;
  return rest;
}
