/**
 * Pinned cycles (docs/SAFE-DEPLOYS.md): two versions of the worker, N and N+1, poll one task queue; a cycle
 * started on N runs every workflow task and activity of its own and of its partitions on N's workers while N+1
 * is made current, and the next cycle starts on N+1. A rollback is the same command back, and pins the same way.
 * On the production profile, the drill of issue 36: two workers per version and a 20,000-owner cycle.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { checkoutBuildId, type WorkerVersion } from '../../src/config';
import type { CycleInput, CycleResult } from '../../src/domain/cycle';
import {
  deploymentStatus,
  makeCurrent,
  type DeploymentStatus,
  type RoutingChange,
} from '../../src/operations/deployment';
import { clientError, runClient } from '../support/cli';
import { insertDocuments, outbox } from '../support/data';
import { startEntryProcess } from '../support/processes';
import { closeClaimGate, placement, type Placement } from '../support/placement';
import { waitFor } from '../support/wait';
import { testDeployment } from '../support/deployments';
import { useIntegration } from '../support/harness';
import { productionOnlyTest } from '../support/profile';

const ROOT = path.resolve(__dirname, '..', '..');
const AS_OF_DATE = '2026-09-02';
const OWNERS = 120;

const stack = useIntegration('worker-versioning', { client: true });

type Target = Parameters<typeof makeCurrent>[1];

/** One version's workers, `count` of them, identities `version-<buildId>-<i>`. */
async function startVersion(taskQueue: string, version: WorkerVersion, count: number): Promise<void> {
  for (let i = 1; i <= count; i += 1) {
    await stack.startWorker({ taskQueue, identity: `version-${version.buildId}-${i}`, version });
  }
}

/** A task queue and deployment of the test's own, N's workers polling, N current; N+1 named. */
async function versionN(workers = 1) {
  const { taskQueue, target, n, next } = testDeployment(stack);
  await startVersion(taskQueue, n, workers);
  await makeCurrent(stack.client, target, n.buildId, { waitForPollersMs: 30_000 });
  return { taskQueue, target, n, next };
}

/** Due documents of `owners` new owners, as of the tests' day. */
const seedOwners = (owners: number) =>
  insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: owners }, (_, i) => ({ daysLeft: i % 8 })),
  );

/**
 * Starts a cycle on `taskQueue`, holds its claims at a gate, runs `whileOpen` (which starts workers and makes
 * `switchTo` current), checks the cycle is still open and its version still has it, lets it go, and returns
 * it once it ended, with where it ran.
 */
async function cycleAcrossSwitch(
  taskQueue: string,
  target: Target,
  switchTo: string,
  options: { input?: CycleInput; beforeSwitch?: () => Promise<void> } = {},
) {
  const gate = await closeClaimGate(stack.db.admin);
  try {
    const handle = await stack.startCycle({ asOf: AS_OF_DATE, ...options.input }, { taskQueue });
    // A claim waits at the gate: the cycle is open, on the version that started it.
    await gate.waiting();
    await options.beforeSwitch?.();
    const change = await makeCurrent(stack.client, target, switchTo, { waitForPollersMs: 30_000 });
    expect(change.current).toBe(switchTo);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    const status = await deploymentStatus(stack.client, target);
    expect(status.versions.find((v) => v.buildId !== switchTo)?.openCycles).toBeGreaterThan(0);
    await gate.open();
    const result: CycleResult = await handle.result();
    return { handle, result, placed: await placement(stack.client, handle) };
  } finally {
    await gate.open();
  }
}

/** The cycle reminded `owners` owners, and the outbox holds one event per owner of every cycle so far, `total`. */
async function expectCountsEqualOutbox(result: CycleResult, owners: number, total = owners): Promise<void> {
  expect(result).toEqual(
    expect.objectContaining({ status: 'completed', remindersSent: owners, ownersNotified: owners }),
  );
  const events = await outbox(stack.db.admin);
  expect(events).toHaveLength(total);
  expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(total);
}

/** A new cycle of `owners` new owners on `taskQueue`, to its end, with where it ran. */
async function nextCycle(taskQueue: string, owners: number, total: number) {
  await seedOwners(owners);
  const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue });
  await expectCountsEqualOutbox(await handle.result(), owners, total);
  return placement(stack.client, handle);
}

/** Every workflow task on `buildId`, every activity on one of its `workers` workers. */
function expectRanOn(placed: Placement, buildId: string, workers = 1): void {
  expect(placed.workflowTaskBuildIds).toEqual(new Set([buildId]));
  const own = Array.from({ length: workers }, (_, i) => `version-${buildId}-${i + 1}`);
  expect([...placed.activityIdentities].filter((id) => !own.includes(id))).toEqual([]);
  expect(placed.activities).toBeGreaterThan(0);
}

test('a cycle started on version N ends on N while N+1 is made current; the next cycle runs on N+1', async () => {
  const { taskQueue, target, n, next } = await versionN();
  await startVersion(taskQueue, next, 1);
  await seedOwners(OWNERS);

  const { result, placed } = await cycleAcrossSwitch(taskQueue, target, next.buildId, {
    input: { partitions: 2, batchSize: 5 },
  });

  expectRanOn(placed, n.buildId);
  expect(placed.workflows).toBe(3);
  await expectCountsEqualOutbox(result, OWNERS);
  expectRanOn(await nextCycle(taskQueue, 10, OWNERS + 10), next.buildId);
});

test('a rollback (N+1 back to N) is one command: the open cycle ends on N+1, its continued runs too, the next runs on N', async () => {
  const { taskQueue, target, n, next } = await versionN();
  await startVersion(taskQueue, next, 1);
  await makeCurrent(stack.client, target, next.buildId, { waitForPollersMs: 30_000 });
  await seedOwners(OWNERS);

  // A short history bound: the partitions continue as new, and their new runs stay pinned too.
  const { result, placed } = await cycleAcrossSwitch(taskQueue, target, n.buildId, {
    input: { partitions: 2, batchSize: 2, pagesPerClaim: 1, maxHistoryEvents: 100 },
  });

  expectRanOn(placed, next.buildId);
  expect(placed.runs).toBeGreaterThan(placed.workflows);
  await expectCountsEqualOutbox(result, OWNERS);
  expectRanOn(await nextCycle(taskQueue, 10, OWNERS + 10), n.buildId);
  expect((await deploymentStatus(stack.client, target)).current).toBe(n.buildId);
  // Visibility catches up with the closes shortly after.
  await waitFor(async () => (await deploymentStatus(stack.client, target)).versions.every((v) => v.openCycles === 0));
});

productionOnlyTest(
  "the rolling deploy drill: N's two workers run a 20,000-owner cycle, N+1's two start and are made current mid-cycle; it ends on N, the next on N+1; then the rollback",
  async () => {
    const owners = 20_000;
    const { taskQueue, target, n, next } = await versionN(2);
    await seedOwners(owners);

    const deploy = await cycleAcrossSwitch(taskQueue, target, next.buildId, {
      beforeSwitch: () => startVersion(taskQueue, next, 2),
    });
    // Only N's workers ran it, none of N+1's. Which of N's two took its activities is the server's choice: a
    // cycle's workflow tasks stick to one worker and its activities start eagerly there, and with claims of
    // up to 5 s a 20,000-owner day is a handful of them, so one worker may take them all.
    expectRanOn(deploy.placed, n.buildId, 2);
    expect(deploy.placed.workflows).toBeGreaterThan(1);
    await expectCountsEqualOutbox(deploy.result, owners);
    expectRanOn(await nextCycle(taskQueue, 100, owners + 100), next.buildId, 2);

    // The rollback, the same way: a cycle open on N+1 when N is made current again.
    await seedOwners(1_000);
    const rollback = await cycleAcrossSwitch(taskQueue, target, n.buildId);
    expectRanOn(rollback.placed, next.buildId, 2);
    await expectCountsEqualOutbox(rollback.result, 1_000, owners + 1_100);
    expectRanOn(await nextCycle(taskQueue, 100, owners + 1_200), n.buildId, 2);
  },
  600_000,
);

test("npm run worker declares its checkout as its version; the client refuses a version without workers, makes the checkout's own current without being told it, and it runs the cycle", async () => {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const deploymentName = `test-${crypto.randomUUID().slice(0, 8)}`;
  stack.trackTaskQueue(taskQueue);
  const target = { temporal: { ...stack.config.temporal, taskQueue, deploymentName } };
  await seedOwners(OWNERS);
  const buildId = checkoutBuildId(ROOT);
  expect(buildId).toMatch(/^[0-9a-f]{12}(-dirty-[0-9a-f]{8})?$/);
  const worker = await startEntryProcess({
    root: ROOT,
    entry: 'worker',
    env: {
      DATABASE_URL: stack.db.workerUrl,
      TEMPORAL_TASK_QUEUE: taskQueue,
      TEMPORAL_DEPLOYMENT_NAME: deploymentName,
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    },
    ready: 'worker started',
    unset: ['TEMPORAL_WORKER_BUILD_ID'],
  });
  try {
    expect(worker.output.join('')).toContain(`"buildId":"${buildId}"`);
    // An operator's shell in the same checkout, where no build set TEMPORAL_WORKER_BUILD_ID.
    const { buildId: _unset, ...shell } = target.temporal;
    const operator = () => ({ ...stack.config, temporal: shell });
    expect((await clientError(operator, ['deployment', 'current', 'no-such-build', '--wait', '0'])).message).toMatch(
      /version no-such-build of deployment test-\w+ has no workers polling task queue/,
    );
    expect((await clientError(operator, ['deployment', 'ramp', 'no-such-build', '10'])).message).toMatch(
      /has no workers polling/,
    );
    // No argument: the build id a worker started here takes (this checkout's commit, as the worker's log says),
    // its first poll waited for, as a deploy that just started the worker needs.
    const { output: made } = await runClient<RoutingChange>(operator, ['deployment', 'current']);
    expect(made).toEqual(expect.objectContaining({ previous: { current: null, ramping: null }, current: buildId }));
    const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue });
    await expectCountsEqualOutbox(await handle.result(), OWNERS);
    const placed = await placement(stack.client, handle);
    expect(placed.workflowTaskBuildIds).toEqual(new Set([buildId]));
    const described = await handle.describe();
    expect(described.raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(1); // VERSIONING_BEHAVIOR_PINNED
    // Visibility catches up with the close shortly after.
    await waitFor(async () => (await deploymentStatus(stack.client, target)).versions.every((v) => v.openCycles === 0));
    const { output: status } = await runClient<DeploymentStatus>(operator, ['deployment', 'status']);
    expect(status).toEqual(
      expect.objectContaining({ deploymentName, taskQueue, current: buildId, ramping: null, unversionedOpenCycles: 0 }),
    );
    expect(status.versions).toEqual([expect.objectContaining({ buildId, status: 'current', openCycles: 0 })]);
  } finally {
    expect(await worker.stop()).toBe(0);
  }
});
