/**
 * The Temporal path: a cycle started with client.workflow.start on the worker process, timed from the
 * start call to the result. It starts the workflow directly rather than through the schedule because
 * every experiment sets the run's input (AsOf, page, window, group size); a trigger would add only the
 * schedule's start latency.
 */
import crypto from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { partitionWorkflowId } from '../../../src/domain/cycle';
import { OWNER_ACTIVITIES, WORKFLOW_TYPE } from '../../../src/domain/names';
import { firstRunIdOf, runHistories } from '../../../src/temporal/histories';
import type { CycleWorkflow } from '../../../src/workflows';
import {
  cpuDelta,
  cpuSnapshot,
  measurement,
  processCpuSeconds,
  procStatusKb,
  sampleRss,
  type Measurement,
} from '../../harness/measure';
import type { BenchWorker } from '../../harness/worker';
import type { CycleSettings } from './settings';
import { cycleTimeline } from './timeline';

/**
 * One cycle through Temporal on `workers` (all polling `taskQueue`); the measurement has the history events
 * per run (the cycle's and each partition's), the workers' RSS peak, and with more than one worker each
 * one's share of the group activities (who started them, by the identity in history) and of the CPU.
 */
export async function temporalCycle(
  label: string,
  client: Client,
  workers: readonly BenchWorker[],
  taskQueue: string,
  s: CycleSettings,
): Promise<Measurement> {
  const pids = workers.map((w) => w.child.pid!);
  const rss = pids.map((pid) => sampleRss(pid));
  const cpu0 = cpuSnapshot(pids);
  const own0 = pids.map((pid) => processCpuSeconds(pid));
  const t0 = performance.now();
  const handle = await client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: `bench-${crypto.randomUUID()}`,
    args: [
      {
        asOf: s.asOf,
        batchSize: s.batchSize,
        ownerConcurrency: s.ownerConcurrency,
        ownerGroupSize: s.ownerGroupSize,
        ...(s.partitions !== undefined ? { partitions: s.partitions } : {}),
        ...(s.maxRunDurationMs !== undefined ? { maxRunDurationMs: s.maxRunDurationMs } : {}),
      },
    ],
  });
  const result = await handle.result();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuDelta(cpu0, cpuSnapshot(pids), seconds);
  const peaks = rss.map((r) => r.stop());
  // The events of each run of a chain, first run first (following continue-as-new), and the bytes of the
  // histories as the server sends them (protobuf).
  let historyBytes = 0;
  const eventsOf = async (workflowId: string, firstExecutionRunId: string): Promise<HistoryEvent[][]> =>
    (await runHistories(client, { workflowId, firstExecutionRunId })).map((r) => {
      historyBytes += proto.api.history.v1.History.encode(r.history).finish().length;
      return r.history.events ?? [];
    });
  const cycleRuns = await eventsOf(handle.workflowId, handle.firstExecutionRunId);
  const partitionRuns = await Promise.all(
    Array.from({ length: result.partitions ?? 0 }, async (_, index) => {
      const id = partitionWorkflowId(handle.workflowId, { index, count: result.partitions! });
      return eventsOf(id, await firstRunIdOf(client, id));
    }),
  );
  const groups = groupsByIdentity([...cycleRuns, ...partitionRuns.flat()]);
  const perWorker =
    workers.length > 1
      ? Object.fromEntries(
          pids.map((pid, i) => {
            const started = [...groups]
              .filter(([identity]) => identity.startsWith(`${pid}@`))
              .reduce((n, [, c]) => n + c, 0);
            const total = [...groups.values()].reduce((n, c) => n + c, 0);
            return [
              `worker ${i + 1} (pid ${pid})`,
              {
                groups: started,
                groupShare: total > 0 ? Number((started / total).toFixed(3)) : 0,
                cpuSeconds: Number((processCpuSeconds(pid) - own0[i]).toFixed(2)),
              },
            ];
          }),
        )
      : undefined;
  return measurement(label, seconds, result.ownersProcessed, result.documentsSeen, result.remindersSent, result.pages, {
    status: result.status,
    failedOwners: result.failedOwners,
    workflowDurationMs: result.durationMs,
    runs: result.runs,
    partitions: result.partitions ?? 1,
    historyEventsPerRun: cycleRuns.map((r) => r.length),
    partitionHistoryEventsPerRun: partitionRuns.map((runs) => runs.map((r) => r.length)),
    historyKilobytes: Math.round(historyBytes / 1024),
    workers: workers.length,
    ...(perWorker ? { perWorker } : {}),
    workerPeakRssMb: Math.round(Math.max(...peaks) / 1024),
    workerVmHwmMb: Math.round(Math.max(...pids.map((pid) => procStatusKb(pid, 'VmHWM'))) / 1024),
    cpu,
    timeline: cycleTimeline(cycleRuns, partitionRuns),
  });
}

type HistoryEvent = proto.api.history.v1.IHistoryEvent;

/** Owner activities (`claimPage`, `remindOwners`) started, by the identity of the worker that started them. */
function groupsByIdentity(runs: HistoryEvent[][]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const events of runs) {
    const groupEvents = new Set(
      events
        .filter((e) => OWNER_ACTIVITIES.has(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''))
        .map((e) => String(e.eventId)),
    );
    for (const e of events) {
      const started = e.activityTaskStartedEventAttributes;
      if (!started || !groupEvents.has(String(started.scheduledEventId))) continue;
      const identity = started.identity ?? '';
      counts.set(identity, (counts.get(identity) ?? 0) + 1);
    }
  }
  return counts;
}
