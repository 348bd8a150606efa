/**
 * Pinned cycles (docs/SAFE-DEPLOYS.md): two versions of the worker, N and N+1, poll one task queue; a cycle
 * started on N runs every workflow task and activity of its own and of its partitions on N's workers while N+1
 * is made current, and the next cycle starts on N+1. A rollback is the same command back, and pins the same way.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { checkoutBuildId, type WorkerVersion } from '../../src/config';
import type { CycleResult } from '../../src/domain/cycle';
import { deploymentStatus, makeCurrent } from '../../src/operations/deployment';
import { insertDocuments, outbox } from '../support/data';
import { startEntryProcess } from '../support/processes';
import { closeClaimGate, placement, type Placement } from '../support/placement';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const ROOT = path.resolve(__dirname, '..', '..');
const AS_OF_DATE = '2026-09-02';
const OWNERS = 120;

const stack = useIntegration('worker-versioning', { client: true });

/** Two versions of one deployment polling one task queue, `n` current. */
async function twoVersions() {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const deploymentName = `test-${crypto.randomUUID().slice(0, 8)}`;
  stack.trackTaskQueue(taskQueue);
  const target = { temporal: { ...stack.config.temporal, taskQueue, deploymentName } };
  const n: WorkerVersion = { deploymentName, buildId: 'n' };
  const next: WorkerVersion = { deploymentName, buildId: 'n-plus-1' };
  await stack.startWorker({ taskQueue, identity: 'version-n', version: n });
  await stack.startWorker({ taskQueue, identity: 'version-n-plus-1', version: next });
  await makeCurrent(stack.client, target, n.buildId, { waitForPollersMs: 30_000 });
  return { taskQueue, target, n, next };
}

const identityOf = (buildId: string) => (buildId === 'n' ? 'version-n' : 'version-n-plus-1');

/**
 * Starts a partitioned cycle on `taskQueue`, waits until its claims have started, makes `switchTo` current while it
 * is open, and returns it once it ended, with where it ran.
 */
async function cycleAcrossSwitch(taskQueue: string, target: Parameters<typeof makeCurrent>[1], switchTo: string) {
  const gate = await closeClaimGate(stack.db.admin);
  try {
    const handle = await stack.startCycle({ asOf: AS_OF_DATE, partitions: 2, batchSize: 5 }, { taskQueue });
    // A claim waits at the gate: the cycle is open, on the version that started it.
    await gate.waiting();
    const change = await makeCurrent(stack.client, target, switchTo);
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

async function expectCountsEqualOutbox(result: CycleResult): Promise<void> {
  const events = await outbox(stack.db.admin);
  expect(result).toEqual(
    expect.objectContaining({ status: 'completed', remindersSent: OWNERS, ownersNotified: OWNERS }),
  );
  expect(events).toHaveLength(OWNERS);
  expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(OWNERS);
}

/** A new cycle on `taskQueue`, to its end, with where it ran. */
async function nextCycle(taskQueue: string) {
  const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue });
  await handle.result();
  return placement(stack.client, handle);
}

async function expectRanOn(placed: Placement, buildId: string): Promise<void> {
  expect(placed.workflowTaskBuildIds).toEqual(new Set([buildId]));
  expect(placed.activityIdentities).toEqual(new Set([identityOf(buildId)]));
  expect(placed.activities).toBeGreaterThan(0);
}

beforeEach(async () => {
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: OWNERS }, (_, i) => ({ daysLeft: i % 8 })),
  );
});

test('a cycle started on version N ends on N while N+1 is made current; the next cycle runs on N+1', async () => {
  const { taskQueue, target, n, next } = await twoVersions();

  const { result, placed } = await cycleAcrossSwitch(taskQueue, target, next.buildId);

  await expectRanOn(placed, n.buildId);
  expect(placed.workflows).toBe(3);
  await expectCountsEqualOutbox(result);
  await expectRanOn(await nextCycle(taskQueue), next.buildId);
});

test('a rollback (N+1 back to N) is one command: the open cycle ends on N+1, the next runs on N', async () => {
  const { taskQueue, target, n, next } = await twoVersions();
  await makeCurrent(stack.client, target, next.buildId, { waitForPollersMs: 30_000 });

  const { result, placed } = await cycleAcrossSwitch(taskQueue, target, n.buildId);

  await expectRanOn(placed, next.buildId);
  await expectCountsEqualOutbox(result);
  await expectRanOn(await nextCycle(taskQueue), n.buildId);
  expect((await deploymentStatus(stack.client, target)).current).toBe(n.buildId);
  // Visibility catches up with the closes shortly after.
  await waitFor(async () => (await deploymentStatus(stack.client, target)).versions.every((v) => v.openCycles === 0));
});

test('npm run worker declares its checkout as its version; made current, it runs the cycle, and the client refuses a version without workers', async () => {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const deploymentName = `test-${crypto.randomUUID().slice(0, 8)}`;
  stack.trackTaskQueue(taskQueue);
  const target = { temporal: { ...stack.config.temporal, taskQueue, deploymentName } };
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
    await expect(makeCurrent(stack.client, target, 'no-such-build')).rejects.toThrow(
      /has no workers polling task queue/,
    );
    await makeCurrent(stack.client, target, buildId!, { waitForPollersMs: 30_000 });
    const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue });
    await expectCountsEqualOutbox(await handle.result());
    const placed = await placement(stack.client, handle);
    expect(placed.workflowTaskBuildIds).toEqual(new Set([buildId]));
    const described = await handle.describe();
    expect(described.raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(1); // VERSIONING_BEHAVIOR_PINNED
  } finally {
    expect(await worker.stop()).toBe(0);
  }
});
