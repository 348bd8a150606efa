/** Reading a workflow's history the way the Web UI shows it: every payload, as bytes. */
import type { WorkflowHandle } from '@temporalio/client';
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
