/**
 * The cycle beyond the seed's table: both resolutions (docs/DESIGN.md#resolutions), continue-as-new, owners split across
 * pages, the time limit, failing owners and invalid input.
 */
import crypto from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { addDays } from '../../src/domain/dates';
import { insertDocuments, markers, outbox, rejectOwner } from '../support/data';
import { historyEventTypes } from '../support/history';
import type { CycleInput } from '../../src/domain/cycle';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('cycle-edges', { worker: 'test' });

const cycle = (input: CycleInput = {}) => stack.cycle({ asOf: AS_OF_DATE, ...input });

test('resolution 1: a document expired 120 days ago and still active is never reminded', async () => {
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: -120 }, { daysLeft: -91 }]);

  for (const day of [0, 1, 30]) {
    const result = await cycle({ asOf: addDays(AS_OF_DATE, day) });
    expect(result).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 0, documentsSeen: 0 }));
  }
  expect(await markers(stack.db.admin)).toEqual([]);
  expect(await outbox(stack.db.admin)).toEqual([]);
});

test('resolution 2: after adding 14, a document 5 days out that was reminded at 7 gets nothing', async () => {
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }]);
  expect((await cycle()).remindersSent).toBe(1);

  const later = await cycle({ asOf: addDays(AS_OF_DATE, 2), thresholdsDays: [30, 14, 7, 1, 0] });

  expect(later.remindersSent).toBe(0);
  expect(await outbox(stack.db.admin)).toHaveLength(1);
  expect((await markers(stack.db.admin)).map((m) => m.threshold_days)).toEqual([30, 7]);
  expect((await outbox(stack.db.admin))[0].payload.documents[0]).toEqual(
    expect.objectContaining({ documentId: doc.id, thresholdDays: 7 }),
  );
});

test('a cycle over more owners than one run may hold continues as new and keeps its totals', async () => {
  const docs = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 40 }, (_, i) => ({ daysLeft: i % 8 })),
  );

  // A claim per page: eleven claims, more than a run of 60 events holds.
  const handle = await stack.startCycle({
    asOf: AS_OF_DATE,
    batchSize: 4,
    maxHistoryEvents: 60,
    pagesPerClaim: 1,
  });
  const result = await handle.result();

  expect(result).toEqual(
    expect.objectContaining({
      status: 'completed',
      remindersSent: 40,
      ownersNotified: 40,
      ownersProcessed: 40,
      documentsSeen: 40,
      failedOwners: 0,
    }),
  );
  expect(result.runs).toBeGreaterThan(1);
  expect(result.pages).toBe(11);
  const firstRun = await historyEventTypes(handle, handle.firstExecutionRunId);
  expect(firstRun[firstRun.length - 1]).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
  expect(firstRun.length).toBeLessThanOrEqual(60 + 4 * 6);
  expect(await outbox(stack.db.admin)).toHaveLength(docs.length);
});

test('an owner whose documents land on different pages gets one event per cycle', async () => {
  const owner = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owner, daysLeft: 1 },
    { daysLeft: 2 },
    { daysLeft: 3 },
    { ownerUserId: owner, daysLeft: 4 },
    { daysLeft: 5 },
    { ownerUserId: owner, daysLeft: 25 },
  ]);

  const result = await cycle({ batchSize: 2 });

  expect(result).toEqual(expect.objectContaining({ remindersSent: 6, ownersNotified: 4 }));
  const rows = (await outbox(stack.db.admin)).filter((r) => r.aggregate_id === owner);
  expect(rows).toHaveLength(1);
  expect(rows[0].payload.documents.map((d) => d.daysLeft)).toEqual([1, 4, 25]);
});

test('the time limit ends the cycle as time-limit and the next cycle reminds the rest, nobody twice', async () => {
  const docs = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 3_000 }, () => ({ daysLeft: 1 })),
  );

  // A claim per page, 60 pages of 50 owners one at a time: more than a quiet machine claims in 700 ms (300
  // documents were, once), and the time limit is seen between claims.
  const limited = await cycle({ ownerConcurrency: 1, batchSize: 50, maxRunDurationMs: 700, pagesPerClaim: 1 });

  expect(limited.status).toBe('time-limit');
  expect(limited.remindersSent).toBeLessThan(docs.length);
  expect(await outbox(stack.db.admin)).toHaveLength(limited.remindersSent);

  const rest = await cycle({ ownerConcurrency: 50 });
  expect(rest.status).toBe('completed');
  expect(limited.remindersSent + rest.remindersSent).toBe(docs.length);
  const rows = await outbox(stack.db.admin);
  expect(new Set(rows.map((r) => r.aggregate_id)).size).toBe(docs.length);
  expect(rows).toHaveLength(docs.length);
});

test('an owner that still fails after its retries is counted and the others are reminded', async () => {
  const bad = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: bad, daysLeft: 7 },
    { daysLeft: 7 },
    { daysLeft: 0 },
  ]);
  const undoReject = await rejectOwner(stack.db.admin, bad);
  try {
    const result = await cycle();

    expect(result).toEqual(
      expect.objectContaining({ status: 'completed', failedOwners: 1, remindersSent: 2, ownersNotified: 2 }),
    );
    const rows = await outbox(stack.db.admin);
    expect(rows.map((r) => r.aggregate_id)).not.toContain(bad);
    expect((await markers(stack.db.admin)).map((m) => m.owner_user_id)).not.toContain(bad);
  } finally {
    await undoReject();
  }
});

test('invalid cycle input fails the cycle at once with a message naming the field', async () => {
  const handle = await stack.startCycle({ thresholdsDays: [7, 30], batchSize: 0 });

  const err = await handle.result().catch((e: unknown) => e);

  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause?.cause as Error & { type?: string; nonRetryable?: boolean };
  expect(cause.type).toBe('InvalidCycleInput');
  expect(cause.message).toContain('thresholdsDays=[7,30]: thresholds must be sorted in descending order');
  expect(cause.message).toContain('batchSize=0');
  expect(await outbox(stack.db.admin)).toEqual([]);
});
