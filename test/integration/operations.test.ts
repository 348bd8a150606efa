/**
 * The operator's commands against the dev server and a real database, through the in-process CLI:
 * schedule describe/pause/unpause/backfill/delete, apply keeping what operators set, cycle preview and
 * cycle status. Each test works on a schedule of its own.
 */
import crypto from 'node:crypto';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { clientError, runClient } from '../support/cli';
import { eventually, sleep } from '../support/wait';
import type { Config } from '../../src/config';
import type { CycleResult } from '../../src/domain/cycle';
import { addDays, utcDate } from '../../src/domain/thresholds';
import { withReadOnlySnapshot, type CyclePreview, type CycleStatusRow } from '../../src/operations/cycles';
import type { ScheduleReport } from '../../src/operations/schedule';
import type { BackfillReport } from '../../src/operations/schedule-runs';
import { documentsFingerprint, insertDocuments, markers, outbox } from '../support/data';
import { testConfig } from '../support/stack';
import type { CycleWorkflow } from '../../src/workflows';
import { useIntegration } from '../support/harness';

const taskQueue = `operations-test-${crypto.randomUUID()}`;
/** The configuration the CLI and the worker use, as the worker would load it; tests may replace `config`. */
let baseConfig: Config;
let config: Config;
const stack = useIntegration('operations', {
  worker: 'file',
  taskQueue,
  config: (db) => (baseConfig = testConfig({ TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: db.workerUrl })),
});

/** A schedule id of this test run; deleted after the file. */
function newScheduleId(): string {
  const id = `operations-test-${crypto.randomBytes(4).toString('hex')}`;
  stack.trackSchedule(id);
  return id;
}

/** Runs `npm run client -- …args` in-process and returns what it printed, parsed. */
async function cli<T = Record<string, unknown>>(...args: string[]): Promise<T> {
  return (await runClient<T>(() => config, args)).output;
}

/** Runs the CLI expecting a failure. */
const cliError = (...args: string[]) => clientError(() => config, args);

beforeEach(() => {
  config = baseConfig;
});

test('schedule describe shows spec, policies, pause state, next action times and recent runs with their workflow ids', async () => {
  const scheduleId = newScheduleId();
  await cli('--schedule-id', scheduleId, 'schedule', 'apply');
  await cli('schedule', 'trigger', '--schedule-id', scheduleId);

  const described = await eventually(async () => {
    const d = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
    return d.info.recentActions.length > 0 ? d : undefined;
  }, 'the triggered run in recentActions');

  expect(described).toEqual(
    expect.objectContaining({
      scheduleId,
      spec: expect.objectContaining({ intervals: [{ everyMs: 86_400_000, offsetMs: 10_800_000 }], calendars: 0 }),
      // A stuck cycle times out (21.6 h, 90 % of the interval) before the next tick; a tick missed in an
      // outage of up to that long still runs.
      action: {
        workflowType: 'documentExpiryReminderCycle',
        taskQueue,
        workflowIdPrefix: 'document-expiry-reminder-cycle',
        workflowExecutionTimeoutMs: 77_760_000,
      },
      policies: { overlap: 'SKIP', catchupWindowMs: 77_760_000, pauseOnFailure: false },
      state: { paused: false },
    }),
  );
  // Every 24 h at 03:00 UTC, starting with the next one.
  expect(described.info.nextActionTimes).toHaveLength(10);
  expect(described.info.nextActionTimes.every((t) => t.endsWith('T03:00:00.000Z'))).toBe(true);
  expect(Date.parse(described.info.nextActionTimes[0])).toBeGreaterThan(Date.now());
  const [run] = described.info.recentActions;
  expect(run.workflowId).toMatch(/^document-expiry-reminder-cycle-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  expect(described.info.actionsTaken).toBe(1);

  const result = await stack.client.workflow.getHandle<CycleWorkflow>(run.workflowId, run.runId).result();
  expect(result.status).toBe('completed');
  const after = await eventually(async () => {
    const d = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
    return d.info.recentActions[0]?.status === 'COMPLETED' ? d : undefined;
  }, 'the run to show as completed');
  expect(after.info.runningWorkflows).toEqual([]);
});

test('schedule apply on an existing schedule keeps pause state, note, remaining actions and jitter, and restores the configured spec and policies', async () => {
  const scheduleId = newScheduleId();
  expect(await cli('schedule', 'apply', '--schedule-id', scheduleId)).toEqual(
    expect.objectContaining({ outcome: 'created' }),
  );
  const handle = stack.client.schedule.getHandle(scheduleId);
  // What an operator may change by hand: limits, jitter, and (by mistake) the interval and policies.
  await handle.update((s) => ({
    ...s,
    spec: { ...s.spec, intervals: [{ every: '1h' }], jitter: '30s' },
    policies: { ...s.policies, catchupWindow: '5m', pauseOnFailure: true },
    state: { ...s.state, remainingActions: 5 },
  }));
  await cli('schedule', 'pause', '--schedule-id', scheduleId, '--reason', 'INC-7: freeze');
  const changed = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
  expect(changed.spec).toEqual(
    expect.objectContaining({ intervals: [{ everyMs: 3_600_000, offsetMs: 0 }], jitterMs: 30_000 }),
  );
  expect(changed.policies).toEqual({ overlap: 'SKIP', catchupWindowMs: 300_000, pauseOnFailure: true });
  expect(changed.state).toEqual({ paused: true, note: 'INC-7: freeze', remainingActions: 5 });

  expect(await cli('schedule', 'apply', '--schedule-id', scheduleId)).toEqual(
    expect.objectContaining({ outcome: 'updated' }),
  );

  const d = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
  expect(d.state).toEqual({ paused: true, note: 'INC-7: freeze', remainingActions: 5 });
  expect(d.spec).toEqual(
    expect.objectContaining({ intervals: [{ everyMs: 86_400_000, offsetMs: 10_800_000 }], jitterMs: 30_000 }),
  );
  expect(d.policies).toEqual({ overlap: 'SKIP', catchupWindowMs: 77_760_000, pauseOnFailure: false });
});

test('schedule pause requires a reason and stores it as the note; unpause resumes it with its own note', async () => {
  const scheduleId = newScheduleId();
  await cli('schedule', 'apply', '--schedule-id', scheduleId);

  expect((await cliError('schedule', 'pause', '--schedule-id', scheduleId)).message).toMatch(
    /required option '--reason <text>'/,
  );
  expect((await cliError('schedule', 'pause', '--schedule-id', scheduleId, '--reason', '  ')).message).toMatch(
    /expected some text/,
  );

  expect(
    await cli('schedule', 'pause', '--schedule-id', scheduleId, '--reason', 'INC-42: notifications outage'),
  ).toEqual({
    scheduleId,
    paused: true,
    note: 'INC-42: notifications outage',
  });
  expect((await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId)).state).toEqual({
    paused: true,
    note: 'INC-42: notifications outage',
  });

  await cli('schedule', 'unpause', '--schedule-id', scheduleId, '--reason', 'INC-42 resolved');
  expect((await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId)).state).toEqual({
    paused: false,
    note: 'INC-42 resolved',
  });
  await cli('schedule', 'pause', '--schedule-id', scheduleId, '--reason', 'again');
  await cli('schedule', 'unpause', '--schedule-id', scheduleId);
  expect((await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId)).state).toEqual({
    paused: false,
    note: '(no reason provided)',
  });
});

test('schedule backfill runs one cycle per day of --from..--to, one after another, each as of its 03:00 UTC action time', async () => {
  const scheduleId = newScheduleId();
  await cli('schedule', 'apply', '--schedule-id', scheduleId);
  // Far enough back that no other test file backfills the same days (workflow ids carry the action time).
  const today = utcDate(new Date());
  const days = [addDays(today, -40), addDays(today, -39), addDays(today, -38)];
  // Due at 7 days on the first day only; on the later days its current threshold (7) is already marked.
  const [doc] = await insertDocuments(stack.db.admin, days[0], [{ daysLeft: 7 }]);

  const report = await cli<BackfillReport>(
    'schedule',
    'backfill',
    '--schedule-id',
    scheduleId,
    '--from',
    days[0],
    '--to',
    days[2],
  );

  expect(report).toEqual({
    scheduleId,
    from: days[0],
    to: days[2],
    startTime: `${days[0]}T00:00:00.000Z`,
    endTime: `${days[2]}T23:59:59.999Z`,
    overlap: 'BUFFER_ALL',
    actionTimes: days.map((d) => `${d}T03:00:00.000Z`),
  });
  // The workflow ids repeat whenever these days are backfilled again (a reused stack): find this
  // schedule's runs by the schedule id Temporal records on them.
  const runs = await eventually(
    async () => {
      const found: WorkflowExecutionInfo[] = [];
      for await (const wf of stack.client.workflow.list({
        query: `TemporalScheduledById = "${scheduleId}" AND ExecutionStatus = "Completed"`,
      })) {
        found.push(wf);
      }
      return found.length === 3 ? found.sort((x, y) => x.startTime.getTime() - y.startTime.getTime()) : undefined;
    },
    'three completed cycles',
    60_000,
  );
  const results = await Promise.all(
    runs.map(async (wf) => await stack.client.workflow.getHandle<CycleWorkflow>(wf.workflowId, wf.runId).result()),
  );
  expect(runs.map((wf) => wf.workflowId)).toEqual(days.map((d) => `document-expiry-reminder-cycle-${d}T03:00:00Z`));
  expect(results.map((r) => [r.asOf, r.status, r.remindersSent])).toEqual([
    [`${days[0]}T03:00:00.000Z`, 'completed', 1],
    [`${days[1]}T03:00:00.000Z`, 'completed', 0],
    [`${days[2]}T03:00:00.000Z`, 'completed', 0],
  ]);
  // Buffer-all: each run started after the previous one closed.
  for (let i = 1; i < runs.length; i++) {
    expect(runs[i].startTime.getTime()).toBeGreaterThanOrEqual(runs[i - 1].closeTime!.getTime());
  }
  const rows = await outbox(stack.db.admin);
  expect(rows).toHaveLength(1);
  const [row] = rows;
  expect(row.correlation_id).toBe(`document-expiry-reminder-cycle-${days[0]}T03:00:00Z`);
  expect(row.payload).toEqual(
    expect.objectContaining({
      remindedAt: `${days[0]}T03:00:00.000Z`,
      documents: [expect.objectContaining({ documentId: doc.id, thresholdDays: 7, daysLeft: 7 })],
    }),
  );
});

test('schedule backfill takes an action time at 00:00 of --from and none at 00:00 after --to (offset 0)', async () => {
  const scheduleId = newScheduleId();
  config = testConfig({
    TEMPORAL_TASK_QUEUE: taskQueue,
    DATABASE_URL: stack.db.workerUrl,
    REMINDER_POLLING_OFFSET: '0s',
  });
  await cli('schedule', 'apply', '--schedule-id', scheduleId);
  const day = addDays(utcDate(new Date()), -60);

  const report = await cli<BackfillReport>(
    'schedule',
    'backfill',
    '--schedule-id',
    scheduleId,
    '--from',
    day,
    '--to',
    day,
  );

  expect(report.actionTimes).toEqual([`${day}T00:00:00.000Z`]);
  const ids = await eventually(async () => {
    const found: string[] = [];
    for await (const wf of stack.client.workflow.list({
      query: `TemporalScheduledById = "${scheduleId}" AND ExecutionStatus = "Completed"`,
    })) {
      found.push(wf.workflowId);
    }
    return found.length > 0 ? found : undefined;
  }, 'the backfilled cycle');
  // Give a second action a moment to show up, were Temporal to take one.
  await sleep(1_000);
  const d = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
  expect(d.info.actionsTaken).toBe(1);
  expect(ids).toEqual([`document-expiry-reminder-cycle-${day}T00:00:00Z`]);
});

test('schedule backfill refuses a reversed range, an impossible date, and a day after today (a typo for this year too)', async () => {
  const scheduleId = newScheduleId();
  await cli('schedule', 'apply', '--schedule-id', scheduleId);
  const tomorrow = addDays(utcDate(new Date()), 1);

  expect(
    (await cliError('schedule', 'backfill', '--schedule-id', scheduleId, '--from', '2026-11-03', '--to', '2026-11-01'))
      .message,
  ).toBe('--from 2026-11-03 is after --to 2026-11-01');
  expect(
    (await cliError('schedule', 'backfill', '--schedule-id', scheduleId, '--from', '2026-02-29', '--to', '2026-03-01'))
      .message,
  ).toMatch(/'--from <date>' argument '2026-02-29' is invalid/);
  expect((await cliError('schedule', 'backfill', '--schedule-id', scheduleId, '--from', '2026-11-01')).message).toMatch(
    /required option '--to <date>'/,
  );
  const today = utcDate(new Date());
  expect(
    (await cliError('schedule', 'backfill', '--schedule-id', scheduleId, '--from', tomorrow, '--to', tomorrow)).message,
  ).toBe(
    `--to ${tomorrow} is after today's UTC date (${today}): its cycles would compute reminders as of a later day and send them early; nothing was backfilled`,
  );
  const nextYear = `${Number(today.slice(0, 4)) + 1}${today.slice(4)}`;
  expect(
    (await cliError('schedule', 'backfill', '--schedule-id', scheduleId, '--from', today, '--to', nextYear)).message,
  ).toMatch(new RegExp(`^--to ${nextYear} is after today's UTC date`));
  const d = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
  expect(d.info.actionsTaken).toBe(0);
});

test('schedule delete removes the schedule; commands on it then say it does not exist', async () => {
  const scheduleId = newScheduleId();
  await cli('schedule', 'apply', '--schedule-id', scheduleId);

  expect(await cli('schedule', 'delete', '--schedule-id', scheduleId)).toEqual({ scheduleId, deleted: true });

  for (const args of [['describe'], ['trigger'], ['pause', '--reason', 'x'], ['delete']]) {
    expect((await cliError('schedule', ...args, '--schedule-id', scheduleId)).message).toBe(
      `schedule "${scheduleId}" does not exist in this namespace (create it with: schedule apply)`,
    );
  }
});

/** An outbox row reduced to what the preview shows. */
function sentOwner(row: Awaited<ReturnType<typeof outbox>>[number]) {
  return {
    ownerUserId: row.payload.ownerUserId,
    documents: row.payload.documents.map(({ documentId, type, thresholdDays, daysLeft }) => ({
      documentId,
      type,
      thresholdDays,
      daysLeft,
    })),
  };
}

test('cycle preview on seeded data lists exactly what the next cycle run then sends, and writes nothing', async () => {
  const asOf = '2025-05-10';
  const owner = () => crypto.randomUUID();
  const [a, b, c, e] = [owner(), owner(), owner(), owner()];
  const docs = await insertDocuments(stack.db.admin, asOf, [
    // Owner a: two due documents, far apart in the scan, so they land on different pages (batch size 2).
    { ownerUserId: a, daysLeft: 0, type: 'InternalPassport' },
    { ownerUserId: a, daysLeft: 30, type: 'ForeignPassport' },
    { ownerUserId: b, daysLeft: 7 },
    { ownerUserId: b, daysLeft: 31 }, // not due yet
    { ownerUserId: c, daysLeft: -5 }, // expired: current threshold 0
    { ownerUserId: c, daysLeft: -91 }, // beyond retention
    { ownerUserId: c, daysLeft: 1, status: 'Archived' },
    { ownerUserId: c, daysLeft: 1, isDeleted: true },
    { ownerUserId: e, daysLeft: 6 }, // current threshold 7, already sent
    { ownerUserId: e, daysLeft: 2 }, // only its 30 marker exists: due at 7
    { daysLeft: null },
  ]);
  const marked = [
    { doc: docs[8], threshold: 7 },
    { doc: docs[8], threshold: 30 },
    { doc: docs[9], threshold: 30 },
  ];
  for (const m of marked) {
    await stack.db.admin.query(
      `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
       values (gen_random_uuid(), $1, $2, $3, $4, $5, now())`,
      [m.doc.id, m.doc.ownerUserId, m.doc.type, m.threshold, m.doc.expiresAt],
    );
  }
  config = testConfig({ TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: stack.db.workerUrl, REMINDER_BATCH_SIZE: '2' });
  const fingerprint = await documentsFingerprint(stack.db.admin);
  const markersBefore = await markers(stack.db.admin);

  const preview = await cli<CyclePreview>('cycle', 'preview', '--as-of', asOf);

  expect(await markers(stack.db.admin)).toEqual(markersBefore);
  expect(await outbox(stack.db.admin)).toEqual([]);
  expect(await documentsFingerprint(stack.db.admin)).toBe(fingerprint);
  expect(JSON.stringify(preview)).not.toMatch(/numberMask|\*\*\*\*/);
  expect(preview).toEqual(
    expect.objectContaining({
      asOfDate: asOf,
      thresholdsDays: [30, 7, 1, 0],
      retentionDays: 90,
      ownerCount: 4,
      documentCount: 5,
    }),
  );
  // In scan order (expires_at, id): c (-5), a (0), e (2), b (7); a's second document comes with its first.
  expect(preview.owners).toEqual([
    {
      ownerUserId: c,
      documents: [{ documentId: docs[4].id, type: 'ForeignPassport', thresholdDays: 0, daysLeft: -5 }],
    },
    {
      ownerUserId: a,
      documents: [
        { documentId: docs[0].id, type: 'InternalPassport', thresholdDays: 0, daysLeft: 0 },
        { documentId: docs[1].id, type: 'ForeignPassport', thresholdDays: 30, daysLeft: 30 },
      ],
    },
    { ownerUserId: e, documents: [{ documentId: docs[9].id, type: 'ForeignPassport', thresholdDays: 7, daysLeft: 2 }] },
    { ownerUserId: b, documents: [{ documentId: docs[2].id, type: 'ForeignPassport', thresholdDays: 7, daysLeft: 7 }] },
  ]);

  const run = await cli<{ result: CycleResult }>('cycle', 'run', '--as-of', asOf, '--wait');

  expect(run.result.remindersSent).toBe(preview.documentCount);
  const byOwner = (x: { ownerUserId: string }, y: { ownerUserId: string }) =>
    x.ownerUserId.localeCompare(y.ownerUserId);
  expect((await outbox(stack.db.admin)).map(sentOwner).sort(byOwner)).toEqual([...preview.owners].sort(byOwner));
  // Nothing is left to preview once the cycle sent it.
  expect(await cli<CyclePreview>('cycle', 'preview', '--as-of', asOf)).toEqual(
    expect.objectContaining({ owners: [], documentCount: 0 }),
  );
});

test('cycle preview takes --thresholds and --retention-days, and needs the worker connection', async () => {
  const asOf = '2025-06-01';
  const [soon, old] = await insertDocuments(stack.db.admin, asOf, [{ daysLeft: 3 }, { daysLeft: -20 }]);

  const preview = await cli<CyclePreview>(
    'cycle',
    'preview',
    '--as-of',
    asOf,
    '--thresholds',
    '14,3',
    '--retention-days',
    '10',
  );

  expect(preview).toEqual(expect.objectContaining({ thresholdsDays: [14, 3], retentionDays: 10 }));
  expect(preview.owners).toEqual([
    {
      ownerUserId: soon.ownerUserId,
      documents: [{ documentId: soon.id, type: 'ForeignPassport', thresholdDays: 3, daysLeft: 3 }],
    },
  ]);
  expect(preview.owners.some((o) => o.ownerUserId === old.ownerUserId)).toBe(false);

  expect((await cliError('cycle', 'preview', '--thresholds', '3,14')).message).toMatch(/descending order/);
  config = testConfig({ TEMPORAL_TASK_QUEUE: taskQueue });
  expect((await cliError('cycle', 'preview', '--as-of', asOf)).message).toMatch(/DATABASE_URL=\(unset\)/);
});

test('the preview transaction is read only: PostgreSQL refuses a write in it', async () => {
  await expect(
    withReadOnlySnapshot(stack.db.worker, (tx) =>
      tx.query(`delete from profile.document_expiry_reminders where threshold_days = -1`),
    ),
  ).rejects.toThrow(/read-only transaction/);
});

test('cycle status lists recent cycles with AsOf, outcome, reminders sent and the counts of their result', async () => {
  await insertDocuments(stack.db.admin, '2025-07-01', [{ daysLeft: 1 }, { daysLeft: 30 }]);
  const { workflowId } = await cli<{ workflowId: string }>('cycle', 'run', '--as-of', '2025-07-01', '--wait');

  const row = await eventually(async () => {
    const rows = await cli<CycleStatusRow[]>('cycle', 'status', '--limit', '50');
    const found = rows.find((r) => r.workflowId === workflowId);
    return found?.outcome === 'completed' ? found : undefined;
  }, 'the cycle in visibility');

  expect(row).toEqual({
    workflowId,
    runId: expect.any(String),
    status: 'COMPLETED',
    startTime: expect.any(String),
    closeTime: expect.any(String),
    asOf: '2025-07-01T00:00:00.000Z',
    outcome: 'completed',
    remindersSent: 2,
    result: expect.objectContaining({
      status: 'completed',
      remindersSent: 2,
      ownersNotified: 2,
      failedOwners: 0,
      documentsSeen: 2,
    }),
  });
  const limited = await cli<CycleStatusRow[]>('cycle', 'status', '--limit', '1');
  expect(limited).toHaveLength(1);
  expect((await cliError('cycle', 'status', '--limit', '0')).message).toMatch(/expected a whole number from 1 to 1000/);
});
