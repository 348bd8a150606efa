/**
 * The workers' Worker Deployment (docs/SAFE-DEPLOYS.md): which version is current and which ramps, which
 * versions still have open cycles, and the operator's commands that route new cycles to a version. A cycle
 * is pinned to the version that started it; these commands only decide where the next ones start.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  countOpenCycles,
  describeDeployment,
  pollersByBuildId,
  versionClause,
  type DeploymentTarget as Target,
} from '../temporal/deployment-versions';

type Summary = temporal.api.deployment.v1.WorkerDeploymentInfo.IWorkerDeploymentVersionSummary;

const { WorkerDeploymentVersionStatus, VersionDrainageStatus } = temporal.api.enums.v1;

/** Who the server records as having changed the routing (`lastModifierIdentity` of the deployment). */
const IDENTITY = 'expiry-reminder client';

/** One version of the deployment, as `deployment status` shows it. */
interface VersionStatus {
  buildId: string;
  /** current, ramping, draining (open pinned cycles remain), drained, inactive (never current). */
  status: string;
  /** The server's last drainage check (it counts open pinned workflows now and then, not live). */
  drainage?: { status: string; checkedAt?: string };
  /** Cycles still open on this version, from visibility (live). */
  openCycles: number;
  /**
   * Workers of this version polling the task queue (the server lists a poller for a few minutes after its
   * last poll). Open cycles and none polling: those cycles are stranded (the runbook's "Stranded cycles").
   */
  pollers: number;
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

function versionStatus(summary: Summary, openCycles: number, pollers: number): VersionStatus {
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
    pollers,
    ...(summary.currentSinceTime ? { currentSince: isoOf(summary.currentSinceTime) } : {}),
    ...(summary.rampingSinceTime ? { rampingSince: isoOf(summary.rampingSinceTime) } : {}),
  };
}

/** The deployment's routing and, per version, its open cycles (visibility) and drainage (the server's). */
export async function deploymentStatus(client: Client, target: Target): Promise<DeploymentStatus> {
  const { namespace, deploymentName, taskQueue } = target.temporal;
  const info = (await describeDeployment(client, target))?.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const summaries = info?.versionSummaries ?? [];
  const polling = await pollersByBuildId(client, target);
  const versions = await Promise.all(
    summaries.map(async (s) => {
      const buildId = s.deploymentVersion?.buildId ?? '';
      const open = await countOpenCycles(client, namespace, versionClause(deploymentName, buildId));
      return versionStatus(s, open, polling.get(buildId)?.length ?? 0);
    }),
  );
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  return {
    deploymentName,
    taskQueue,
    current: routing?.currentDeploymentVersion?.buildId || null,
    ramping: ramping ? { buildId: ramping, percent: routing?.rampingVersionPercentage ?? 0 } : null,
    versions,
    unversionedOpenCycles: await countOpenCycles(
      client,
      namespace,
      `TaskQueue = "${taskQueue}" AND TemporalWorkerDeploymentVersion IS NULL`,
    ),
    ...(info?.lastModifierIdentity ? { lastModifiedBy: info.lastModifierIdentity } : {}),
  };
}

/** The identities of the workers of `buildId` polling the job's task queue for workflow tasks. */
async function versionPollers(client: Client, target: Target, buildId: string): Promise<string[]> {
  return (await pollersByBuildId(client, target)).get(buildId) ?? [];
}

/** A command the deployment's state makes unsafe or pointless; the message says what to do. */
class DeploymentRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeploymentRefusal';
  }
}

/**
 * The server registers a version in its deployment shortly after the version's first poll, not with it, and
 * each of its task queue types (workflow, activity) on its own: until the version has every task queue the
 * current version has, routing to it is refused with FAILED_PRECONDITION ("no Worker Deployment found", "missing
 * active task queues from the current version"). A routing change waits that long for it, at most this.
 */
const REGISTRATION_GRACE_MS = 10_000;

/** gRPC's status code of a routing change the deployment's state does not allow (yet). */
const FAILED_PRECONDITION = 9;

/** The version's pollers; refused when it has none (after waiting `waitMs` for a first poll). */
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
  return pollers;
}

/**
 * Runs a routing change, again while the server refuses it as not yet possible (FAILED_PRECONDITION) and
 * `deadline` (epoch ms) has not passed: a version whose workers have just started is registered in its
 * deployment a moment after their first polls. Past the deadline the server's refusal is thrown.
 */
export async function routeWhenRegistered<T>(deadline: number, change: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await change();
    } catch (err) {
      if (!isNotRoutableYet(err) || Date.now() >= deadline) throw err;
      await sleep(250);
    }
  }
}

const isNotRoutableYet = (err: unknown) => isGrpcServiceError(err) && err.code === FAILED_PRECONDITION;

/** {@link routeWhenRegistered} for an operator's command: `waitMs` or {@link REGISTRATION_GRACE_MS}, then a refusal. */
async function routeOnceRegistered(buildId: string, waitMs: number, change: () => Promise<unknown>): Promise<void> {
  await routeWhenRegistered(Date.now() + Math.max(waitMs, REGISTRATION_GRACE_MS), change).catch((err: unknown) => {
    if (!isNotRoutableYet(err)) throw err;
    throw new DeploymentRefusal(
      `the server refuses to route to version ${buildId}: ${(err as { details?: string }).details}`,
    );
  });
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
 * (the first versioned deploy): those would move to this version mid-cycle and fail every workflow task on a
 * patch marker the new code no longer has (docs/SAFE-DEPLOYS.md), so there is no way to force it; the refusal
 * says how to end them. `waitForPollersMs`: how long to wait for the version's first poll (a starter that has
 * just started the workers), default none.
 */
export async function makeCurrent(
  client: Client,
  target: Target,
  buildId: string,
  options: { waitForPollersMs?: number } = {},
): Promise<RoutingChange> {
  const before = await deploymentStatus(client, target);
  const pollers = await requirePollers(client, target, buildId, options.waitForPollersMs);
  if (before.current === null && before.unversionedOpenCycles > 0) {
    throw new DeploymentRefusal(
      `${before.unversionedOpenCycles} cycle(s) started by unversioned workers are still open on task queue ` +
        `${before.taskQueue}; made current now, version ${buildId} would run the rest of them, and fail on their ` +
        'history. Wait until `deployment status` shows unversionedOpenCycles 0 (keep the unversioned workers ' +
        'running; a cycle ends within its REMINDER_MAX_RUN_DURATION), or end them: `temporal workflow terminate ' +
        '--workflow-id <id> --reason "first versioned deploy"` and start a cycle on the new version once it is ' +
        'current (the ledger sends nothing twice). docs/SAFE-DEPLOYS.md, "The first versioned deploy"',
    );
  }
  await routeOnceRegistered(buildId, options.waitForPollersMs ?? 0, () =>
    client.workflowService.setWorkerDeploymentCurrentVersion({
      namespace: target.temporal.namespace,
      deploymentName: target.temporal.deploymentName,
      buildId,
      identity: IDENTITY,
    }),
  );
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
  const ramp = () =>
    client.workflowService.setWorkerDeploymentRampingVersion({
      namespace: target.temporal.namespace,
      deploymentName: target.temporal.deploymentName,
      buildId: buildId ?? '',
      percentage: buildId ? percent : 0,
      identity: IDENTITY,
    });
  if (buildId) await routeOnceRegistered(buildId, 0, ramp);
  else await ramp();
  return routingChange(client, target, before, pollers);
}
