/**
 * The first versioned deploy (docs/SAFE-DEPLOYS.md): the last unversioned release's workers (`e4cc916`,
 * exported from git, with its own workflow bundle) are unversioned; this release's declare a version. Both poll
 * one task queue, as during the rollout. No version is current yet, so every cycle (the one open and any new
 * one) runs on the unversioned workers; `deployment current` refuses while an unversioned cycle is open, since
 * Temporal would move it to the new version at its next task; once it has ended, the release is made current
 * and the next cycle runs on it alone. Nothing is lost and the counts are exact.
 */
import crypto from 'node:crypto';
import { prepareRevision, resolveRevisions } from '../../bench/compare/revisions';
import type { CycleResult } from '../../src/domain/cycle';
import { deploymentStatus, makeCurrent } from '../../src/operations/deployment';
import { insertDocuments, outbox } from '../support/data';
import { closeClaimGate, placement } from '../support/placement';
import { revisionMissing, startEntryProcess } from '../support/processes';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';
const FIRST_DAY_OWNERS = 120;
const NEXT_OWNERS = 40;
const RELEASE = 'this-release';

/**
 * The last release whose workers declared no version (issue 36 made them versioned after it): the release a first
 * versioned deploy replaces. Fixed, not `bench/compare-base`, which moves with every landing.
 */
const LAST_UNVERSIONED = 'e4cc9166da80ff47249067d3d88f495699cddeff';

const stack = useIntegration('deploy-mid-cycle', { client: true });

const missing = revisionMissing(LAST_UNVERSIONED, 'the last unversioned release');
if (missing) process.stderr.write(`deploy-mid-cycle: skipped: ${missing}\n`);

const expectCycle = (result: CycleResult, owners: number) =>
  expect(result).toEqual(
    expect.objectContaining({ status: 'completed', remindersSent: owners, ownersNotified: owners }),
  );

/** The rollout's start: the last unversioned release's worker and this release's on one queue, a day seeded. */
async function bothWorkers() {
  const [previous] = resolveRevisions([LAST_UNVERSIONED]);
  prepareRevision(previous, () => {});
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: FIRST_DAY_OWNERS }, (_, i) => ({ daysLeft: i % 8 })),
  );
  const taskQueue = `test-${crypto.randomUUID()}`;
  const deploymentName = `first-deploy-${crypto.randomUUID().slice(0, 8)}`;
  const target = { temporal: { ...stack.config.temporal, taskQueue, deploymentName } };
  stack.trackTaskQueue(taskQueue);
  const old = await startEntryProcess({
    root: previous.dir,
    entry: 'worker',
    env: { DATABASE_URL: stack.db.workerUrl, TEMPORAL_TASK_QUEUE: taskQueue, METRICS_PORT: '0', LOG_LEVEL: 'info' },
    ready: 'worker started',
    // It bundles its own workflow code, not this clone's.
    unset: ['WORKFLOW_BUNDLE_PATH'],
  });
  return { taskQueue, deploymentName, target, old };
}

(missing ? test.skip : test)(
  'the first versioned deploy: an open unversioned cycle ends on the previous workers, making the release current waits for it, the next cycle runs on the release; one event per owner',
  async () => {
    const { taskQueue, deploymentName, target, old } = await bothWorkers();
    let oldStopped = false;
    const gate = await closeClaimGate(stack.db.admin);
    try {
      await stack.startWorker({ taskQueue, identity: RELEASE, version: { deploymentName, buildId: RELEASE } });
      const first = await stack.startCycle({ asOf: AS_OF_DATE, partitions: 2, batchSize: 5 }, { taskQueue });
      await gate.waiting();

      // The operator's step: not while a cycle of the unversioned workers is open.
      await expect(makeCurrent(stack.client, target, RELEASE)).rejects.toThrow(
        /1 cycle\(s\) started by unversioned workers are still open/,
      );
      expect(await deploymentStatus(stack.client, target)).toEqual(
        expect.objectContaining({ current: null, unversionedOpenCycles: 1 }),
      );
      await gate.open();
      expectCycle(await first.result(), FIRST_DAY_OWNERS);
      const firstPlaced = await placement(stack.client, first);
      expect(firstPlaced.workflowTaskBuildIds).toEqual(new Set(['(unversioned)']));
      expect(firstPlaced.activityIdentities.has(RELEASE)).toBe(false);
      expect(firstPlaced.workflows).toBe(3);

      // Drained: the release becomes current, and the previous workers may go.
      await waitFor(async () => (await deploymentStatus(stack.client, target)).unversionedOpenCycles === 0);
      expect((await makeCurrent(stack.client, target, RELEASE)).current).toBe(RELEASE);
      await insertDocuments(
        stack.db.admin,
        AS_OF_DATE,
        Array.from({ length: NEXT_OWNERS }, (_, i) => ({ daysLeft: i % 8 })),
      );
      const next = await stack.startCycle({ asOf: AS_OF_DATE, partitions: 2, batchSize: 5 }, { taskQueue });
      expectCycle(await next.result(), NEXT_OWNERS);
      const nextPlaced = await placement(stack.client, next);
      expect(nextPlaced.workflowTaskBuildIds).toEqual(new Set([RELEASE]));
      expect(nextPlaced.activityIdentities).toEqual(new Set([RELEASE]));
      expect(await old.stop()).toBe(0);
      oldStopped = true;

      const events = await outbox(stack.db.admin);
      expect(events).toHaveLength(FIRST_DAY_OWNERS + NEXT_OWNERS);
      expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(FIRST_DAY_OWNERS + NEXT_OWNERS);
    } finally {
      await gate.open();
      if (!oldStopped) await old.stop();
    }
  },
);

(missing ? test.skip : test)(
  "the first versioned deploy's other way out: the open unversioned cycle terminated mid-claim, the release made current at once, a cycle on it finishes the day; one event per owner",
  async () => {
    const { taskQueue, deploymentName, target, old } = await bothWorkers();
    const gate = await closeClaimGate(stack.db.admin);
    try {
      await stack.startWorker({ taskQueue, identity: RELEASE, version: { deploymentName, buildId: RELEASE } });
      const first = await stack.startCycle({ asOf: AS_OF_DATE, partitions: 2, batchSize: 5 }, { taskQueue });
      await gate.waiting();

      // The refusal names the way out, and the operator takes it: terminate, then make the release current.
      await expect(makeCurrent(stack.client, target, RELEASE)).rejects.toThrow(/temporal workflow terminate/);
      await first.terminate('first versioned deploy');
      await waitFor(async () => (await deploymentStatus(stack.client, target)).unversionedOpenCycles === 0);
      expect((await makeCurrent(stack.client, target, RELEASE)).current).toBe(RELEASE);
      // The claim the terminated cycle had in flight on the previous worker may still commit.
      await gate.open();

      const next = await stack.startCycle({ asOf: AS_OF_DATE, partitions: 2, batchSize: 5 }, { taskQueue });
      const result = await next.result();
      expect(result.status).toBe('completed');
      const nextPlaced = await placement(stack.client, next);
      expect(nextPlaced.workflowTaskBuildIds).toEqual(new Set([RELEASE]));

      // Every owner reminded once: by the ended cycle's claim that committed, or by the release's cycle.
      await waitFor(async () => (await outbox(stack.db.admin)).length >= FIRST_DAY_OWNERS);
      const events = await outbox(stack.db.admin);
      expect(events).toHaveLength(FIRST_DAY_OWNERS);
      expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(FIRST_DAY_OWNERS);
      expect(events.filter((e) => e.correlation_id === next.workflowId)).toHaveLength(result.ownersNotified);
    } finally {
      await gate.open();
      await old.stop();
    }
  },
);
