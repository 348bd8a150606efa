/**
 * What a workflow test file needs: Temporal's time-skipping test server (from Maven Central, cached;
 * scripts/stack/temporal-test-server.ts), the real workflow bundle with the production worker's
 * interceptors and sinks, and per test a worker on its own task queue running stub activities.
 */
import crypto from 'node:crypto';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type LogEntry } from '@temporalio/worker';
import { ensureTemporalTestServer } from '../../../scripts/stack/temporal-test-server';
import type { CycleInput } from '../../../src/domain/cycle';
import { WORKFLOW_TYPE } from '../../../src/domain/names';
import { CYCLE_SEARCH_ATTRIBUTES } from '../../../src/domain/search-attributes';
import { createWorkerMetrics, type WorkerMetrics } from '../../../src/observability/metrics';
import { createTracing } from '../../../src/observability/tracing';
import { buildWorkflowBundle } from '../../../src/temporal/workflow-bundle';
import { WORKFLOWS_PATH, workflowSideOptions } from '../../../src/temporal/worker';
import type { CycleWorkflow } from '../../../src/workflows';
import { runHistories } from '../../../src/temporal/histories';
import { waitFor } from '../../support/wait';
import { stubActivities, stubDefaults, type CycleScript, type StubCall } from './stub-activities';
import { errorOf } from '../../../src/domain/failures';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Every SDK log line of this process, workflow `log.*` included (they carry the workflow id). */
const sdkLog: LogEntry[] = [];
try {
  // Recorded, not printed: the cycle warns about every failed owner, which these tests cause on purpose.
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      sdkLog.push(entry);
      if (entry.level === 'ERROR') process.stderr.write(`[sdk] ${entry.message}\n`);
    }),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
} catch {
  // Already installed for this module registry.
}

/** The time-skipping server and the workflow bundle, shared by the tests of one file (which run in turn). */
export interface CycleEnv {
  env: TestWorkflowEnvironment;
  workflowBundle: { code: string } | { codePath: string };
}

/**
 * Starts a test server of this file's own (time skipping is global to a server) and takes the workflow
 * bundle as the production worker runs it (with the OpenTelemetry interceptors): both come from the
 * global setup, or are fetched and built here when a file runs without it. Tear down with
 * `env.teardown()`.
 */
async function startCycleEnv(): Promise<CycleEnv> {
  const path = await ensureTemporalTestServer((line) => process.stderr.write(`[workflow tests] ${line}\n`));
  const codePath = process.env.WORKFLOW_TEST_BUNDLE_PATH;
  const [env, workflowBundle] = await Promise.all([
    startTestServer(path),
    codePath ? { codePath } : buildWorkflowBundle(WORKFLOWS_PATH).then((code) => ({ code })),
  ]);
  // What `schedule apply` does (its ensureSearchAttributes lists them first, which this server cannot):
  // a cycle upserting an unregistered attribute fails its workflow tasks.
  await env.connection.operatorService.addSearchAttributes({
    namespace: 'default',
    searchAttributes: Object.fromEntries(
      CYCLE_SEARCH_ATTRIBUTES.map((k) => [
        k.name,
        temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${k.type}`],
      ]),
    ),
  });
  return { env, workflowBundle };
}

/**
 * A test server for the calling test file: started before its tests (which run in turn, time skipping
 * being global to a server), torn down after them. Call at the top level; the accessor gives the
 * environment from inside a test. Also sets the file's test timeout: skipped time keeps tests short.
 */
export function cycleEnvPerFile(): () => CycleEnv {
  let cycle: CycleEnv | undefined;
  jest.setTimeout(30_000);
  // Without the global setup (a file run on its own), the start also bundles the workflow.
  beforeAll(async () => {
    cycle = await startCycleEnv();
  }, 120_000);
  afterAll(() => cycle?.env.teardown());
  return () => {
    if (!cycle) throw new Error('the workflow test environment did not start');
    return cycle;
  };
}

/**
 * The SDK gives the server 5 s to answer, which a JVM on a busy machine can miss (it takes about one
 * idle): a start that fails is tried again, twice.
 */
async function startTestServer(path: string): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({
        server: { executable: { type: 'existing-path', path } },
      });
    } catch (err) {
      if (attempt >= 3) throw err;
      process.stderr.write(`[workflow tests] the test server did not start (${errorOf(err).message}); again\n`);
    }
  }
}

/** One run of a cycle as a test sees it. */
export interface CycleRun {
  handle: WorkflowHandleWithFirstExecutionRunId<CycleWorkflow>;
  /** Every stub call, in the order they started. */
  calls: StubCall[];
  /** The worker's metrics, fed by the workflow's sinks. */
  metrics: WorkerMetrics;
  /** The worker's log lines of this cycle (every run of it). */
  logs(): LogEntry[];
  /** The history of every run of the cycle, first to last. */
  histories(): Promise<{ runId: string; events: HistoryEvent[] }[]>;
}

/**
 * Starts a cycle with `input` on a fresh task queue, with a worker running the real workflow code and
 * the stubs of `script`, and runs `body` while the worker runs; the worker has shut down when this
 * resolves.
 */
export async function withCycle<T>(
  { env, workflowBundle }: CycleEnv,
  script: CycleScript,
  input: CycleInput,
  body: (run: CycleRun) => Promise<T>,
): Promise<T> {
  const taskQueue = `workflow-test-${crypto.randomUUID()}`;
  const { activities, calls } = stubActivities(script);
  const metrics = createWorkerMetrics(stubDefaults(script).thresholdsDays);
  const tracing = createTracing({ serviceName: 'expiry-reminder-workflow-test' });
  const { workflowModules, sinks } = workflowSideOptions(tracing, metrics, true);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    interceptors: { workflowModules },
    activities,
    sinks,
  });
  try {
    return await worker.runUntil(async () => {
      const workflowId = `cycle-${taskQueue}`;
      const handle = await env.client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
        workflowId,
        taskQueue,
        args: [input],
      });
      return body({
        handle,
        calls,
        metrics,
        logs: () => sdkLog.filter((e) => e.meta?.workflowId === workflowId),
        histories: async () =>
          (await runHistories(env.client, handle)).map(({ runId, history }) => ({
            runId,
            events: history.events ?? [],
          })),
      });
    });
  } finally {
    await tracing.shutdown();
  }
}

/**
 * Requests the cycle's cancellation and waits until the workflow has seen it (a workflow task completed
 * after the request), so a stub holding a group can let it end knowing the cycle knows.
 */
export async function cancelAndWaitUntilSeen({ handle, histories }: CycleRun): Promise<void> {
  await handle.cancel();
  await waitFor(
    async () => {
      const names = eventNames((await histories()).at(-1)!.events);
      const requested = names.indexOf('WORKFLOW_EXECUTION_CANCEL_REQUESTED');
      return requested >= 0 && names.indexOf('WORKFLOW_TASK_COMPLETED', requested) > requested;
    },
    10_000,
    20,
  );
}

/** Event type names of a history, without the `EVENT_TYPE_` prefix: `ACTIVITY_TASK_SCHEDULED`, … */
export function eventNames(events: HistoryEvent[]): string[] {
  return events.map((e) => String(temporal.api.enums.v1.EventType[e.eventType ?? 0]).replace(/^EVENT_TYPE_/, ''));
}

/**
 * Activities of `type` scheduled and not yet closed, as the history shows them: the most at any point,
 * and how many were still open at the last event.
 */
export function openActivities(events: HistoryEvent[], type: string): { max: number; atEnd: number } {
  const open = new Set<string>();
  let max = 0;
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === type) open.add(String(e.eventId));
    const closed =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (closed) open.delete(String(closed.scheduledEventId));
    max = Math.max(max, open.size);
  }
  return { max, atEnd: open.size };
}

/** The durations of the run's timers, in seconds, in the order they started. */
export function timerSeconds(events: HistoryEvent[]): number[] {
  return events.flatMap((e) => {
    const timeout = e.timerStartedEventAttributes?.startToFireTimeout;
    return timeout ? [Number(timeout.seconds ?? 0) + (timeout.nanos ?? 0) / 1e9] : [];
  });
}

/** The input a run started with (for a continued run: what the previous run carried over). */
export function runInput(events: HistoryEvent[]): CycleInput {
  const payload = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) throw new Error('the run has no WorkflowExecutionStarted event with an input');
  return defaultPayloadConverter.fromPayload<CycleInput>(payload);
}

/** The value of a counter of the worker's metrics for one label value, e.g. `cycles` for `completed`. */
export async function counterValue(
  metrics: WorkerMetrics,
  name: 'cycles' | 'errors',
  label: string,
): Promise<number | undefined> {
  const { values } = await metrics[name].get();
  return values.find((v) => Object.values(v.labels).includes(label))?.value;
}
