/**
 * Reading a workflow's history from the server: every run of a chain that continued as new, and the child
 * workflows (a cycle's partitions) it started. The replay recorder, the benchmark and `explain` read them.
 */
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

/**
 * The first run id of `workflowId`'s chain of runs (a partition's, say, whose handle the caller does not
 * hold), from the server's description of its current run.
 */
export async function firstRunIdOf(client: Client, workflowId: string): Promise<string> {
  const described = await client.workflow.getHandle(workflowId).describe();
  return described.raw.workflowExecutionInfo?.firstRunId || described.runId;
}

/** The histories of every run of the cycle, first to last, following continue-as-new. */
export async function runHistories(
  client: Client,
  handle: Pick<WorkflowHandleWithFirstExecutionRunId, 'workflowId' | 'firstExecutionRunId'>,
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

/** The child workflows the runs started, by workflow id (`…/partition-1-of-2` first), with their first run ids. */
export function startedChildren(
  runs: { history: temporal.api.history.v1.IHistory }[],
): { workflowId: string; firstExecutionRunId: string }[] {
  return runs
    .flatMap(({ history }) =>
      (history.events ?? []).flatMap((e) => {
        const started = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
        return started?.workflowId && started.runId
          ? [{ workflowId: started.workflowId, firstExecutionRunId: started.runId }]
          : [];
      }),
    )
    .sort((a, b) => a.workflowId.localeCompare(b.workflowId));
}

/**
 * An activity a run ended: its type, its id and its input, as the default JSON converter decodes them, and
 * its result, or the message of its last failure when its retries ran out (failed or timed out).
 */
export interface EndedActivity {
  activityType: string;
  activityId: string;
  input: unknown;
  result?: unknown;
  failure?: string;
}

/** The activities `history` ended, in the order they ended. */
export function endedActivities(history: temporal.api.history.v1.IHistory): EndedActivity[] {
  const scheduled = new Map<string, EndedActivity>();
  const ended: EndedActivity[] = [];
  for (const e of history.events ?? []) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      scheduled.set(String(e.eventId), {
        activityType: s.activityType?.name ?? '',
        activityId: s.activityId ?? '',
        input: decoded(s.input?.payloads?.[0]),
      });
    }
    const completed = e.activityTaskCompletedEventAttributes;
    const failed = e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
    const which = scheduled.get(String((completed ?? failed)?.scheduledEventId));
    if (which && completed) ended.push({ ...which, result: decoded(completed.result?.payloads?.[0]) });
    else if (which && failed) ended.push({ ...which, failure: failed.failure?.message ?? 'failed' });
  }
  return ended;
}

/** A payload as the default JSON converter decodes it; undefined for none. */
function decoded(payload: temporal.api.common.v1.IPayload | null | undefined): unknown {
  return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
}
