/**
 * For whoever starts workers and then expects them to run cycles (the stack's job, the fault suite, the
 * benchmark, tests): a versioned worker gets new cycles only once its version is its deployment's current one
 * (docs/SAFE-DEPLOYS.md), which an operator decides in production (`deployment current`). A starter that has
 * just started workers of one build decides it itself, with the client's (admin's) identity.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { routeWhenRegistered } from '../../src/operations/deployment';

const { WorkerVersioningMode } = temporal.api.enums.v1;

/**
 * Waits (up to `timeoutMs`) for workers to poll `taskQueue` for workflow tasks, then makes the version of the
 * versioned ones current in their deployment.
 * @returns that version, or undefined when the workers are unversioned (a revision before versioning).
 */
export async function makePollingVersionCurrent(
  client: Client,
  namespace: string,
  taskQueue: string,
  timeoutMs = 120_000,
): Promise<{ deploymentName: string; buildId: string } | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { pollers } = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    if ((pollers ?? []).length > 0) {
      const versioned = pollers!.find(
        (p) =>
          p.deploymentOptions?.workerVersioningMode === WorkerVersioningMode.WORKER_VERSIONING_MODE_VERSIONED &&
          p.deploymentOptions.buildId,
      );
      if (!versioned) return undefined;
      const { deploymentName, buildId } = versioned.deploymentOptions!;
      await routeWhenRegistered(until, () =>
        client.workflowService.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: deploymentName!,
          buildId: buildId!,
          identity: 'expiry-reminder stack',
        }),
      );
      return { deploymentName: deploymentName!, buildId: buildId! };
    }
    if (Date.now() > until) throw new Error(`no worker polled task queue ${taskQueue} within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}
