/**
 * `documentExpiryReminderCycle`. Deterministic orchestration only: pages owner ids out of PostgreSQL and
 * runs groups of owner transactions with bounded concurrency. PostgreSQL decides who sends a reminder;
 * the workflow only decides what to try next, and carries ids, page numbers and counts, never document
 * values (the scan's position stays in PostgreSQL).
 */
import * as otel from '@opentelemetry/api';
import {
  ApplicationFailure,
  CancellationScope,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, CandidatePage } from '../activities';
import {
  ZERO_COUNTS,
  ownerGroups,
  type CycleContinuation,
  type CycleCounts,
  type CycleInput,
  type CycleResult,
  type CycleSettings,
  type CycleStatus,
} from '../domain/cycle';
import { MAX_CARRIED_BUSY_OWNERS, defaultAsOf, inputShapeProblem } from '../domain/cycle-input';
import {
  REMINDER_AS_OF,
  REMINDER_OUTCOME,
  REMINDERS_SENT,
  TEMPORAL_SCHEDULED_START_TIME,
} from '../domain/search-attributes';
import { cycleProgressQuery } from '../domain/progress';
import { OwnerGroupWindow, retryBusyOwners } from './owner-groups';
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
const EVENTS_PER_ACTIVITY = 6;

/** Runs one reminder cycle (docs/DESIGN.md says what it guarantees). */
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
  const info = workflowInfo();
  const jobRunId = info.workflowId;
  // Anything but an object would fail every workflow task below; fail the cycle instead, once.
  const shape = inputShapeProblem(input);
  if (shape) throw ApplicationFailure.nonRetryable(`Invalid cycle input: ${shape}`, 'InvalidCycleInput');
  const continued = input.continuation;
  // The schedule's action time, kept across continue-as-new with the other search attributes.
  const scheduledAt = info.typedSearchAttributes.get(TEMPORAL_SCHEDULED_START_TIME);
  // A continuation is the workflow's own hand-over to its next run. Typed into a new start (the Web UI),
  // its counts would become the cycle's result and its settings the cycle's; refuse it once, here.
  if (continued != null && info.continuedFromExecutionRunId === undefined) {
    throw ApplicationFailure.nonRetryable(
      'Invalid cycle input: continuation: only a run that continued as new may carry one; start a cycle with ' +
        '{} or the fields to override instead',
      'InvalidCycleInput',
    );
  }
  // Settings are fixed once per cycle and travel with it through continue-as-new; a continuation is
  // validated again, since anyone may start a run with one.
  const settings = await CancellationScope.nonCancellable(() =>
    resolveCycleSettings({ input, jobRunId, defaultAsOf: defaultAsOf(scheduledAt, new Date()).toISOString() }),
  );
  const state: CycleContinuation = continued ?? {
    settings,
    startedAtMs: Date.now(),
    counts: { ...ZERO_COUNTS },
    runs: 1,
    busyOwnerIds: [],
  };
  const counts: CycleCounts = { ...state.counts };
  const deadline = state.startedAtMs + settings.maxRunDurationMs;
  const progress = () => showProgress(settings, counts, state.runs, scheduledAt);
  // Read by `cycle run --wait` and `schedule trigger --wait`; answering a query records nothing.
  setHandler(cycleProgressQuery, () => ({ ...counts, asOf: settings.asOf, runs: state.runs }));

  otel.trace.getActiveSpan()?.setAttributes({
    correlationId: jobRunId,
    asOf: settings.asOf,
    batchSize: settings.batchSize,
    run: state.runs,
  });
  if (!continued) {
    log.info('cycle started', {
      jobRunId,
      asOf: settings.asOf,
      scheduledAt: scheduledAt?.toISOString(),
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
  const cancelRequested = new Promise<void>((resolve) => {
    CancellationScope.current().cancelRequested.catch(() => {
      cancelled = true;
      resolve();
    });
  });
  const stopReason = (): CycleStatus | undefined =>
    cancelled ? 'cancelled' : Date.now() >= deadline ? 'time-limit' : undefined;

  const window = {
    asOfDate: settings.asOfDate,
    thresholdsDays: settings.thresholdsDays,
    retentionDays: settings.retentionDays,
  };
  const groups = new OwnerGroupWindow(settings, jobRunId, counts, progress, state.busyOwnerIds);
  const findPage = (page: number) =>
    CancellationScope.nonCancellable(() =>
      findCandidatePage({ window, cycleId: info.firstExecutionRunId, jobRunId, page, batchSize: settings.batchSize }),
    );
  // History a page may still add: its own activity, and its owners' activities.
  const historyNearlyFull = (pagesAhead: number) => {
    const pageEvents = (Math.ceil(settings.batchSize / ownerGroups(settings).size) + 1) * EVENTS_PER_ACTIVITY;
    const now = workflowInfo();
    return now.continueAsNewSuggested || now.historyLength + pagesAhead * pageEvents > settings.maxHistoryEvents;
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
          const page = await (prefetched ?? findPage(counts.pages + 1));
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
          // The next page is read while this one's owners run, unless this run will continue as new
          // after this page (the new run reads it itself) or the cycle is already stopping (cancelled,
          // or past its time limit), which would leave that page unused after a query that also stores
          // a scan position. Its failure is handled where it is awaited; the empty handler only keeps
          // it from counting as unhandled while the owners run, which would fail the workflow task over
          // and over instead of the cycle once.
          if (page.hasNext && !historyNearlyFull(2) && !stopReason()) {
            prefetched = findPage(counts.pages + 1);
            prefetched.catch(() => undefined);
          }
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
    if (!page.hasNext) break;

    if (!prefetched && historyNearlyFull(1)) {
      // Counts and the page number promise that everything before them is done.
      await groups.drain();
      // A cancel request (or the time limit) that came while draining ends this cycle here; a new run
      // would not know of it.
      const drained = stopReason();
      if (drained) {
        status = drained;
        break;
      }
      const busyOwnerIds = groups.takeBusy();
      groups.failNotCarried(busyOwnerIds.slice(MAX_CARRIED_BUSY_OWNERS), MAX_CARRIED_BUSY_OWNERS);
      await continueAsNew<typeof documentExpiryReminderCycle>({
        continuation: {
          settings,
          startedAtMs: state.startedAtMs,
          counts,
          runs: state.runs + 1,
          busyOwnerIds: busyOwnerIds.slice(0, MAX_CARRIED_BUSY_OWNERS),
        },
      });
    }
  }
  await groups.drain();
  // A page read ahead of a stop is not used; its activity must still end before the run does.
  await prefetched?.catch(() => undefined);
  if (status === 'completed') {
    const stop = await retryBusyOwners(groups, settings, stopReason, cancelRequested);
    if (stop) status = stop;
  }
  groups.failStillBusy();

  let pruned = 0;
  if (status !== 'cancelled') {
    pruned = await CancellationScope.nonCancellable(() =>
      pruneReminders({
        asOfDate: settings.asOfDate,
        retentionDays: settings.retentionDays,
        cycleId: info.firstExecutionRunId,
      }),
    );
  }

  const result: CycleResult = {
    status,
    jobRunId,
    asOf: settings.asOf,
    ...(scheduledAt ? { scheduledAt: scheduledAt.toISOString() } : {}),
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
  setCurrentDetails(
    `**${status}** · ${progressLine(settings, counts, state.runs, scheduledAt)} · pruned ${pruned} · ${result.durationMs} ms`,
  );
  cycleMetrics.cycleEnded(result);
  log.info('cycle completed', { ...result, prunedCount: pruned });
  return result;
}

function progressLine(settings: CycleSettings, counts: CycleCounts, runs: number, scheduledAt?: Date): string {
  // A backfilled day runs as of today; the Web UI shows both, so an operator sees which day it stood for.
  const scheduled = scheduledAt ? ` (scheduled ${scheduledAt.toISOString().slice(0, 10)})` : '';
  return (
    `AsOf ${settings.asOfDate}${scheduled} · thresholds ${settings.thresholdsDays.join(', ')} · page ${counts.pages} · ` +
    `owners ${counts.ownersProcessed} done, ${counts.ownersBusy} busy, ${counts.failedOwners} failed · ` +
    `reminders ${counts.remindersSent} · run ${runs}`
  );
}

/** Live progress in the Web UI's "current details" (not recorded in history). */
function showProgress(settings: CycleSettings, counts: CycleCounts, runs: number, scheduledAt?: Date): void {
  setCurrentDetails(`Running · ${progressLine(settings, counts, runs, scheduledAt)}`);
}
