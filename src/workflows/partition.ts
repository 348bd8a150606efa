/**
 * A partition: one id range of a cycle's day, claimed page after page by `claimPage` activities
 * (docs/DESIGN.md#page-claims), then its busy owners retried. The one road of every cycle: a small day runs
 * it as the single partition {0, 1} inside the cycle's own run, a big day as K child workflows
 * (`documentExpiryReminderPartition`), and a partition continues as new on its own when its history fills.
 */
import * as otel from '@opentelemetry/api';
import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  log,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  EVENTS_PER_ACTIVITY,
  type CycleSettings,
  type CycleStatus,
  type PartitionInput,
  type PartitionRef,
  type PartitionResult,
} from '../domain/cycle';
import { CYCLE_SETTINGS } from '../domain/settings';
import { ownerClaimActivity, retryBusyOwners } from './busy-retries';
import {
  activitiesThatFit,
  continueAsNextRun,
  firstState,
  runState,
  showRemindersSent,
  type CycleRun,
} from './run-state';

/**
 * A claim: its pages' reads and, per page, a transaction or a few of two or three statements each. Ten
 * attempts over about two and a half minutes: a database restart is waited out, not reported as failed owners.
 */
const CLAIM_ACTIVITY = ownerClaimActivity(10);
const { claimPage } = proxyActivities<Activities>(CLAIM_ACTIVITY);

/** How often a run that claims pages shows its reminders sent in its search attribute. */
const SEARCH_ATTRIBUTES_EVERY_MS = 10_000;

/** History a run keeps for its last steps after a round of busy retries: a timer, the prune, its end. */
const HANDOVER_EVENTS = 24;

/**
 * Spans from workflow code go through the tracer that Temporal's OpenTelemetry workflow interceptors
 * register in the workflow sandbox (exported through a sink, never on replay); without them it is a no-op.
 */
const tracer = otel.trace.getTracer('expiry-reminder-cycle');

/** A run that claims an id range: a partition's, or a small day's in the cycle's own run. */
export type PartitionRun = CycleRun & { partition: PartitionRef };

/**
 * `documentExpiryReminderPartition`: one partition of a big day, started by its cycle. It runs
 * {@link runPartition} over its id range, continuing as new on its own; its cycle prunes.
 */
export async function documentExpiryReminderPartition(input: PartitionInput): Promise<PartitionResult> {
  if (workflowInfo().parent === undefined) {
    throw ApplicationFailure.nonRetryable(
      'Invalid partition input: a partition is started by its cycle; start the cycle instead',
      'InvalidCycleInput',
    );
  }
  const { partition, jobRunId, settings } = input;
  const state = input.continuation ?? firstState(settings, input.cycleStartedAtMs);
  // Its activities go through matching, so every worker polling the task queue takes a share.
  const run = runState(jobRunId, settings, state, undefined, false, (c) =>
    continueAsNew<typeof documentExpiryReminderPartition>({ ...input, continuation: c }),
  );
  if (!input.continuation)
    log.info('partition started', { jobRunId, partition: partition.index + 1, of: partition.count });
  run.progress();
  const status = await runPartition(Object.assign(run, { partition }));
  return { status, counts: run.counts, runs: run.state.runs, firstRunId: run.firstRunId };
}

/**
 * The partition's claims, then its busy owners' retries (a run handed over in the middle of those has no
 * claim left to make); owners still busy at the end count failed. Returns the partition's status.
 */
export async function runPartition(run: PartitionRun): Promise<CycleStatus> {
  const { busy, settings, state } = run;
  let status = state.busyRetry ? 'completed' : await claimPages(run);
  if (status === 'completed') {
    const retry = await retryBusyOwners(
      busy,
      settings,
      run.stopReason,
      run.cancelRequested,
      () => activitiesThatFit(settings, HANDOVER_EVENTS),
      state.busyRetry,
    );
    if (retry.handOver) status = await continueAsNextRun(run, retry.handOver);
    else if (retry.stopped) status = retry.stopped;
  }
  busy.failStillBusy();
  return status;
}

/**
 * Page after page, up to `pagesPerClaim` pages a `claimPage` activity, until the id range is done or the run
 * stops; hands over to a new run when history is nearly full. The reminders-sent search attribute is updated
 * at most every {@link SEARCH_ATTRIBUTES_EVERY_MS}, and at the end. Returns the status so far.
 */
async function claimPages(run: PartitionRun): Promise<CycleStatus> {
  let shownAt = Date.now();
  const show = () => {
    showRemindersSent(run);
    shownAt = Date.now();
  };
  for (;;) {
    const stop = run.stopReason();
    if (stop) {
      show();
      return stop;
    }
    if (!(await claimInSpan(run))) {
      show();
      return 'completed';
    }
    if (Date.now() - shownAt >= SEARCH_ATTRIBUTES_EVERY_MS) show();
    if (activitiesThatFit(run.settings, EVENTS_PER_ACTIVITY) < 1) return continueAsNextRun(run);
  }
}

/** One `claimPage` activity, from the page after the run's last, in a "claim" span; whether pages follow. */
function claimInSpan(run: PartitionRun): Promise<boolean> {
  const { counts, jobRunId, settings, partition } = run;
  const page = counts.pages + 1;
  const pages = settings.pagesPerClaim ?? CYCLE_SETTINGS.pagesPerClaim.default;
  const attributes = { correlationId: jobRunId, page, partition: partition.index + 1, batchSize: settings.batchSize };
  return tracer.startActiveSpan('claim', { attributes }, async (span) => {
    try {
      const r = await CancellationScope.nonCancellable(() =>
        claimPage.executeWithOptions(
          // Eager dispatch for a small day in the cycle's own run: no trip through matching.
          { ...CLAIM_ACTIVITY, summary: `pages from ${page}`, allowEagerDispatch: partition.count === 1 },
          [
            {
              window: candidateWindow(settings),
              cycleId: run.firstRunId,
              jobRunId,
              page,
              pages,
              batchSize: settings.batchSize,
              partition,
              asOf: settings.asOf,
              ownerConcurrency: settings.ownerConcurrency,
              lastAttempt: CLAIM_ACTIVITY.retry.maximumAttempts,
            },
          ],
        ),
      );
      const { pagesClaimed } = r;
      run.busy.record(r, { pages: pagesClaimed, documentsSeen: r.documentCount, ownersBusy: r.ownersFoundBusy });
      span.setAttributes({ pages: pagesClaimed, documentCount: r.documentCount, owners: r.owners });
      log.info('batch selected', { jobRunId, page, pages: pagesClaimed, count: r.documentCount, owners: r.owners });
      run.progress();
      return r.hasNext;
    } finally {
      span.end();
    }
  });
}

/** The day's window, as the activities that read the table take it. */
export function candidateWindow(settings: CycleSettings) {
  return {
    asOfDate: settings.asOfDate,
    thresholdsDays: settings.thresholdsDays,
    retentionDays: settings.retentionDays,
  };
}
