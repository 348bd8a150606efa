/**
 * `documentExpiryReminderCycle`. Deterministic orchestration only: pages owner ids out of PostgreSQL and
 * runs groups of owner transactions with bounded concurrency. PostgreSQL decides who sends a reminder;
 * the workflow only decides what to try next, and carries ids, page numbers and counts, never document
 * values (the scan's position stays in PostgreSQL). One file, read top-down from `runCycle`: its steps
 * share one run's state, and their order is the order of the workflow's commands, which the replay test
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
  patched,
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities, CandidatePage, PartitionPlan } from '../activities';
import {
  ZERO_COUNTS,
  DEFAULT_PAGES_PER_CLAIM,
  addCounts,
  EVENTS_PER_ACTIVITY,
  pageHistoryEvents,
  type BusyRetryState,
  type CycleContinuation,
  type CycleCounts,
  type CycleInput,
  type CycleResult,
  type CycleSettings,
  type CycleStatus,
  pageOwnerUserIds,
  partitionWorkflowId,
  type PartitionInput,
  type PartitionRef,
  type PartitionResult,
} from '../domain/cycle';
import { describeFailure } from '../domain/failures';
import { MAX_CARRIED_BUSY_OWNERS, defaultAsOf, inputShapeProblem } from '../domain/cycle-input';
import {
  REMINDER_AS_OF,
  REMINDER_OUTCOME,
  REMINDERS_SENT,
  TEMPORAL_SCHEDULED_START_TIME,
} from '../domain/search-attributes';
import { cycleProgressQuery } from '../domain/progress';
import { RemindOwnersInFlight, retryBusyOwners } from './owner-groups';
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

/**
 * The patch that brought partitions (docs/DESIGN.md#partitions): a first run plans its day, and splits a big
 * one into child workflows. Histories recorded before it replay on the path that scans alone.
 */
const PARTITIONS_PATCH = 'partitions-v1';

/**
 * The patch that bounds the busy-owner retries by the run's history (they hand over to a next run when it is
 * nearly full). A history recorded before it replays its retries unbounded, as they ran.
 */
const BUSY_RETRY_BOUND_PATCH = 'busy-retry-bound-v1';

/**
 * The patch that makes a partition claim each page in one activity (docs/DESIGN.md#page-claims). A partition
 * recorded before it replays its page reads and owner groups.
 */
const PAGE_CLAIMS_PATCH = 'page-claims-v1';

/**
 * The patch that lets one `claimPage` activity claim several pages in a row (`pagesPerClaim`). A partition
 * recorded before it replays one page per activity.
 */
const PAGES_PER_CLAIM_PATCH = 'pages-per-claim-v1';

/**
 * A page's claim: its read and a transaction or two, tens of milliseconds; the last attempt isolates
 * failing groups' owners one by one, hence the wide start-to-close. It heartbeats while it runs, so a page
 * lost with a crashed worker is retried after 10 s. Ten attempts over about two and a half minutes, as a
 * page read had: a database restart is waited out, not reported as failed owners.
 */
const PAGE_CLAIM_ACTIVITY = {
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
} satisfies ActivityOptions;
const { claimPage } = proxyActivities<Activities>(PAGE_CLAIM_ACTIVITY);

/** How often a partition that claims pages shows its reminders sent in its search attribute. */
const SEARCH_ATTRIBUTES_EVERY_MS = 10_000;

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

/** History a run keeps for its last steps after a round of busy retries: a timer, the prune, its end. */
const HANDOVER_EVENTS = 24;

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
  const run = await beginRun(input);
  if (input.continuation === undefined && patched(PARTITIONS_PATCH)) {
    const plan = await planDay(run);
    if (plan.partitions > 1) return runPartitions(run, plan.partitions);
    if (plan.due === 0) return finishCycle(run, 'completed', await prune(run));
  }
  return finishCycle(run, ...(await scanAlone(run)));
}

/** The scan, the owners found busy, and the prune of a cycle (or a partition) that scans its range alone. */
async function scanAlone(run: CycleRun): Promise<[CycleStatus, number]> {
  const pages = new PageReader(run);
  // A partition claims each page in one activity; histories recorded before replay its pages and groups.
  const claimsPages = run.partition !== undefined && patched(PAGE_CLAIMS_PATCH);
  // A run handed over in the middle of the busy retries has no scan left to do.
  let status = run.state.busyRetry ? 'completed' : claimsPages ? await claimPages(run) : await scanPages(run, pages);
  await run.groups.drain();
  // A page read ahead of a stop is not used; its activity must still end before the run does.
  await pages.dropReadAhead();
  if (status === 'completed') {
    const retry = await retryBusyOwners(
      run.groups,
      run.settings,
      run.stopReason,
      run.cancelRequested,
      // Histories recorded before the bound replay without it (docs/SAFE-DEPLOYS.md).
      () => (patched(BUSY_RETRY_BOUND_PATCH) ? groupsThatFit(run.settings) : Number.MAX_SAFE_INTEGER),
      run.state.busyRetry,
    );
    if (retry.handOver) status = await continueAsNextRun(run, retry.handOver);
    else if (retry.stopped) status = retry.stopped;
  }
  run.groups.failStillBusy();
  // A partition leaves the prune to its cycle, which prunes once all partitions are done.
  const pruned = status === 'cancelled' || run.partition ? 0 : await prune(run);
  return [status, pruned];
}

/**
 * The day's partition count: the input's (no count, then), else the plan's from the due count. Nothing due is
 * a plan too: the cycle then skips the scan (the count read the same documents the scan would).
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

/**
 * `documentExpiryReminderPartition`: one partition of a cycle's day, started by the cycle
 * ({@link runPartitions}). It scans its id range page after page, reminds the owners, retries the busy
 * ones and continues as new as a cycle that scans alone does; its cycle prunes.
 */
export async function documentExpiryReminderPartition(input: PartitionInput): Promise<PartitionResult> {
  const info = workflowInfo();
  if (info.parent === undefined) {
    throw ApplicationFailure.nonRetryable(
      'Invalid partition input: a partition is started by its cycle; start the cycle instead',
      'InvalidCycleInput',
    );
  }
  const run = beginPartitionRun(input);
  const [status] = await scanAlone(run);
  return { status, counts: run.counts, runs: run.state.runs, firstRunId: run.firstRunId };
}

/** What the steps of one run share; `state` and `counts` belong to the cycle and travel to its next run. */
interface CycleRun {
  jobRunId: string;
  /** The first run id of the cycle's chain of runs: stable across continue-as-new, it keys the scan positions. */
  firstRunId: string;
  settings: CycleSettings;
  state: CycleContinuation;
  counts: CycleCounts;
  scheduledAt: Date | undefined;
  groups: RemindOwnersInFlight;
  /** Why the cycle must stop scheduling new work now, if it must. */
  stopReason: () => CycleStatus | undefined;
  /** Resolves when a cancel is requested. */
  cancelRequested: Promise<void>;
  /** Shows the counts so far in the Web UI. */
  progress: () => void;
  /** The id range this run scans, when it is one partition of a cycle. */
  partition?: PartitionRef;
  /** The partitions the cycle runs its day in (a partitioned cycle's own run). */
  partitions?: number;
  /** The partitions still running, by workflow id: the progress query names them (their counts are theirs). */
  partitionsRunning: Set<string>;
  /** Hands the cycle (or the partition) over to its next run. */
  continueAs: (continuation: CycleContinuation) => Promise<never>;
}

/** One page's step: the page, why the cycle stops (if it does), and when the page's owner groups have ended. */
interface PageStep {
  page: CandidatePage;
  stopped: CycleStatus | undefined;
  settled: Promise<void>;
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
  const run = runState(jobRunId, settings, continued ?? firstState(settings, Date.now()), scheduledAt, (c) =>
    continueAsNew<typeof documentExpiryReminderCycle>({ continuation: c }),
  );
  const { state } = run;
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

/** The state of a cycle's (or a partition's) first run. */
function firstState(settings: CycleSettings, startedAtMs: number): CycleContinuation {
  return { settings, startedAtMs, counts: { ...ZERO_COUNTS }, runs: 1, busyOwnerIds: [] };
}

/** A partition's run: its cycle's settings and start, its own counts and chain of runs (no activity). */
function beginPartitionRun(input: PartitionInput): CycleRun {
  const { partition, jobRunId, settings } = input;
  const state = input.continuation ?? firstState(settings, input.cycleStartedAtMs);
  const run = runState(jobRunId, settings, state, undefined, (c) =>
    continueAsNew<typeof documentExpiryReminderPartition>({ ...input, continuation: c }),
  );
  run.partition = partition;
  run.groups.allowEagerDispatch = false;
  if (!input.continuation)
    log.info('partition started', { jobRunId, partition: partition.index + 1, of: partition.count });
  run.progress();
  return run;
}

/**
 * The run's shared state: counts, the progress query and line, the stop reasons (a cancel request, the
 * cycle's time limit) and the owner groups in flight.
 */
function runState(
  jobRunId: string,
  settings: CycleSettings,
  state: CycleContinuation,
  scheduledAt: Date | undefined,
  continueAs: (continuation: CycleContinuation) => Promise<never>,
): CycleRun {
  const counts: CycleCounts = { ...state.counts };
  const deadline = state.startedAtMs + settings.maxRunDurationMs;
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
  const progress = () => showProgress(run);
  const run: CycleRun = {
    jobRunId,
    firstRunId: workflowInfo().firstExecutionRunId,
    settings,
    state,
    counts,
    scheduledAt,
    groups: new RemindOwnersInFlight(settings, jobRunId, counts, progress, state.busyOwnerIds, state.busyQueuedBy),
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
 * Page after page until the scan is done or the cycle stops, handing over to a new run when history is
 * nearly full. Returns the cycle's status so far.
 */
async function scanPages(run: CycleRun, pages: PageReader): Promise<CycleStatus> {
  for (;;) {
    const stop = run.stopReason();
    if (stop) return stop;
    const { page, stopped } = await pageInSpan(run, pages);
    upsertSearchAttributes([{ key: REMINDERS_SENT, value: run.counts.remindersSent }]);
    if (stopped) return stopped;
    if (!page.hasNext) return 'completed';
    if (!pages.readingAhead && historyNearlyFull(run.settings, 1)) return continueAsNextRun(run);
  }
}

/** Runs {@link schedulePage} in a "page" span that ends when the page's owner groups have. */
function pageInSpan(run: CycleRun, pages: PageReader): Promise<PageStep> {
  const { counts, jobRunId, settings } = run;
  return tracer.startActiveSpan(
    'page',
    { attributes: { correlationId: jobRunId, page: counts.pages + 1, batchSize: settings.batchSize } },
    async (span) => {
      let spanEnded: Promise<void> | undefined;
      try {
        const step = await schedulePage(run, pages, span);
        spanEnded = step.settled.then(() => span.end());
        return step;
      } finally {
        if (!spanEnded) span.end();
      }
    },
  );
}

/** Reads the next page, starts reading the one after, and schedules the page's owner groups. */
async function schedulePage(run: CycleRun, pages: PageReader, span: otel.Span): Promise<PageStep> {
  const page = await pages.next();
  const ownerUserIds = pageOwnerUserIds(page);
  span.setAttributes({ documentCount: page.documentCount, owners: ownerUserIds.length });
  log.info('batch selected', {
    jobRunId: run.jobRunId,
    page: run.counts.pages,
    count: page.documentCount,
    owners: ownerUserIds.length,
  });
  pages.readAheadAfter(page);
  const { stopped, settled } = await run.groups.schedule(ownerUserIds, run.stopReason);
  return { page, stopped, settled };
}

/**
 * Continues as new with the cycle's settings, counts and busy owners. It first waits for the groups in
 * flight, so the counts and page number it carries promise that everything before them is done. Returns
 * only when a cancel request (or the time limit) came while draining: that ends the cycle here, as a new
 * run would not know of it.
 */
async function continueAsNextRun(run: CycleRun, busyRetry?: BusyRetryState): Promise<CycleStatus> {
  const { groups, settings, state, counts } = run;
  await groups.drain();
  const drained = run.stopReason();
  if (drained) return drained;
  const busyOwnerIds = groups.takeBusy();
  groups.failNotCarried(busyOwnerIds.slice(MAX_CARRIED_BUSY_OWNERS), MAX_CARRIED_BUSY_OWNERS);
  const carried = busyOwnerIds.slice(0, MAX_CARRIED_BUSY_OWNERS);
  const busyQueuedBy = groups.busyQueuedByOf(carried);
  return run.continueAs({
    settings,
    startedAtMs: state.startedAtMs,
    counts,
    runs: state.runs + 1,
    busyOwnerIds: carried,
    // Absent when no carried owner has a key: the continuation keeps the older shape.
    ...(busyQueuedBy ? { busyQueuedBy } : {}),
    ...(busyRetry ? { busyRetry } : {}),
  });
}

/** History a page may still add, `pagesAhead` times over: its own activity, and its owners' activities. */
function historyNearlyFull(settings: CycleSettings, pagesAhead: number): boolean {
  const pageEvents = pageHistoryEvents(settings);
  const now = workflowInfo();
  return now.continueAsNewSuggested || now.historyLength + pagesAhead * pageEvents > settings.maxHistoryEvents;
}

/**
 * Group activities the run's history still has room for, keeping {@link HANDOVER_EVENTS} for what follows
 * them (a timer, the prune, the hand-over or the end); 0 once the server suggests continuing as new.
 */
function groupsThatFit(settings: CycleSettings): number {
  const now = workflowInfo();
  if (now.continueAsNewSuggested) return 0;
  return Math.max(
    0,
    Math.floor((settings.maxHistoryEvents - now.historyLength - HANDOVER_EVENTS) / EVENTS_PER_ACTIVITY),
  );
}

/**
 * A partition's scan, page after page, the pages read and their owners claimed by `claimPage` activities of
 * up to `pagesPerClaim` pages each (docs/DESIGN.md#page-claims), until the scan is done or the partition stops; hands over to a new run when
 * history is nearly full. The partition's reminders-sent search attribute is updated at most every
 * {@link SEARCH_ATTRIBUTES_EVERY_MS}, and at the end. Returns the status so far.
 */
async function claimPages(run: CycleRun): Promise<CycleStatus> {
  const { settings, counts, groups, partition } = run;
  let shownAt = Date.now();
  const show = () => {
    upsertSearchAttributes([{ key: REMINDERS_SENT, value: counts.remindersSent }]);
    shownAt = Date.now();
  };
  for (;;) {
    const stop = run.stopReason();
    if (stop) {
      show();
      return stop;
    }
    const page = counts.pages + 1;
    const pages = patched(PAGES_PER_CLAIM_PATCH) ? (settings.pagesPerClaim ?? DEFAULT_PAGES_PER_CLAIM) : undefined;
    const summary = pages ? `pages from ${page}` : `page ${page}`;
    const r = await CancellationScope.nonCancellable(() =>
      claimPage.executeWithOptions({ ...PAGE_CLAIM_ACTIVITY, summary, allowEagerDispatch: false }, [
        {
          window: candidateWindow(settings),
          cycleId: run.firstRunId,
          jobRunId: run.jobRunId,
          page,
          batchSize: settings.batchSize,
          // Only a partition claims pages, so it is always there.
          partition: partition ?? { index: 0, count: 1 },
          asOf: settings.asOf,
          ownerConcurrency: settings.ownerConcurrency,
          lastAttempt: PAGE_CLAIM_ACTIVITY.retry.maximumAttempts,
          ...(pages ? { pages } : {}),
        },
      ]),
    );
    counts.pages = page + (r.pagesClaimed ?? 1) - 1;
    counts.documentsSeen += r.documentCount;
    groups.record(r, r.ownersFoundBusy);
    run.progress();
    if (!r.hasNext) {
      show();
      return 'completed';
    }
    if (Date.now() - shownAt >= SEARCH_ATTRIBUTES_EVERY_MS) show();
    const now = workflowInfo();
    if (now.continueAsNewSuggested || now.historyLength + 2 * EVENTS_PER_ACTIVITY > settings.maxHistoryEvents) {
      return continueAsNextRun(run);
    }
  }
}

/** The scan's pages in order, each read once; the next may be read while this one's owners run. */
class PageReader {
  private readAhead: Promise<CandidatePage> | undefined;

  constructor(private readonly run: CycleRun) {}

  /** A page is being read ahead, so this run still reads it. */
  get readingAhead(): boolean {
    return this.readAhead !== undefined;
  }

  /** The next page (the one read ahead, or read now), counted. */
  async next(): Promise<CandidatePage> {
    const { counts } = this.run;
    const page = await (this.readAhead ?? this.read(counts.pages + 1));
    this.readAhead = undefined;
    counts.pages += 1;
    counts.documentsSeen += page.documentCount;
    return page;
  }

  /**
   * Starts reading the page after `page`, unless it would go unused: this run continues as new after
   * `page`, or the cycle is stopping (docs/DESIGN.md#reading-the-next-page-ahead).
   */
  readAheadAfter(page: CandidatePage): void {
    if (!page.hasNext || historyNearlyFull(this.run.settings, 2) || this.run.stopReason()) return;
    this.readAhead = this.read(this.run.counts.pages + 1);
    // Its failure is handled where it is awaited; unhandled meanwhile, it would fail workflow tasks.
    this.readAhead.catch(() => undefined);
  }

  /** Waits for a page read ahead of a stop, failed or not. */
  async dropReadAhead(): Promise<void> {
    await this.readAhead?.catch(() => undefined);
  }

  private read(page: number): Promise<CandidatePage> {
    const { settings, firstRunId, jobRunId, partition } = this.run;
    const window = candidateWindow(settings);
    return CancellationScope.nonCancellable(() =>
      findCandidatePage({
        window,
        cycleId: firstRunId,
        jobRunId,
        page,
        batchSize: settings.batchSize,
        ...(partition ? { partition } : {}),
      }),
    );
  }
}

function candidateWindow(settings: CycleSettings) {
  return {
    asOfDate: settings.asOfDate,
    thresholdsDays: settings.thresholdsDays,
    retentionDays: settings.retentionDays,
  };
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

function progressLine({
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
  const split = partition
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

/** Live progress in the Web UI's "current details" (not recorded in history). */
function showProgress(run: CycleRun): void {
  setCurrentDetails(`Running · ${progressLine(run)}`);
}
