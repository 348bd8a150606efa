/**
 * Partitions (docs/DESIGN.md#partitions), run by the real workflow code against stub activities on
 * Temporal's time-skipping test server: a big day's claims split into child workflows over id ranges, their
 * results summed into the cycle's, one prune; a small day is the same road's single partition in the
 * cycle's own run; nothing due skips the claims; a cancel reaches every partition; a failing partition fails
 * the cycle, named.
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { ClaimPageInput, PruneInput, RemindOwnersInput } from '../../src/activities';
import { cycleEnvPerFile, eventNames, withCycle, type HistoryEvent } from './support/cycle-env';
import { callsOf, holdUntil, ownerId, owners } from './support/stub-activities';

const cycle = cycleEnvPerFile();

/** The child workflows a cycle's history started, by workflow id. */
function childIds(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const id = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    return id ? [id] : [];
  });
}

test('a big day runs as partitions over id ranges, each its own workflow; the cycle sums them and prunes once', async () => {
  await withCycle(
    cycle(),
    {
      pages: [],
      plan: { due: 60_000, partitions: 3 },
      // Partition 1 reads two pages, 2 one, 3 three; owner 1 has documents in every partition.
      partitionPages: [
        [owners(1, 4), owners(10, 3)],
        [[ownerId(1), ...owners(20, 2)]],
        [[ownerId(1), ...owners(30, 3)], [ownerId(40), ownerId(41)], [ownerId(42)]],
      ],
    },
    {},
    async ({ handle, calls, histories }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', partitions: 3, pages: 6, ownersProcessed: 17, runs: 1 }),
      );
      expect(result.remindersSent).toBe(17);
      expect(result.documentsSeen).toBe(34);

      // One activity reads a partition's pages and claims their owners, up to 8 pages in a row; no owner
      // group of their own.
      const pageCalls = callsOf(calls, 'claimPage').map((c) => c.input as ClaimPageInput);
      expect(callsOf(calls, 'remindOwners')).toHaveLength(0);
      expect(pageCalls.map((p) => [p.partition.index, p.page, p.pages]).sort()).toEqual([
        [0, 1, 64],
        [1, 1, 64],
        [2, 1, 64],
      ]);
      expect(pageCalls.every((p) => p.partition.count === 3 && p.jobRunId === handle.workflowId)).toBe(true);
      // Each partition keys its scan positions by its own first run id.
      expect(new Set(pageCalls.map((p) => p.cycleId)).size).toBe(3);

      const [{ events }] = await histories();
      expect(childIds(events)).toEqual([1, 2, 3].map((i) => `${handle.workflowId}/partition-${i}-of-3`));
      const prunes = callsOf(calls, 'pruneReminders');
      expect(prunes).toHaveLength(1);
      expect(new Set((prunes[0].input as PruneInput).partitionIds)).toEqual(new Set(pageCalls.map((p) => p.cycleId)));
      expect(callsOf(calls, 'planPartitions')).toHaveLength(1);
    },
  );
});

test('an activity that claims fewer pages than asked is followed by one from the page after its last', async () => {
  await withCycle(
    cycle(),
    {
      pages: [],
      plan: { due: 60_000, partitions: 2 },
      partitionPages: [
        [owners(1, 2), owners(10, 2), owners(20, 2), owners(30, 2), owners(40, 2)],
        [owners(50, 1), owners(60, 1), owners(70, 1)],
      ],
      // Its time budget stops each activity after two pages.
      pagesPerClaim: 2,
    },
    {},
    async ({ handle, calls }) => {
      expect(await handle.result()).toEqual(
        expect.objectContaining({ status: 'completed', pages: 8, ownersProcessed: 13, remindersSent: 13 }),
      );
      const pageCalls = callsOf(calls, 'claimPage').map((c) => c.input as ClaimPageInput);
      expect(pageCalls.map((p) => [p.partition.index, p.page]).sort()).toEqual([
        [0, 1],
        [0, 3],
        [0, 5],
        [1, 1],
        [1, 3],
      ]);
    },
  );
});

test('a day with nothing due is planned and ends without a claim', async () => {
  await withCycle(
    cycle(),
    { pages: [owners(1, 3)], plan: { due: 0, partitions: 1 } },
    {},
    async ({ handle, calls }) => {
      expect(await handle.result()).toEqual(
        expect.objectContaining({ status: 'completed', pages: 0, documentsSeen: 0, remindersSent: 0 }),
      );
      expect(callsOf(calls, 'claimPage')).toHaveLength(0);
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
    },
  );
});

test.each([{}, { partitions: 1 }])(
  'a small day (%j) is the single partition {0, 1} of the same road, claimed in the cycle’s own run',
  async (input) => {
    await withCycle(
      cycle(),
      { pages: [owners(1, 3), owners(10, 2), owners(20, 1)], pagesPerClaim: 2 },
      input,
      async ({ handle, calls, histories }) => {
        const result = await handle.result();
        expect(result).toEqual(
          expect.objectContaining({ status: 'completed', pages: 3, ownersProcessed: 6, remindersSent: 6, runs: 1 }),
        );
        expect(result.partitions).toBeUndefined();
        const [{ events }] = await histories();
        expect(childIds(events)).toEqual([]);
        const pageCalls = callsOf(calls, 'claimPage');
        expect(pageCalls.map((c) => c.input as ClaimPageInput)).toEqual([
          expect.objectContaining({ page: 1, pages: 64, partition: { index: 0, count: 1 } }),
          expect.objectContaining({ page: 3, pages: 64, partition: { index: 0, count: 1 } }),
        ]);
        // In the cycle's own run, keyed by its first run id, which its prune deletes.
        expect(new Set(pageCalls.map((c) => c.workflowRunId))).toEqual(new Set([handle.firstExecutionRunId]));
        expect(new Set(pageCalls.map((c) => (c.input as ClaimPageInput).cycleId))).toEqual(
          new Set([handle.firstExecutionRunId]),
        );
        expect(callsOf(calls, 'pruneReminders').map((c) => (c.input as PruneInput).cycleId)).toEqual([
          handle.firstExecutionRunId,
        ]);
        expect(callsOf(calls, 'planPartitions')).toHaveLength('partitions' in input ? 0 : 1);
        expect(callsOf(calls, 'remindOwners')).toHaveLength(0);
      },
    );
  },
);

test('a partition count in the input is taken as it is, without a plan', async () => {
  await withCycle(
    cycle(),
    { pages: [], partitionPages: [[owners(1, 2)], [owners(3, 2)]] },
    { partitions: 2 },
    async ({ handle, calls }) => {
      expect(await handle.result()).toEqual(
        expect.objectContaining({ status: 'completed', partitions: 2, remindersSent: 4 }),
      );
      expect(callsOf(calls, 'planPartitions')).toHaveLength(0);
    },
  );
});

test('a cancel request reaches every partition: each stops and reports, the cycle is cancelled, nothing pruned', async () => {
  let cancelled = false;
  await withCycle(
    cycle(),
    {
      pages: [],
      plan: { due: 100_000, partitions: 2 },
      partitionPages: [
        [owners(1, 2), owners(3, 2), owners(5, 2)],
        [owners(11, 2), owners(13, 2), owners(15, 2)],
      ],
      pagesPerClaim: 1,
      // Every partition's first page waits for the cancel, so neither has finished when it comes.
      onPage: async () => {
        await holdUntil(() => cancelled, 10_000);
      },
    },
    { ownerConcurrency: 2, ownerGroupSize: 2 },
    async ({ handle, calls, histories }) => {
      await holdUntil(() => callsOf(calls, 'claimPage').length >= 2, 10_000);
      await handle.cancel();
      await holdUntil(() => false, 500);
      cancelled = true;
      const result = await handle.result();
      expect(result).toEqual(expect.objectContaining({ status: 'cancelled', partitions: 2, pruned: 0 }));
      // The pages that had started ended and were counted; no page after the cancel.
      expect(result.remindersSent).toBe(callsOf(calls, 'claimPage').length * 2);
      expect(result.pages).toBeLessThan(6);
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(0);
      expect(eventNames((await histories())[0].events)).toContain(
        'REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
      );
    },
  );
});

test('a partition that fails fails the cycle, naming it, after the others have ended; nothing is pruned', async () => {
  await withCycle(
    cycle(),
    {
      pages: [],
      plan: { due: 100_000, partitions: 3 },
      partitionPages: [[owners(1, 2)], [owners(3, 2)], [owners(5, 2)]],
      onPage: (input) => {
        if (input.partition.index === 1) throw new Error('boom: the page statement failed');
      },
    },
    {},
    async ({ handle, calls }) => {
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const message = String((err as WorkflowFailedError).cause?.message);
      expect(message).toContain('1 of 3 partitions failed');
      expect(message).toContain(`partition 2 of 3 (${handle.workflowId}/partition-2-of-3)`);
      // The other partitions ran their owners; the failed cycle does not prune.
      const claimed = callsOf(calls, 'claimPage').filter((c) => (c.input as ClaimPageInput).partition.index !== 1);
      expect(claimed).toHaveLength(2);
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(0);
    },
  );
});

test('a partition continues as new on its own history and keeps its counts', async () => {
  await withCycle(
    cycle(),
    {
      pages: [],
      plan: { due: 100_000, partitions: 2 },
      partitionPages: [Array.from({ length: 16 }, (_, i) => owners(100 + 10 * i, 2)), [owners(1, 2)]],
    },
    // One page per activity, asked in the input: each continuation carries it and is accepted with it.
    { maxHistoryEvents: 60, batchSize: 10, pagesPerClaim: 1 },
    async ({ handle, calls }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', partitions: 2, pages: 17, remindersSent: 34 }),
      );
      const runsOfFirst = new Set(
        callsOf(calls, 'claimPage')
          .filter((c) => (c.input as ClaimPageInput).partition.index === 0)
          .map((c) => c.workflowRunId),
      );
      expect(runsOfFirst.size).toBeGreaterThan(1);
    },
  );
});

test('an owner a partition’s page finds busy is retried by an owner group after the scan, once', async () => {
  const busy = ownerId(3);
  await withCycle(
    cycle(),
    {
      pages: [],
      partitionPages: [[owners(1, 4)], [owners(11, 2)]],
      owner: (id, n) => (id === busy && n === 1 ? 'busy' : 'sent'),
    },
    { partitions: 2 },
    async ({ handle, calls }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', remindersSent: 6, ownersProcessed: 6, ownersBusy: 1 }),
      );
      expect(result.failedOwners).toBe(0);
      const retries = callsOf(calls, 'remindOwners');
      expect(retries.map((c) => (c.input as RemindOwnersInput).ownerUserIds)).toEqual([[busy]]);
      // Keyed by the partition's own chain, as its claims are.
      expect((retries[0].input as RemindOwnersInput).cycleId).toBe(retries[0].workflowRunId);
    },
  );
});
