/** Reading a workflow's history the way the Web UI shows it: every payload, as bytes. */
import type { Client, WorkflowHandle, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** The history of one run (the first, unless `runId` says otherwise), binary-encoded. */
export async function historyBytes(handle: WorkflowHandle, runId?: string): Promise<Buffer> {
  const target = runId ? handle.client.getHandle(handle.workflowId, runId) : handle;
  const history = await target.fetchHistory();
  return Buffer.from(temporal.api.history.v1.History.encode(history).finish());
}

/** Event types of one run, in order. */
export async function historyEventTypes(handle: WorkflowHandle, runId?: string): Promise<string[]> {
  const target = runId ? handle.client.getHandle(handle.workflowId, runId) : handle;
  const history = await target.fetchHistory();
  return (history.events ?? []).map((e) => String(temporal.api.enums.v1.EventType[e.eventType ?? 0]));
}

/** The histories of every run of the cycle, first to last, following continue-as-new. */
export async function runHistories(
  client: Client,
  handle: WorkflowHandleWithFirstExecutionRunId,
): Promise<{ runId: string; history: temporal.api.history.v1.IHistory }[]> {
  const runs: { runId: string; history: temporal.api.history.v1.IHistory }[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await client.workflow
      .getHandle(handle.workflowId, runId)
      .fetchHistory();
    runs.push({ runId, history });
    const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
    runId = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}
