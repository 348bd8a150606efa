/**
 * Reading a workflow's history from the server: every run of a chain that continued as new, and the child
 * workflows (a cycle's partitions) it started. The replay recorder and the benchmark read them.
 */
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
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
