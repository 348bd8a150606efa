/**
 * `documentExpiryReminderCycle`, read top-down from `runCycle`: its run begins (input checked, settings
 * fixed), plans the day, claims it (a small day as the single partition of the one road in this run, a big
 * one fanned out to child partitions), prunes, and reports its result. Deterministic orchestration only:
 * PostgreSQL decides who gets a reminder; the workflow carries ids, page numbers and counts, never
 * document values. The order of the steps is the order of the workflow's commands, which the replay test
 * on recorded histories pins.
 */
import * as otel from '@opentelemetry/api';
import {
  ApplicationFailure,
  CancellationScope,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, PartitionPlan } from '../activities';
import {
  addCounts,
  partitionWorkflowId,
  type CycleInput,
  type CycleResult,
  type CycleStatus,
  type PartitionResult,
} from '../domain/cycle';
import { describeFailure } from '../domain/failures';
import { defaultAsOf, inputShapeProblem } from '../domain/cycle-input';
import {
  REMINDER_AS_OF,
  REMINDER_OUTCOME,
  REMINDERS_SENT,
  TEMPORAL_SCHEDULED_START_TIME,
} from '../domain/search-attributes';
import { candidateWindow, documentExpiryReminderPartition, runPartition } from './partition';
import { firstState, progressLine, runState, type CycleRun } from './run-state';
import type { CycleSinks } from './sinks';

const { resolveCycleSettings } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5 },
});

// Counting a big day's due documents reads up to max × size of them: seconds, not minutes.
const { planPartitions } = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 10 },
});

const { pruneReminders } = proxyActivities<Activities>({
  startToCloseTimeout: '15m',
  heartbeatTimeout: '1m',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 10 },
});

const { cycleMetrics } = proxySinks<CycleSinks>();

/** The single partition of a small day, claimed in the cycle's own run: the whole id space. */
const WHOLE_DAY = { index: 0, count: 1 };

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

/**
 * Plan, claim, prune, result. A continued run goes on with its small day where the run before stopped (a
 * big day's cycle never continues as new: its partitions do). Nothing due skips the claims: the plan's
 * count read the same documents the first page would.
 */
async function runCycle(input: CycleInput): Promise<CycleResult> {
  const run = await beginRun(input);
  if (input.continuation === undefined) {
    const plan = await planDay(run);
    if (plan.partitions > 1) return runPartitions(run, plan.partitions);
    if (plan.due === 0) return finishCycle(run, 'completed', await prune(run));
  }
  const status = await runPartition(Object.assign(run, { partition: WHOLE_DAY }));
  const pruned = status === 'cancelled' ? 0 : await prune(run);
  return finishCycle(run, status, pruned);
}

/** Checks the input, fixes the settings, and shows the run (progress query, span, search attributes). */
async function beginRun(input: CycleInput): Promise<CycleRun> {
  const info = workflowInfo();
  const jobRunId = info.workflowId;
  refuseInvalidInput(input, info.continuedFromExecutionRunId);
  const continued = input.continuation;
  // The schedule's action time, kept across continue-as-new with the other search attributes.
  const scheduledAt = info.typedSearchAttributes.get(TEMPORAL_SCHEDULED_START_TIME);
  // Settings are fixed once per cycle and travel with it through continue-as-new; a continuation is
  // validated again, since anyone may start a run with one.
  const settings = await CancellationScope.nonCancellable(() =>
    resolveCycleSettings({
      input,
      jobRunId,
      defaultAsOf: defaultAsOf(scheduledAt, new Date()).toISOString(),
      workflowTime: new Date().toISOString(),
    }),
  );
  const state = continued ?? firstState(settings, Date.now());
  // A small day's activities may run eagerly on this worker: no trip through matching.
  const run = runState(jobRunId, settings, state, scheduledAt, true, (c) =>
    continueAsNew<typeof documentExpiryReminderCycle>({ continuation: c }),
  );
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
  run.progress();
  return run;
}

/** Anything but an object would fail every workflow task after it; fails the cycle instead, once. */
function refuseInvalidInput(input: CycleInput, continuedFromRunId: string | undefined): void {
  const shape = inputShapeProblem(input);
  if (shape) throw ApplicationFailure.nonRetryable(`Invalid cycle input: ${shape}`, 'InvalidCycleInput');
  // A continuation is the workflow's own hand-over to its next run. Typed into a new start (the Web UI),
  // its counts would become the cycle's result and its settings the cycle's; refuse it once, here.
  if (input.continuation != null && continuedFromRunId === undefined) {
    throw ApplicationFailure.nonRetryable(
      'Invalid cycle input: continuation: only a run that continued as new may carry one; start a cycle with ' +
        '{} or the fields to override instead',
      'InvalidCycleInput',
    );
  }
}

/**
 * The day's partition count: the input's (no count, then), else the plan's from the due count. Nothing due is
 * a plan too.
 */
async function planDay({
  settings,
  jobRunId,
}: CycleRun): Promise<Pick<PartitionPlan, 'partitions'> & { due?: number }> {
  if (settings.partitions !== undefined) return { partitions: settings.partitions };
  const plan = await CancellationScope.nonCancellable(() =>
    planPartitions({ window: candidateWindow(settings), jobRunId }),
  );
  log.info('day planned', { jobRunId, ...plan });
  return plan;
}

/**
 * Runs the day as `count` partitions, each a child workflow with its own chain of pages over one id range
 * (docs/DESIGN.md#partitions), and sums their results. A cancel request reaches every partition, which stops
 * as a cycle does and reports what it did; a partition that fails fails the cycle, named, once every other
 * partition has ended. The prune runs once, after all of them.
 */
async function runPartitions(run: CycleRun, count: number): Promise<CycleResult> {
  const { jobRunId, settings, state, counts } = run;
  run.partitions = count;
  const ids = Array.from({ length: count }, (_, index) => partitionWorkflowId(jobRunId, { index, count }));
  run.partitionsRunning = new Set(ids);
  // Started outside the cycle's cancellation scope: a cancel request is passed on below, so that each
  // partition stops as a cycle does and still reports its counts.
  const handles = await CancellationScope.nonCancellable(() =>
    Promise.all(
      ids.map((workflowId, index) =>
        startChild(documentExpiryReminderPartition, {
          workflowId,
          staticSummary: `partition ${index + 1} of ${count}`,
          args: [{ partition: { index, count }, jobRunId, settings, cycleStartedAtMs: state.startedAtMs }],
        }),
      ),
    ),
  );
  void run.cancelRequested.then(() =>
    CancellationScope.nonCancellable(() =>
      Promise.all(
        ids.map((id) =>
          getExternalWorkflowHandle(id)
            .cancel()
            .catch(() => undefined),
        ),
      ),
    ),
  );
  const statuses: CycleStatus[] = [];
  const failures: string[] = [];
  const firstRunIds: string[] = [];
  await Promise.all(
    handles.map((handle, index) =>
      handle
        .result()
        .then(
          (r: PartitionResult) => {
            addCounts(counts, r.counts);
            statuses.push(r.status);
            firstRunIds.push(r.firstRunId);
          },
          (err: unknown) => {
            failures.push(`partition ${index + 1} of ${count} (${ids[index]}): ${describeFailure(err)}`);
          },
        )
        .finally(() => {
          run.partitionsRunning.delete(ids[index]);
          run.progress();
        }),
    ),
  );
  if (failures.length > 0) {
    throw ApplicationFailure.nonRetryable(
      `${failures.length} of ${count} partitions failed: ${failures.join('; ')}`,
      'PartitionFailed',
    );
  }
  const status = worstStatus(statuses);
  const pruned = status === 'cancelled' ? 0 : await prune(run, firstRunIds);
  return finishCycle(run, status, pruned);
}

/** Cancelled over time-limit over completed: the cycle's status is its least finished partition's. */
function worstStatus(statuses: CycleStatus[]): CycleStatus {
  if (statuses.includes('cancelled')) return 'cancelled';
  return statuses.includes('time-limit') ? 'time-limit' : 'completed';
}

/** Deletes markers past retention, and this cycle's scan positions (and its partitions'). */
function prune({ settings, firstRunId }: CycleRun, partitionIds?: string[]): Promise<number> {
  return CancellationScope.nonCancellable(() =>
    pruneReminders({
      asOfDate: settings.asOfDate,
      retentionDays: settings.retentionDays,
      cycleId: firstRunId,
      ...(partitionIds ? { partitionIds } : {}),
    }),
  );
}

/** Reports the result: search attributes, the Web UI's details, metrics and the log. */
function finishCycle(run: CycleRun, status: CycleStatus, pruned: number): CycleResult {
  const { settings, counts, state, scheduledAt } = run;
  const result: CycleResult = {
    status,
    jobRunId: run.jobRunId,
    asOf: settings.asOf,
    ...(scheduledAt ? { scheduledAt: scheduledAt.toISOString() } : {}),
    thresholdsDays: settings.thresholdsDays,
    ...counts,
    pruned,
    durationMs: Date.now() - state.startedAtMs,
    runs: state.runs,
    ...(run.partitions ? { partitions: run.partitions } : {}),
  };
  upsertSearchAttributes([
    { key: REMINDER_OUTCOME, value: status },
    { key: REMINDERS_SENT, value: counts.remindersSent },
  ]);
  setCurrentDetails(`**${status}** · ${progressLine(run)} · pruned ${pruned} · ${result.durationMs} ms`);
  cycleMetrics.cycleEnded(result);
  log.info('cycle completed', { ...result, prunedCount: pruned });
  return result;
}
