/**
 * Partitions against real PostgreSQL and Temporal (docs/DESIGN.md#partitions): an owner whose documents fall
 * in every partition gets one event with all of them; the cycle's counts equal the outbox; the plan splits a
 * big day and leaves a small one alone; and with two workers polling, both run the partitions' groups.
 */
import crypto from 'node:crypto';
import type { Client } from '@temporalio/client';
import { idRanges } from '../../src/db/candidates';
import type { CycleResult } from '../../src/domain/cycle';
import type { CycleStatusRow } from '../../src/operations/cycles';
import { clientError, runClient } from '../support/cli';
import { insertDocuments, outbox } from '../support/data';
import { useIntegration } from '../support/harness';
import { testConfig } from '../support/stack';
import { waitFor } from '../support/wait';

const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('cycle-partitions', {
  worker: 'test',
  // Partitions of 10 due documents, at most 4: the plan splits these tests' days.
  config: () => testConfig({ REMINDER_PARTITIONS: '4', REMINDER_PARTITION_SIZE: '10' }),
});

/** A document id inside partition `index` of `count` (ids are split into equal ranges of the UUID space). */
function idIn(index: number, count: number): string {
  const [from] = idRanges(count)[index];
  return `${from.slice(0, 9)}${crypto.randomUUID().slice(9)}`;
}

/** The cycle's workflow ids of its partitions, from the cycle's history. */
async function partitionIds(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const id = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    return id ? [id] : [];
  });
}

test('an owner with documents in every partition gets one event listing all of them; counts equal the outbox', async () => {
  const owner = crypto.randomUUID();
  const days = [0, 1, 7, 30];
  const own = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    days.map((daysLeft, i) => ({ id: idIn(i, 4), ownerUserId: owner, daysLeft })),
  );
  const others = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 60 }, (_, i) => ({ daysLeft: i % 9 })),
  );

  const handle = await stack.startCycle({ asOf: AS_OF_DATE, batchSize: 5, ownerGroupSize: 3 });
  const result = await handle.result();

  expect(result).toEqual(expect.objectContaining({ status: 'completed', partitions: 4, failedOwners: 0 }));
  const rows = await outbox(stack.db.admin);
  const mine = rows.filter((r) => r.aggregate_id === owner);
  expect(mine).toHaveLength(1);
  expect(mine[0].payload.documents.map((d) => d.documentId).sort()).toEqual(own.map((d) => d.id).sort());
  expect(mine[0].correlation_id).toBe(handle.workflowId);
  // One event per owner, every due document once; the result says what the outbox holds.
  expect(rows).toHaveLength(others.length + 1);
  expect(result.ownersNotified).toBe(rows.length);
  expect(result.remindersSent).toBe(rows.reduce((n, r) => n + r.payload.documents.length, 0));
  expect(await partitionIds(stack.client, handle.workflowId)).toEqual(
    [1, 2, 3, 4].map((i) => `${handle.workflowId}/partition-${i}-of-4`),
  );
  // The partitions' scan positions went with the cycle's prune.
  const { rows: positions } = await stack.db.admin.query(
    'select count(*)::int as n from profile.document_expiry_reminder_scan_positions',
  );
  expect(positions[0].n).toBe(0);
});

test('the plan leaves a small day alone and a day with nothing due unscanned', async () => {
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 3 }, { daysLeft: 45 }]);
  const handle = await stack.startCycle({ asOf: AS_OF_DATE });
  const small = await handle.result();
  expect(small).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 1, pages: 1 }));
  expect(small.partitions).toBeUndefined();
  expect(await partitionIds(stack.client, handle.workflowId)).toEqual([]);

  const idle = await stack.cycle({ asOf: AS_OF_DATE });
  expect(idle).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 0, pages: 0 }));
  expect(await outbox(stack.db.admin)).toHaveLength(1);
});

test('with two workers polling, each claims a share of the partitions’ pages', async () => {
  const taskQueue = `test-${crypto.randomUUID()}`;
  await stack.startWorker({ taskQueue, identity: 'worker-a' });
  await stack.startWorker({ taskQueue, identity: 'worker-b' });
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 400 }, (_, i) => ({ daysLeft: i % 8 })),
  );

  // One page per activity: the spread is counted in activities, and 40 of them show it where 8 would not.
  const handle = await stack.startCycle(
    { asOf: AS_OF_DATE, ownerGroupSize: 5, batchSize: 10, pagesPerClaim: 1 },
    { taskQueue },
  );
  const result = await handle.result();
  expect(result).toEqual(expect.objectContaining({ status: 'completed', partitions: 4, remindersSent: 400 }));

  const groupsBy = new Map<string, number>();
  for (const id of await partitionIds(stack.client, handle.workflowId)) {
    const history = await stack.client.workflow.getHandle(id).fetchHistory();
    const events = history.events ?? [];
    const types = new Map(
      events.flatMap((e) => {
        const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
        return name ? [[String(e.eventId), name] as const] : [];
      }),
    );
    for (const e of events) {
      const started = e.activityTaskStartedEventAttributes;
      if (started && types.get(String(started.scheduledEventId)) === 'claimPage') {
        groupsBy.set(started.identity ?? '', (groupsBy.get(started.identity ?? '') ?? 0) + 1);
      }
    }
  }
  const total = [...groupsBy.values()].reduce((a, b) => a + b, 0);
  // Four partitions of about 100 documents, in pages of 10.
  expect(total).toBeGreaterThanOrEqual(40);
  expect([...groupsBy.keys()].sort()).toEqual(['worker-a', 'worker-b']);
  for (const n of groupsBy.values()) expect(n / total).toBeGreaterThanOrEqual(0.3);
});

test('the client runs a cycle in a given number of partitions, lists each running partition, and schedules with a count', async () => {
  const config = testConfig({ TEMPORAL_TASK_QUEUE: stack.worker.taskQueue });
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 30 }, (_, i) => ({ daysLeft: i % 8 })),
  );
  const run = await runClient<{ result: CycleResult }>(
    () => config,
    ['cycle', 'run', '--as-of', AS_OF_DATE, '--partitions', '3', '--wait'],
  );
  expect(run.output.result).toEqual(expect.objectContaining({ status: 'completed', partitions: 3, remindersSent: 30 }));
  await expect(clientError(() => config, ['cycle', 'run', '--partitions', '65'])).resolves.toEqual(
    expect.objectContaining({ message: expect.stringContaining('--partitions') }),
  );

  // A slow cycle (pages of one document, one owner at a time) to look at while it runs.
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 300 }, () => ({ daysLeft: 1 })),
  );
  const slow = await stack.startCycle({
    asOf: AS_OF_DATE,
    partitions: 2,
    batchSize: 1,
    ownerConcurrency: 1,
    ownerGroupSize: 1,
  });
  let rows: CycleStatusRow[] = [];
  await waitFor(async () => {
    rows = (await runClient<CycleStatusRow[]>(() => config, ['cycle', 'status'])).output;
    return (rows.find((r) => r.workflowId === slow.workflowId)?.progress?.running?.length ?? 0) > 0;
  }, 20_000);
  const row = rows.find((r) => r.workflowId === slow.workflowId)!;
  expect(row.status).toBe('RUNNING');
  expect(row.progress).toEqual(expect.objectContaining({ partitions: 2 }));
  expect(row.progress!.running!.map((p) => p.workflowId)).toEqual(
    expect.arrayContaining([expect.stringMatching(new RegExp(`^${slow.workflowId}/partition-[12]-of-2$`))]),
  );
  await slow.cancel();
  expect(await slow.result()).toEqual(expect.objectContaining({ status: 'cancelled', partitions: 2 }));

  const scheduleId = `partitions-${crypto.randomBytes(4).toString('hex')}`;
  stack.trackSchedule(scheduleId);
  await runClient(() => config, ['--schedule-id', scheduleId, 'schedule', 'apply', '--partitions', '2']);
  const described = await stack.client.schedule.getHandle(scheduleId).describe();
  expect(described.action).toEqual(expect.objectContaining({ args: [{ partitions: 2 }] }));
});
