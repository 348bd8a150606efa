/**
 * Stranded cycles (docs/runbooks/document-expiry-reminder.md, DocumentExpiryReminderStrandedCycles): a cycle is
 * pinned to the version that started it, N+1 here, and N+1's workers stop mid-cycle (a rollback to N that
 * stopped them, a version that crashes at start). The worker's gauge names N+1, and the runbook's two ways
 * out end it with one event per owner: moving it to N with `temporal workflow update-options` (its
 * partitions, pinned children, moved by the same query), or terminating it and running a cycle on N.
 */
import type { CycleResult } from '../../src/domain/cycle';
import { createWorkerMetrics } from '../../src/observability/metrics';
import { makeCurrent } from '../../src/operations/deployment';
import { strandedVersions } from '../../src/temporal/deployment-versions';
import { strandedCyclesRefresher } from '../../src/temporal/stranded-cycles';
import { insertDocuments, outbox } from '../support/data';
import { testDeployment } from '../support/deployments';
import { useIntegration } from '../support/harness';
import { closeClaimGate, placement } from '../support/placement';
import { temporalCli } from '../support/temporal-cli';
import { waitFor } from '../support/wait';

const AS_OF_DATE = '2026-09-02';
const OWNERS = 60;

const stack = useIntegration('stranded_cycles', { client: true });

type Target = Parameters<typeof makeCurrent>[1];

/**
 * N and N+1 polling a task queue of the test's own, N+1 current; a partitioned cycle started on N+1 and, while
 * its first claim waits at a gate, N+1's worker stopped. The claim commits as the worker drains, and the rest
 * of the cycle waits for a worker of N+1. N is made current again, as a rollback does.
 */
async function strandedOnNext() {
  const { taskQueue, deploymentName, target, n, next } = testDeployment(stack);
  await stack.startWorker({ taskQueue, identity: 'version-n', version: n });
  const nextWorker = await stack.startWorker({ taskQueue, identity: 'version-n-plus-1', version: next });
  await makeCurrent(stack.client, target, next.buildId, { waitForPollersMs: 30_000 });
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: OWNERS }, (_, i) => ({ daysLeft: i % 8 })),
  );
  const gate = await closeClaimGate(stack.db.admin);
  const handle = await stack.startCycle(
    { asOf: AS_OF_DATE, partitions: 2, batchSize: 5, pagesPerClaim: 1 },
    { taskQueue },
  );
  try {
    await gate.waiting();
    const stopping = nextWorker.stop();
    await gate.open();
    await stopping;
  } finally {
    await gate.open();
  }
  await makeCurrent(stack.client, target, n.buildId);
  expect((await handle.describe()).status.name).toBe('RUNNING');
  return { handle, target, n, next, deploymentName };
}

/** The outbox holds one event per owner, whatever cycle sent it. */
async function expectOneEventPerOwner(): Promise<void> {
  const events = await outbox(stack.db.admin);
  expect(events).toHaveLength(OWNERS);
  expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(OWNERS);
}

/** Waits until N+1 counts as stranded (its worker's last poll older than `goneAfterMs`), and returns the reading. */
async function waitStranded(target: Target, buildId: string, goneAfterMs = 3_000) {
  let stranded: Awaited<ReturnType<typeof strandedVersions>> = [];
  await waitFor(async () => {
    stranded = await strandedVersions(stack.client, target, goneAfterMs);
    return stranded.some((v) => v.buildId === buildId);
  }, 90_000);
  return stranded;
}

const versionQuery = (deploymentName: string, buildId: string) =>
  `TemporalWorkerDeploymentVersion = "${deploymentName}:${buildId}" AND ExecutionStatus = "Running"`;

test("a cycle left on a version whose workers stopped shows in the worker's stranded-cycles gauge; moved to N with update-options, it ends there, one event per owner", async () => {
  const { handle, target, n, next, deploymentName } = await strandedOnNext();

  expect(await waitStranded(target, next.buildId)).toEqual([{ buildId: next.buildId, openCycles: 1 }]);
  // What the worker exports: the same reading, labelled by build id.
  const metrics = createWorkerMetrics([0]);
  await strandedCyclesRefresher(() => stack.client, target, metrics, { intervalMs: 0, goneAfterMs: 3_000 }).now();
  expect((await metrics.strandedCycles.get()).values).toEqual([
    expect.objectContaining({ labels: { build_id: next.buildId }, value: 1 }),
  ]);
  expect((await metrics.strandedRefreshErrors.get()).values[0]?.value ?? 0).toBe(0);

  // The runbook's way out: the cycle and its open partitions, all pinned to N+1, moved to N by one query.
  await temporalCli(
    'workflow',
    'update-options',
    '--query',
    versionQuery(deploymentName, next.buildId),
    '--versioning-override-behavior',
    'pinned',
    '--versioning-override-deployment-name',
    deploymentName,
    '--versioning-override-build-id',
    n.buildId,
    '--reason',
    'INC-1: N+1 has no workers',
    '--yes',
  );
  const result: CycleResult = await handle.result();
  expect(result).toEqual(expect.objectContaining({ status: 'completed', ownersNotified: OWNERS }));
  await expectOneEventPerOwner();
  const placed = await placement(stack.client, handle);
  expect(placed.workflowTaskBuildIds).toEqual(new Set([next.buildId, n.buildId]));
  const described = await handle.describe();
  expect(described.raw.workflowExecutionInfo?.versioningInfo?.versioningOverride?.pinnedVersion).toMatch(
    new RegExp(`${n.buildId}$`),
  );
  // Nothing stranded once it ended (visibility catches up shortly after the close).
  await waitFor(async () => (await strandedVersions(stack.client, target, 3_000)).length === 0);
  await strandedCyclesRefresher(() => stack.client, target, metrics, { intervalMs: 0, goneAfterMs: 3_000 }).now();
  expect((await metrics.strandedCycles.get()).values).toEqual([]);
});

test('the other way out: the stranded cycle terminated and a cycle run on N; the ledger sends each owner one event', async () => {
  const { target, next, deploymentName } = await strandedOnNext();
  await waitStranded(target, next.buildId);
  await temporalCli(
    'workflow',
    'terminate',
    '--query',
    versionQuery(deploymentName, next.buildId),
    '--reason',
    'INC-2: N+1 has no workers',
    '--yes',
  );
  await waitFor(async () => (await strandedVersions(stack.client, target, 3_000)).length === 0);

  const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue: target.temporal.taskQueue });
  const result: CycleResult = await handle.result();
  expect(result.status).toBe('completed');
  // The terminated cycle's first claim had committed: the new one sends the rest, and nothing twice.
  expect(result.ownersNotified).toBeGreaterThan(0);
  expect(result.ownersNotified).toBeLessThan(OWNERS);
  await expectOneEventPerOwner();
});
