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
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities, RemindOwnerResult } from '../activities';
import {
  ZERO_COUNTS,
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

/** History events an owner activity may cost at worst (scheduled, started, completed, plus a workflow task). */
const EVENTS_PER_OWNER = 6;

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

  let status: CycleStatus = 'completed';
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
        try {
          const page = await CancellationScope.nonCancellable(() =>
            findCandidatePage({ window, cursor, batchSize: settings.batchSize }),
          );
          counts.pages += 1;
          counts.documentsSeen += page.documentCount;
          span.setAttributes({ documentCount: page.documentCount, owners: page.ownerIds.length });
          log.info('batch selected', {
            jobRunId,
            page: counts.pages,
            count: page.documentCount,
            owners: page.ownerIds.length,
          });
          const pageStop = await remindOwners(page.ownerIds, settings, jobRunId, counts, stopReason, progress);
          return { page, pageStop };
        } finally {
          span.end();
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

    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength + settings.batchSize * EVENTS_PER_OWNER > settings.maxHistoryEvents) {
      await continueAsNew<typeof documentExpiryReminderCycle>({
        continuation: { settings, startedAtMs: state.startedAtMs, cursor, counts, runs: state.runs + 1 },
      });
    }
  }

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
 * Runs the page's owners through a sliding window of `ownerConcurrency` activities. An owner that
 * still fails after its retries is counted and logged; the cycle goes on. Returns why it stopped early.
 */
async function remindOwners(
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
