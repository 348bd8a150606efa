/**
 * `explain` (issue 30, item 1) on the real stack: the seed's world, a cycle run through Temporal and the
 * relay, then one investor explained — each verdict, the markers with the cycle that wrote them, what the
 * next cycle would send, the outbox rows, and for a document still due after a cycle of its day, what that
 * cycle's history says (the owner busy, or failed) or why it was not read.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config';
import { previewCycleCommand } from '../../src/operations/cycles';
import { explainCommand, explanationText, type Explanation } from '../../src/operations/explain';
import { addDays } from '../../src/domain/dates';
import { holdOwnerLock, insertDocuments, rejectOwner } from '../support/data';
import { testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';
import { stackBrokers, testRelay } from '../support/relay';
import { waitFor } from '../support/wait';

const AS_OF_DATE = '2026-09-02';
// A 1 s idle-in-transaction timeout: an owner still held after a cycle's page gets 2 × 1 s + 10 s of retries.
const stack = useIntegration('explain', {
  worker: 'file',
  relayPoolSize: 2,
  config: () => testConfig({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '1s' }),
});

const explain = (
  target: { ownerUserId: string } | { documentId: string },
  asOfDate = AS_OF_DATE,
  overrides: Record<string, string> = {},
) =>
  explainCommand(
    testConfig({
      DATABASE_URL: stack.db.workerUrl,
      RELAY_DATABASE_URL: stack.db.relayUrl,
      TEMPORAL_TASK_QUEUE: stack.worker.taskQueue,
      ...overrides,
    }),
    target,
    { asOfDate },
  );

const verdicts = (e: Explanation) => Object.fromEntries(e.documents.map((d) => [d.numberMask, [d.verdict, d.why]]));

test('one investor explained: every verdict, the cycle that reminded, the next cycle and the outbox', async () => {
  const owner = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owner, numberMask: 'due-7', daysLeft: 5 },
    { ownerUserId: owner, numberMask: 'far', daysLeft: 45 },
    { ownerUserId: owner, numberMask: 'archived', daysLeft: 3, status: 'Archived' },
    { ownerUserId: owner, numberMask: 'deleted', daysLeft: 3, isDeleted: true },
    { ownerUserId: owner, numberMask: 'never', daysLeft: null },
    { ownerUserId: owner, numberMask: 'long-expired', daysLeft: -400 },
  ]);
  const before = await explain({ ownerUserId: owner });
  expect(before.documents.find((d) => d.numberMask === 'due-7')).toMatchObject({
    verdict: 'due',
    daysLeft: 5,
    currentThreshold: 7,
    thresholdsCrossed: [30, 7],
    why: 'due: the next cycle as of 2026-09-02 reminds it at 7 days (5 days left)',
  });
  expect(before.nextCycle).toEqual([expect.objectContaining({ thresholdDays: 7, daysLeft: 5 })]);

  const result = await stack.cycle({ asOf: AS_OF_DATE });
  expect(result.remindersSent).toBe(1);

  const after = await explain({ ownerUserId: owner });
  const reminded = after.documents.find((d) => d.numberMask === 'due-7')!;
  expect(reminded.verdict).toBe('reminded');
  expect(reminded.why).toMatch(
    new RegExp(
      `^reminded: at 7 days on 2026-09-02 by run [0-9a-f-]{36} of workflow ${result.jobRunId}; the next reminder is at 1 day$`,
    ),
  );
  expect(after.settingsFrom).toEqual({ cycle: { workflowId: result.jobRunId, runId: expect.any(String) } });
  expect(reminded.markers.map((m) => m.thresholdDays)).toEqual([30, 7]);
  expect(reminded.remindedBy).toEqual([{ workflowId: expect.any(String), eventId: expect.any(String) }]);
  expect(verdicts(after)).toMatchObject({
    far: ['not-due', 'not-due: expires in 45 days, and the first threshold is 30 days'],
    archived: ['inactive', 'inactive: its status is Archived, and only active documents are reminded'],
    deleted: ['deleted', 'deleted: a deleted document is never reminded'],
    never: ['no-expiry', 'no-expiry: no expiry date, never reminded'],
    'long-expired': [
      'past-retention',
      'past-retention: expired 400 days before 2026-09-02, more than the retention of 90 days: no longer reminded',
    ],
  });
  expect(after.nextCycle).toEqual([]);
  expect(after.events).toEqual([
    expect.objectContaining({
      eventId: reminded.remindedBy![0].eventId,
      correlationId: reminded.remindedBy![0].workflowId,
      publishedAt: null,
      documents: [{ documentId: reminded.documentId, thresholdDays: 7 }],
    }),
  ]);
  const text = explanationText(after);
  expect(text).toContain(`Owner ${owner}, as of 2026-09-02`);
  expect(text).toContain('The next cycle as of this day sends this owner nothing.');
  expect(text).toContain('waiting to be published');

  // Once the relay published it, the event says where: the partition and offset a consumer finds it at.
  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, brokers: stackBrokers() });
  await relay.start();
  let published: Explanation;
  try {
    await waitFor(async () => {
      published = await explain({ ownerUserId: owner });
      return Array.isArray(published.events) && published.events[0]?.publishedAt !== null;
    }, 30_000);
  } finally {
    await relay.stop();
  }
  expect(published!.events).toEqual([
    expect.objectContaining({ kafka: { partition: expect.any(Number), offset: expect.stringMatching(/^\d+$/) } }),
  ]);
  expect(explanationText(published!)).toMatch(/published \S+ to partition \d+ at offset \d+/);

  // Two days later the document crossed 1 day: due again, at 1.
  const later = await explain({ documentId: reminded.documentId }, addDays(AS_OF_DATE, 4));
  expect(later.documents.map((d) => [d.numberMask, d.verdict, d.currentThreshold])).toEqual([['due-7', 'due', 1]]);
});

test('an owner past the prune cutoff is not reminded again, and explain says why', async () => {
  const owner = crypto.randomUUID();
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owner, numberMask: 'old', daysLeft: -20 },
  ]);
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminder_prune_cutoff (singleton, cutoff) values (true, $1::date)`,
    [addDays(AS_OF_DATE, -10)],
  );
  const e = await explain({ documentId: doc.id });
  expect(e.documents).toEqual([
    expect.objectContaining({
      verdict: 'pruned',
      why: 'pruned: expired before the prune cutoff 2026-08-23: its markers may be pruned, and no cycle, of any day, reads below the cutoff, so it is not reminded again',
    }),
  ]);
  expect(e.nextCycle).toEqual([]);
});

test('an unknown owner has no documents; an unknown document says so', async () => {
  const nobody = await explain({ ownerUserId: crypto.randomUUID() });
  expect(nobody.documents).toEqual([]);
  expect(explanationText(nobody)).toContain('No documents found for this owner.');
  const none = await explain({ documentId: crypto.randomUUID() });
  expect(none.ownerUserId).toBeNull();
  expect(explanationText(none)).toBe('No such document.\n');
});

describe("a document still due after a cycle of its day: what that cycle's history says", () => {
  // Each test its own day, so that no other test's cycle is a cycle of that day.
  const BUSY_DAY = '2026-09-10';
  const FAILED_DAY = '2026-09-11';
  const QUIET_DAY = '2026-09-12';
  const UNREACHABLE_DAY = '2026-09-13';
  const RUNNING_DAY = '2026-09-14';

  test('an owner another transaction held through a cycle is waiting, named by that cycle; released, the next cycle reminds it', async () => {
    const [held, other] = await insertDocuments(stack.db.admin, BUSY_DAY, [{ daysLeft: 5 }, { daysLeft: 6 }]);
    const release = await holdOwnerLock(stack.db.worker, held.ownerUserId);
    let first: Awaited<ReturnType<typeof stack.startCycle>>;
    try {
      first = await stack.startCycle({ asOf: BUSY_DAY });
      expect(await first.result()).toMatchObject({ ownersBusy: 1, failedOwners: 1, remindersSent: 1 });
    } finally {
      await release();
    }
    const run = first.firstExecutionRunId;
    const waiting = await explain({ ownerUserId: held.ownerUserId }, BUSY_DAY, {
      TEMPORAL_UI_URL: 'http://127.0.0.1:8233/',
    });
    expect(waiting.documents).toEqual([
      expect.objectContaining({
        verdict: 'waiting',
        why: `waiting: the owner was busy in cycle ${first.workflowId}, run ${run} (another transaction held it); the next cycle retries`,
        metInCycle: {
          cycle: {
            workflowId: first.workflowId,
            runId: run,
            status: 'COMPLETED',
            outcome: 'completed',
            webUi: `http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(first.workflowId)}/${run}/history`,
          },
          outcome: 'busy',
          // The busy retries' last group, after the page's own.
          seenIn: expect.objectContaining({ workflowId: first.workflowId, runId: run, activityType: 'remindOwners' }),
        },
      }),
    ]);
    expect(waiting.nextCycle).toEqual([expect.objectContaining({ documentId: held.id, thresholdDays: 7 })]);
    const text = explanationText(waiting);
    expect(text).toContain(`  seen busy in remindOwners `);
    expect(text).toContain(
      `  Web UI: http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(first.workflowId)}/${run}/history`,
    );
    expect(text).toContain(`Cycles as of this day: ${first.workflowId} run ${run}, COMPLETED`);
    // The owner claimed in the same cycle is reminded by it, not waiting.
    expect((await explain({ ownerUserId: other.ownerUserId }, BUSY_DAY)).documents[0].verdict).toBe('reminded');

    // Released, the next cycle of the day reminds it, and explain names that cycle, not the first.
    const second = await stack.startCycle({ asOf: BUSY_DAY });
    expect(await second.result()).toMatchObject({ ownersBusy: 0, remindersSent: 1 });
    const reminded = await explain({ ownerUserId: held.ownerUserId }, BUSY_DAY);
    expect(reminded.documents).toEqual([
      expect.objectContaining({
        verdict: 'reminded',
        why: `reminded: at 7 days on ${BUSY_DAY} by run ${second.firstExecutionRunId} of workflow ${second.workflowId}; the next reminder is at 1 day`,
        remindedBy: [{ workflowId: second.workflowId, eventId: expect.any(String) }],
      }),
    ]);
    expect(reminded.documents[0]).not.toHaveProperty('metInCycle');
  });

  test("in a partitioned cycle: an owner whose claim failed for good is 'failed' with the error, one held through it 'waiting', each with its partition", async () => {
    const [bad, good, held] = await insertDocuments(stack.db.admin, FAILED_DAY, [
      { daysLeft: 5 },
      { daysLeft: 6 },
      { daysLeft: 4 },
    ]);
    const undo = await rejectOwner(stack.db.admin, bad.ownerUserId);
    const release = await holdOwnerLock(stack.db.worker, held.ownerUserId);
    let cycle: Awaited<ReturnType<typeof stack.startCycle>>;
    try {
      cycle = await stack.startCycle({ asOf: FAILED_DAY, partitions: 2 });
      expect(await cycle.result()).toMatchObject({ partitions: 2, ownersBusy: 1, failedOwners: 2, remindersSent: 1 });
    } finally {
      await undo();
      await release();
    }
    const partition = expect.stringMatching(new RegExp(`^${cycle.workflowId}/partition-[12]-of-2$`));
    const e = await explain({ documentId: bad.id }, FAILED_DAY);
    expect(e.documents).toEqual([
      expect.objectContaining({
        verdict: 'failed',
        why: expect.stringMatching(
          new RegExp(
            `^failed: in cycle ${cycle.workflowId}, run ${cycle.firstExecutionRunId}: .*rejected for the test.*; the next cycle retries$`,
          ),
        ),
        metInCycle: expect.objectContaining({
          outcome: 'failed',
          seenIn: expect.objectContaining({ workflowId: partition, activityType: 'claimPage' }),
        }),
      }),
    ]);
    // Found busy by the page's claim (twice), then by the partition's busy retries until their window closed.
    expect((await explain({ documentId: held.id }, FAILED_DAY)).documents).toEqual([
      expect.objectContaining({
        verdict: 'waiting',
        metInCycle: expect.objectContaining({
          outcome: 'busy',
          seenIn: expect.objectContaining({
            workflowId: partition,
            activityType: 'remindOwners',
            // Without TEMPORAL_UI_URL, the page's path under the Web UI's address.
            webUi: expect.stringMatching(
              /^\/namespaces\/default\/workflows\/[^/]+%2Fpartition-[12]-of-2\/[0-9a-f-]{36}\/history$/,
            ),
          }),
        }),
      }),
    ]);
    expect((await explain({ ownerUserId: good.ownerUserId }, FAILED_DAY)).documents[0].verdict).toBe('reminded');
    // A document added after the cycle is due, told by the partition that scans it (issue 47): a cycle's outcome is
    // its worst partition's, and this one read every page of its range.
    const [added] = await insertDocuments(stack.db.admin, FAILED_DAY, [{ ownerUserId: good.ownerUserId, daysLeft: 3 }]);
    const later = (await explain({ documentId: added.id }, FAILED_DAY)).documents[0];
    expect(later.verdict).toBe('due');
    expect(later.why).toMatch(
      new RegExp(
        `; partition ${cycle.workflowId}/partition-[12]-of-2, run [0-9a-f-]{36}, of cycle ${cycle.workflowId}, read every page of its range without leaving its owner busy or failed`,
      ),
    );
  });

  test('while the cycle runs, an owner it found busy is waiting on that cycle; claimed by its retry, it is no longer named', async () => {
    const [held] = await insertDocuments(stack.db.admin, RUNNING_DAY, [{ daysLeft: 5 }]);
    const release = await holdOwnerLock(stack.db.worker, held.ownerUserId);
    let cycle: Awaited<ReturnType<typeof stack.startCycle>>;
    try {
      cycle = await stack.startCycle({ asOf: RUNNING_DAY });
      let seen: Explanation | undefined;
      await waitFor(async () => {
        seen = await explain({ ownerUserId: held.ownerUserId }, RUNNING_DAY);
        return seen.documents[0].verdict === 'waiting';
      }, 10_000);
      expect(seen!.documents[0].why).toBe(
        `waiting: the owner was busy in cycle ${cycle.workflowId}, run ${cycle.firstExecutionRunId} (another ` +
          'transaction held it); that cycle retries it before it ends, else the next cycle does',
      );
    } finally {
      await release();
    }
    expect(await cycle.result()).toMatchObject({ ownersBusy: 1, failedOwners: 0, remindersSent: 1 });
    expect((await explain({ ownerUserId: held.ownerUserId }, RUNNING_DAY)).documents[0].verdict).toBe('reminded');
    // A document added afterwards is due, and the cycle that claimed its owner in a retry is not said to have left it busy.
    const [added] = await insertDocuments(stack.db.admin, RUNNING_DAY, [
      { ownerUserId: held.ownerUserId, daysLeft: 3 },
    ]);
    const after = await explain({ documentId: added.id }, RUNNING_DAY);
    expect(after.documents).toEqual([
      expect.objectContaining({
        verdict: 'due',
        why: expect.stringContaining(
          `; cycle ${cycle.workflowId}, run ${cycle.firstExecutionRunId}, completed without leaving its owner busy or failed`,
        ),
      }),
    ]);
  });

  test('a due owner no cycle of the day has met is due, not busy: before any cycle, and for a document added after one', async () => {
    const [doc] = await insertDocuments(stack.db.admin, QUIET_DAY, [{ daysLeft: 5 }]);
    const before = await explain({ ownerUserId: doc.ownerUserId }, QUIET_DAY);
    expect(before.documents).toEqual([
      expect.objectContaining({
        verdict: 'due',
        why: `due: the next cycle as of ${QUIET_DAY} reminds it at 7 days (5 days left)`,
      }),
    ]);
    expect(before.cyclesOfDay).toEqual({ cycles: [] });
    expect(explanationText(before)).toContain('Cycles as of this day: none found');

    const cycle = await stack.startCycle({ asOf: QUIET_DAY });
    await cycle.result();
    const [added] = await insertDocuments(stack.db.admin, QUIET_DAY, [{ ownerUserId: doc.ownerUserId, daysLeft: 3 }]);
    const after = await explain({ documentId: added.id }, QUIET_DAY);
    expect(after.documents).toEqual([
      expect.objectContaining({
        verdict: 'due',
        why:
          `due: the next cycle as of ${QUIET_DAY} reminds it at 7 days (3 days left); cycle ${cycle.workflowId}, ` +
          `run ${cycle.firstExecutionRunId}, completed without leaving its owner busy or failed: the document became ` +
          'due, or was added, after that cycle read it',
      }),
    ]);
  });

  test('with Temporal unreachable the database still answers, and says the history was not read', async () => {
    const [doc] = await insertDocuments(stack.db.admin, UNREACHABLE_DAY, [{ daysLeft: 5 }]);
    const started = Date.now();
    const e = await explain({ ownerUserId: doc.ownerUserId }, UNREACHABLE_DAY, { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(e.cyclesOfDay).toEqual({ unavailable: expect.any(String) });
    expect(e.documents).toEqual([
      expect.objectContaining({
        verdict: 'due',
        why: expect.stringMatching(
          new RegExp(
            `^due: the next cycle as of ${UNREACHABLE_DAY} reminds it at 7 days \\(5 days left\\); whether a cycle as of ` +
              `${UNREACHABLE_DAY} already met its owner busy or failing is in Temporal's history, not read: .+`,
          ),
        ),
      }),
    ]);
    expect(e.nextCycle).toEqual([expect.objectContaining({ documentId: doc.id, thresholdDays: 7 })]);
    expect(e.events).toEqual([]);
    expect(explanationText(e)).toMatch(/Cycles as of this day: history not read \(.+\)\./);
  });
});

describe('issue 38: the right verdict, the run that opens, the settings of the day, the owner of now', () => {
  const PARTITIONED_DAY = '2026-09-20';
  const SETTINGS_DAY = '2026-09-21';
  const STOPPED_DAY = '2026-09-22';
  const OWNER_DAY = '2026-09-23';
  const SUPPORT_DAY = '2026-09-24';

  test("a marker of a partitioned cycle names its partition's workflow, and the printed command opens that run", async () => {
    const docs = await insertDocuments(stack.db.admin, PARTITIONED_DAY, [{ daysLeft: 5 }, { daysLeft: 6 }]);
    const cycle = await stack.startCycle({ asOf: PARTITIONED_DAY, partitions: 2 });
    expect(await cycle.result()).toMatchObject({ partitions: 2, remindersSent: 2 });
    for (const doc of docs) {
      const e = await explain({ documentId: doc.id }, PARTITIONED_DAY);
      const marker = e.documents[0].markers.find((m) => m.thresholdDays === 7)!;
      expect(marker.workflowId).toMatch(new RegExp(`^${cycle.workflowId}/partition-[12]-of-2$`));
      const runId = marker.queuedBy!.split('/')[0];
      expect(e.documents[0].why).toContain(`by run ${runId} of workflow ${marker.workflowId}`);
      const command = explanationText(e)
        .split('\n')
        .find((l) => l.trim().startsWith('temporal workflow show') && l.includes(runId))!;
      expect(command.trim()).toBe(`temporal workflow show --workflow-id '${marker.workflowId}' --run-id ${runId}`);
      const { stdout } = await promisify(execFile)(
        process.env.TEMPORAL_CLI_PATH!,
        [
          'workflow',
          'show',
          '--workflow-id',
          marker.workflowId!,
          '--run-id',
          runId,
          '--address',
          process.env.TEMPORAL_ADDRESS!,
          '-o',
          'json',
        ],
        { timeout: 30_000 },
      );
      expect(stdout).toContain('claimPage');
    }
  });

  test("'due' is judged with the thresholds the day's cycle recorded, not the client's; before any cycle, the client's, and it says so", async () => {
    // 20 days left: due at 30 with the client's thresholds (30, 7, 1, 0), not due with the cycle's (14, 3).
    const [doc] = await insertDocuments(stack.db.admin, SETTINGS_DAY, [{ daysLeft: 20 }]);
    const before = await explain({ documentId: doc.id }, SETTINGS_DAY);
    expect(before.settingsFrom).toEqual({ client: 'no cycle as of this day was found' });
    expect(before.documents[0].verdict).toBe('due');
    expect(explanationText(before)).toContain(
      "Settings: the client's configuration (no cycle as of this day was found).",
    );

    const cycle = await stack.startCycle({ asOf: SETTINGS_DAY, thresholdsDays: [14, 3] });
    expect(await cycle.result()).toMatchObject({ remindersSent: 0 });
    const after = await explain({ documentId: doc.id }, SETTINGS_DAY);
    expect(after).toMatchObject({
      thresholdsDays: [14, 3],
      settingsFrom: { cycle: { workflowId: cycle.workflowId, runId: cycle.firstExecutionRunId } },
    });
    expect(after.documents[0]).toMatchObject({
      verdict: 'not-due',
      why: 'not-due: expires in 20 days, and the first threshold is 14 days',
    });
    expect(after.nextCycle).toEqual([]);
    expect(explanationText(after)).toContain(`Settings: as cycle ${cycle.workflowId} recorded them`);
  });

  test('a cycle that stopped at its time limit is COMPLETED in Temporal, and explain says it stopped before the document', async () => {
    const [doc] = await insertDocuments(stack.db.admin, STOPPED_DAY, [{ daysLeft: 5 }]);
    const cycle = await stack.startCycle({ asOf: STOPPED_DAY, maxRunDurationMs: 1 });
    expect(await cycle.result()).toMatchObject({ status: 'time-limit', remindersSent: 0 });
    const e = await explain({ documentId: doc.id }, STOPPED_DAY);
    expect(e.documents[0]).toMatchObject({
      verdict: 'due',
      why:
        `due: the next cycle as of ${STOPPED_DAY} reminds it at 7 days (5 days left); cycle ${cycle.workflowId}, ` +
        `run ${cycle.firstExecutionRunId}, stopped before it reached this document (outcome time-limit: it ran out ` +
        'of its maximum run duration); the next cycle reminds it',
    });
    expect(explanationText(e)).toContain(
      `${cycle.workflowId} run ${cycle.firstExecutionRunId}, COMPLETED (time-limit)`,
    );
  });

  test('a document that changed owner: judged by its markers, with the events of the owner it had', async () => {
    const [doc] = await insertDocuments(stack.db.admin, OWNER_DAY, [{ daysLeft: 5 }]);
    const before = doc.ownerUserId;
    expect(await stack.cycle({ asOf: OWNER_DAY })).toMatchObject({ remindersSent: 1 });
    const now = crypto.randomUUID();
    await stack.db.admin.query('update profile.person_documents set owner_user_id = $2 where id = $1', [doc.id, now]);
    const e = await explain({ ownerUserId: now }, OWNER_DAY);
    expect(e.nextCycle).toEqual([]);
    expect(e.documents).toEqual([
      expect.objectContaining({
        verdict: 'reminded',
        why: expect.stringMatching(
          new RegExp(`^reminded: at 7 days on ${OWNER_DAY} to its previous owner ${before} by run `),
        ),
        remindedBy: [expect.objectContaining({ eventId: expect.any(String) })],
      }),
    ]);
    expect(e.events).toEqual([
      expect.objectContaining({ messageKey: before, documents: [{ documentId: doc.id, thresholdDays: 7 }] }),
    ]);
    expect(explanationText(e)).toContain(`to previous owner ${before}`);
  });

  test('explain works with the support role alone (SUPPORT_DATABASE_URL): no worker, no relay connection', async () => {
    const owner = crypto.randomUUID();
    const [doc] = await insertDocuments(stack.db.admin, SUPPORT_DAY, [
      { ownerUserId: owner, daysLeft: 5 },
      { ownerUserId: owner, daysLeft: 45 },
    ]);
    expect(await stack.cycle({ asOf: SUPPORT_DAY })).toMatchObject({ remindersSent: 1 });
    const config = testConfig({
      SUPPORT_DATABASE_URL: stack.db.supportUrl,
      TEMPORAL_TASK_QUEUE: stack.worker.taskQueue,
    });
    expect([config.databaseUrl, config.relayDatabaseUrl]).toEqual([undefined, undefined]);
    const e = await explainCommand(config, { ownerUserId: doc.ownerUserId }, { asOfDate: SUPPORT_DAY });
    expect(e.documents.map((d) => d.verdict).sort()).toEqual(['not-due', 'reminded']);
    expect(e.events).toEqual([expect.objectContaining({ documents: [{ documentId: doc.id, thresholdDays: 7 }] })]);
    // `cycle preview` reads as the support role too (compose's client has no worker URL).
    const preview = await previewCycleCommand(config, { asOfDate: addDays(SUPPORT_DAY, 4) });
    expect(preview.owners.find((o) => o.ownerUserId === owner)?.documents).toEqual([
      expect.objectContaining({ documentId: doc.id, thresholdDays: 1 }),
    ]);
    expect(loadConfig({ SUPPORT_DATABASE_URL: stack.db.supportUrl }).supportDatabaseUrl).toBe(stack.db.supportUrl);
  });

  test("a refused support login is told to fix SUPPORT_DATABASE_URL, the support desk's own variable (issue 47)", async () => {
    const refused = new URL(stack.db.supportUrl);
    refused.password = 'not-the-password';
    const config = testConfig({
      SUPPORT_DATABASE_URL: refused.toString(),
      TEMPORAL_TASK_QUEUE: stack.worker.taskQueue,
    });
    const err = await explainCommand(config, { ownerUserId: crypto.randomUUID() }, { asOfDate: SUPPORT_DAY }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toContain('SUPPORT_DATABASE_URL');
    expect(err?.message).not.toMatch(/(^|[^_])DATABASE_URL/);
    expect(err?.message).not.toContain('not-the-password');
  });
});
