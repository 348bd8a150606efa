/**
 * Reading the workers' Worker Deployment from the server: its versions, who polls for each, and how many cycles
 * each still holds. `deployment status` prints it; the worker's stranded-cycles gauge watches it, through the
 * worker's own connection (any `workflowService` will do: a client's or a worker's).
 */
import { isGrpcServiceError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';
import { WORKFLOW_TYPE } from '../domain/names';

/** Where the deployment is: its namespace, task queue and name. */
export type DeploymentTarget = Pick<Config, 'temporal'>;

/** What holds the server's workflow service: a client, or a worker's native connection. */
export interface WorkflowServiceHolder {
  workflowService: temporal.api.workflowservice.v1.WorkflowService;
}

/** gRPC's status code of a deployment no versioned worker has polled yet. */
const NOT_FOUND = 5;

const { TaskQueueType } = temporal.api.enums.v1;

/** The deployment's description, or undefined before any versioned worker of it has polled. */
export async function describeDeployment(service: WorkflowServiceHolder, target: DeploymentTarget) {
  try {
    return await service.workflowService.describeWorkerDeployment({
      namespace: target.temporal.namespace,
      deploymentName: target.temporal.deploymentName,
    });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === NOT_FOUND) return undefined;
    throw err;
  }
}

/** Open cycles (visibility, live) matching `versionClause`, a visibility query on the version. */
export async function countOpenCycles(
  service: WorkflowServiceHolder,
  namespace: string,
  versionClause: string,
): Promise<number> {
  const { count } = await service.workflowService.countWorkflowExecutions({
    namespace,
    query: `WorkflowType = "${WORKFLOW_TYPE}" AND ExecutionStatus = "Running" AND ${versionClause}`,
  });
  return Number(count ?? 0);
}

/** The visibility clause of one version's executions. */
export const versionClause = (deploymentName: string, buildId: string) =>
  `TemporalWorkerDeploymentVersion = "${deploymentName}:${buildId}"`;

/**
 * The identities polling the job's task queue for workflow tasks, by build id (the deployment's versions
 * only). The server keeps a poller listed for minutes after its last poll; `seenSince` (epoch ms) leaves out
 * those it last saw before then.
 */
export async function pollersByBuildId(
  service: WorkflowServiceHolder,
  target: DeploymentTarget,
  seenSince = 0,
): Promise<Map<string, string[]>> {
  const { pollers } = await service.workflowService.describeTaskQueue({
    namespace: target.temporal.namespace,
    taskQueue: { name: target.temporal.taskQueue },
    taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const byBuildId = new Map<string, string[]>();
  for (const p of pollers ?? []) {
    const buildId = p.deploymentOptions?.buildId;
    if (!buildId || p.deploymentOptions?.deploymentName !== target.temporal.deploymentName) continue;
    const seen = p.lastAccessTime?.seconds;
    if (seenSince > 0 && (seen == null || Number(seen) * 1000 < seenSince)) continue;
    byBuildId.set(buildId, [...(byBuildId.get(buildId) ?? []), p.identity ?? '']);
  }
  return byBuildId;
}

/** A version holding open cycles that no worker polls for. */
export interface StrandedVersion {
  buildId: string;
  openCycles: number;
}

/**
 * A worker long-polls for up to a minute and the server notes the poll when it arrives: a poller it has not
 * seen for this long has stopped.
 */
const POLLER_GONE_AFTER_MS = 2 * 60_000;

/**
 * The versions whose open cycles wait for a worker that does not poll: a cycle is pinned to the version that
 * started it, so none of them moves on until that version's workers come back, the cycle is moved to a version
 * that has workers, or it is terminated (docs/runbooks/document-expiry-reminder.md,
 * DocumentExpiryReminderStrandedCycles). Counts only the versions without pollers seen within `goneAfterMs`.
 */
export async function strandedVersions(
  service: WorkflowServiceHolder,
  target: DeploymentTarget,
  goneAfterMs = POLLER_GONE_AFTER_MS,
): Promise<StrandedVersion[]> {
  const { namespace, deploymentName } = target.temporal;
  const summaries = (await describeDeployment(service, target))?.workerDeploymentInfo?.versionSummaries ?? [];
  const polling = await pollersByBuildId(service, target, Date.now() - goneAfterMs);
  const idle = summaries.map((s) => s.deploymentVersion?.buildId ?? '').filter((b) => b && !polling.has(b));
  const counts = await Promise.all(
    idle.map((buildId) => countOpenCycles(service, namespace, versionClause(deploymentName, buildId))),
  );
  return idle.map((buildId, i) => ({ buildId, openCycles: counts[i] ?? 0 })).filter((v) => v.openCycles > 0);
}
