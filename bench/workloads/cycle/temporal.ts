/**
 * The Temporal path: a cycle started with client.workflow.start on the worker process, timed from the
 * start call to the result. It starts the workflow directly rather than through the schedule because
 * every experiment sets the run's input (AsOf, page, window, group size); a trigger would add only the
 * schedule's start latency.
 */
import crypto from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { temporal as proto } from '@temporalio/proto';
import { WORKFLOW_TYPE } from '../../../src/domain/names';
import type { CycleWorkflow } from '../../../src/workflows';
import { cpuDelta, cpuSnapshot, measurement, procStatusKb, sampleRss, type Measurement } from '../../harness/measure';
import type { BenchWorker } from '../../harness/worker';
import type { CycleSettings } from './settings';

/** One cycle through Temporal; the measurement has the history events per run and the worker's RSS peak. */
export async function temporalCycle(
  label: string,
  client: Client,
  worker: BenchWorker,
  taskQueue: string,
  s: CycleSettings,
): Promise<Measurement> {
  const pid = worker.child.pid!;
  const rss = sampleRss(pid);
  const cpu0 = cpuSnapshot(pid);
  const t0 = performance.now();
  const handle = await client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: `bench-${crypto.randomUUID()}`,
    args: [
      { asOf: s.asOf, batchSize: s.batchSize, ownerConcurrency: s.ownerConcurrency, ownerGroupSize: s.ownerGroupSize },
    ],
  });
  const result = await handle.result();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuDelta(cpu0, cpuSnapshot(pid), seconds);
  const peakRss = rss.stop();
  const eventsPerRun: number[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    const history: proto.api.history.v1.IHistory = await client.workflow
      .getHandle<CycleWorkflow>(handle.workflowId, runId)
      .fetchHistory();
    const events: proto.api.history.v1.IHistoryEvent[] = history.events ?? [];
    eventsPerRun.push(events.length);
    runId = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return measurement(label, seconds, result.ownersProcessed, result.documentsSeen, result.remindersSent, result.pages, {
    status: result.status,
    failedOwners: result.failedOwners,
    workflowDurationMs: result.durationMs,
    runs: result.runs,
    historyEventsPerRun: eventsPerRun,
    workerPeakRssMb: Math.round(peakRss / 1024),
    workerVmHwmMb: Math.round(procStatusKb(pid, 'VmHWM') / 1024),
    cpu,
  });
}
