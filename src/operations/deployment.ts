/**
 * The workers' Worker Deployment (docs/SAFE-DEPLOYS.md): which version is current and which ramps, which
 * versions still have open cycles, and the operator's commands that route new cycles to a version. A cycle
 * is pinned to the version that started it; these commands only decide where the next ones start.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';
import { WORKFLOW_TYPE } from '../domain/names';

type Target = Pick<Config, 'temporal'>;
type Summary = temporal.api.deployment.v1.WorkerDeploymentInfo.IWorkerDeploymentVersionSummary;

/** gRPC's status code of a deployment no versioned worker has polled yet. */
const NOT_FOUND = 5;

const { WorkerDeploymentVersionStatus, VersionDrainageStatus, TaskQueueType } = temporal.api.enums.v1;

/** Who the server records as having changed the routing (`lastModifierIdentity` of the deployment). */
const IDENTITY = 'expiry-reminder client';

/** One version of the deployment, as `deployment status` shows it. */
interface VersionStatus {
  buildId: string;
  /** current, ramping, draining (open pinned cycles remain), drained, inactive (never current). */
  status: string;
  /** The server's last drainage check (it counts open pinned workflows now and then, not live). */
  drainage?: { status: string; checkedAt?: string };
  /** Cycles and partitions still open on this version, from visibility (live). */
  openCycles: number;
  currentSince?: string;
  rampingSince?: string;
}

/** What `deployment status` prints. */
export interface DeploymentStatus {
  deploymentName: string;
  taskQueue: string;
  /** The build new cycles start on; null: the unversioned workers (none made current yet). */
  current: string | null;
  ramping: { buildId: string; percent: number } | null;
  versions: VersionStatus[];
  /** Cycles started by unversioned workers and still open: they move to the current version (see SAFE-DEPLOYS). */
  unversionedOpenCycles: number;
  lastModifiedBy?: string;
}

const isoOf = (t: temporal.api.deployment.v1.VersionDrainageInfo['lastCheckedTime'] | undefined) =>
  t?.seconds != null ? new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString() : undefined;

/** `WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING` → `draining`. */
function enumName(names: Record<number, string>, value: number | null | undefined, prefix: string): string {
  return (names[value ?? 0] ?? 'UNSPECIFIED').replace(prefix, '').toLowerCase();
}

async function countOpen(client: Client, namespace: string, versionClause: string): Promise<number> {
  const { count } = await client.workflowService.countWorkflowExecutions({
    namespace,
    query: `WorkflowType = "${WORKFLOW_TYPE}" AND ExecutionStatus = "Running" AND ${versionClause}`,
  });
  return Number(count ?? 0);
}

/** The deployment's description, or undefined before any versioned worker of it has polled. */
async function describe(client: Client, target: Target) {
  try {
    return await client.workflowService.describeWorkerDeployment({
      namespace: target.temporal.namespace,
      deploymentName: target.temporal.deploymentName,
    });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === NOT_FOUND) return undefined;
    throw err;
  }
}

function versionStatus(summary: Summary, openCycles: number): VersionStatus {
  const drainage = summary.drainageInfo ?? (summary.drainageStatus ? { status: summary.drainageStatus } : undefined);
  return {
    buildId: summary.deploymentVersion?.buildId ?? '',
    status: enumName(WorkerDeploymentVersionStatus, summary.status, 'WORKER_DEPLOYMENT_VERSION_STATUS_'),
    ...(drainage?.status
      ? {
          drainage: {
            status: enumName(VersionDrainageStatus, drainage.status, 'VERSION_DRAINAGE_STATUS_'),
            checkedAt: isoOf('lastCheckedTime' in drainage ? drainage.lastCheckedTime : undefined),
          },
        }
      : {}),
    openCycles,
    ...(summary.currentSinceTime ? { currentSince: isoOf(summary.currentSinceTime) } : {}),
    ...(summary.rampingSinceTime ? { rampingSince: isoOf(summary.rampingSinceTime) } : {}),
  };
}

/** The deployment's routing and, per version, its open cycles (visibility) and drainage (the server's). */
export async function deploymentStatus(client: Client, target: Target): Promise<DeploymentStatus> {
  const { namespace, deploymentName, taskQueue } = target.temporal;
  const info = (await describe(client, target))?.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const summaries = info?.versionSummaries ?? [];
  const versions = await Promise.all(
    summaries.map(async (s) =>
      versionStatus(
        s,
        await countOpen(
          client,
          namespace,
          `TemporalWorkerDeploymentVersion = "${deploymentName}:${s.deploymentVersion?.buildId ?? ''}"`,
        ),
      ),
    ),
  );
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  return {
    deploymentName,
    taskQueue,
    current: routing?.currentDeploymentVersion?.buildId || null,
    ramping: ramping ? { buildId: ramping, percent: routing?.rampingVersionPercentage ?? 0 } : null,
    versions,
    unversionedOpenCycles: await countOpen(
      client,
      namespace,
      `TaskQueue = "${taskQueue}" AND TemporalWorkerDeploymentVersion IS NULL`,
    ),
    ...(info?.lastModifierIdentity ? { lastModifiedBy: info.lastModifierIdentity } : {}),
  };
}

/** The identities of the workers of `buildId` polling the job's task queue for workflow tasks. */
async function versionPollers(client: Client, target: Target, buildId: string): Promise<string[]> {
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace: target.temporal.namespace,
    taskQueue: { name: target.temporal.taskQueue },
    taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (pollers ?? [])
    .filter(
      (p) =>
        p.deploymentOptions?.buildId === buildId &&
        p.deploymentOptions.deploymentName === target.temporal.deploymentName,
    )
    .map((p) => p.identity ?? '');
}

/** A command the deployment's state makes unsafe or pointless; the message says what to do. */
class DeploymentRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeploymentRefusal';
  }
}

/** The server registers a version in its deployment shortly after the version's first poll, not with it. */
const REGISTRATION_GRACE_MS = 10_000;

/** Whether the deployment lists `buildId` among its versions (routing to it is refused until it does). */
async function isRegistered(client: Client, target: Target, buildId: string): Promise<boolean> {
  const summaries = (await describe(client, target))?.workerDeploymentInfo?.versionSummaries ?? [];
  return summaries.some((s) => s.deploymentVersion?.buildId === buildId);
}

/**
 * The version's pollers, once it has some and the deployment has registered it: a worker's first poll
 * shows on the task queue before the server has added its version to the deployment, and routing to it in
 * between is refused (FAILED_PRECONDITION, "no Worker Deployment found"), so a command run right after the
 * workers start waits for both.
 */
async function requirePollers(client: Client, target: Target, buildId: string, waitMs = 0): Promise<string[]> {
  const deadline = Date.now() + waitMs;
  let pollers = await versionPollers(client, target, buildId);
  while (pollers.length === 0 && Date.now() < deadline) {
    await sleep(250);
    pollers = await versionPollers(client, target, buildId);
  }
  if (pollers.length === 0) {
    throw new DeploymentRefusal(
      `version ${buildId} of deployment ${target.temporal.deploymentName} has no workers polling task queue ` +
        `${target.temporal.taskQueue}: start them first (TEMPORAL_WORKER_BUILD_ID=${buildId}), then run this again`,
    );
  }
  const registeredBy = Math.max(deadline, Date.now() + REGISTRATION_GRACE_MS);
  while (!(await isRegistered(client, target, buildId))) {
    if (Date.now() >= registeredBy) {
      throw new DeploymentRefusal(
        `version ${buildId} has workers polling, but deployment ${target.temporal.deploymentName} has not ` +
          'registered it yet: run this again in a few seconds',
      );
    }
    await sleep(250);
  }
  return pollers;
}

/** What `deployment current` and `deployment ramp` print. */
export interface RoutingChange {
  deploymentName: string;
  previous: { current: string | null; ramping: { buildId: string; percent: number } | null };
  current: string | null;
  ramping: { buildId: string; percent: number } | null;
  pollers: string[];
}

/** The routing after a change, beside what it was before. */
async function routingChange(
  client: Client,
  target: Target,
  before: DeploymentStatus,
  pollers: string[],
): Promise<RoutingChange> {
  const after = await deploymentStatus(client, target);
  return {
    deploymentName: target.temporal.deploymentName,
    previous: { current: before.current, ramping: before.ramping },
    current: after.current,
    ramping: after.ramping,
    pollers,
  };
}

/**
 * Makes `buildId` the current version: cycles started from now on (the schedule's next one too) run on it;
 * open cycles stay on the version that started them. A rollback is the same command with the older build id.
 *
 * Refused when the version has no workers polling, and while cycles started by unversioned workers are open
 * (the first versioned deploy): those would move to this version mid-cycle (docs/SAFE-DEPLOYS.md), unless
 * `allowUnversionedCycles`. `waitForPollersMs`: how long to wait for the version's first poll (a starter that
 * has just started the workers), default none.
 */
export async function makeCurrent(
  client: Client,
  target: Target,
  buildId: string,
  options: { allowUnversionedCycles?: boolean; waitForPollersMs?: number } = {},
): Promise<RoutingChange> {
  const before = await deploymentStatus(client, target);
  const pollers = await requirePollers(client, target, buildId, options.waitForPollersMs);
  if (before.current === null && before.unversionedOpenCycles > 0 && !options.allowUnversionedCycles) {
    throw new DeploymentRefusal(
      `${before.unversionedOpenCycles} cycle(s) started by unversioned workers are still open on task queue ` +
        `${before.taskQueue}; made current now, version ${buildId} would run the rest of them. Wait until ` +
        '`deployment status` shows unversionedOpenCycles 0 (docs/SAFE-DEPLOYS.md, "The first versioned deploy")',
    );
  }
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: target.temporal.namespace,
    deploymentName: target.temporal.deploymentName,
    buildId,
    identity: IDENTITY,
  });
  return routingChange(client, target, before, pollers);
}

/**
 * Sends `percent` % of new cycles to `buildId` (the rest to the current version); 0 keeps it ramping with
 * none. `buildId` null stops the ramp.
 */
export async function rampVersion(
  client: Client,
  target: Target,
  buildId: string | null,
  percent: number,
): Promise<RoutingChange> {
  const before = await deploymentStatus(client, target);
  const pollers = buildId ? await requirePollers(client, target, buildId) : [];
  await client.workflowService.setWorkerDeploymentRampingVersion({
    namespace: target.temporal.namespace,
    deploymentName: target.temporal.deploymentName,
    buildId: buildId ?? '',
    percentage: buildId ? percent : 0,
    identity: IDENTITY,
  });
  return routingChange(client, target, before, pollers);
}
