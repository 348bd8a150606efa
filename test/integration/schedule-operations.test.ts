/**
 * The operator's schedule commands against the dev server, through the in-process CLI: describe, apply
 * keeping what operators set, pause/unpause, backfill and delete. Each test works on a schedule of its own.
 */
import crypto from 'node:crypto';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { eventually, sleep } from '../support/wait';
import { addDays, utcDate } from '../../src/domain/dates';
import type { ScheduleReport } from '../../src/operations/schedule';
import type { BackfillReport } from '../../src/operations/schedule-runs';
import { insertDocuments, outbox } from '../support/data';
import { testConfig } from '../support/stack';
import type { CycleWorkflow } from '../../src/workflows';
import type { CycleResult } from '../../src/domain/cycle';
import { useOperatorStack } from '../support/cli';

const { stack, taskQueue, operator } = useOperatorStack('schedule-operations');
const { run: cli, error: cliError } = operator;

/** `schedule backfill` of the UTC days `from`..`to` on `scheduleId`. */
const backfill = (scheduleId: string, from: string, to: string) =>
  cli<BackfillReport>('schedule', 'backfill', '--schedule-id', scheduleId, '--from', from, '--to', to);

/** A schedule id of this test run; deleted after the file. */
function newScheduleId(): string {
  const id = `schedule-operations-${crypto.randomBytes(4).toString('hex')}`;
  stack.trackSchedule(id);
  return id;
}

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
  // The server applies an update and a pause to the schedule asynchronously: on the Temporal server on
  // PostgreSQL the pause right after the update was once found undone (the update, read before the pause,
  // carries paused=false). An operator's pause comes long after an update; so does this one.
  await eventually(async () => {
    const d = await cli<ScheduleReport>('schedule', 'describe', '--schedule-id', scheduleId);
    return d.state.remainingActions === 5 ? d : undefined;
  }, 'the update to show');
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

/** This schedule's completed runs, oldest first, once there are `n` of them. */
async function completedRuns(scheduleId: string, n: number): Promise<WorkflowExecutionInfo[]> {
  // The workflow ids repeat whenever these days are backfilled again (a reused stack): find this
  // schedule's runs by the schedule id Temporal records on them.
  return eventually(
    async () => {
      const found: WorkflowExecutionInfo[] = [];
      for await (const wf of stack.client.workflow.list({
        query: `TemporalScheduledById = "${scheduleId}" AND ExecutionStatus = "Completed"`,
      })) {
        found.push(wf);
      }
      return found.length === n ? found.sort((x, y) => x.startTime.getTime() - y.startTime.getTime()) : undefined;
    },
    `${n} completed cycles`,
    60_000,
  );
}

test("schedule backfill of three past days runs one cycle per day, one after another, each caught up as of its start: the first sends today's reminder, the others find nothing", async () => {
  const scheduleId = newScheduleId();
  await cli('schedule', 'apply', '--schedule-id', scheduleId);
  // Far enough back that no other test file backfills the same days (workflow ids carry the action time).
  const today = utcDate(new Date());
  const days = [addDays(today, -40), addDays(today, -39), addDays(today, -38)];
  // Expires in 3 days: as of the backfilled days it had 43 to 41 left, and a run replaying those days
  // would send a stale "30 days" reminder (or nothing) before today's "7".
  const [doc] = await insertDocuments(stack.db.admin, today, [{ daysLeft: 3 }]);

  const report = await backfill(scheduleId, days[0], days[2]);

  expect(report).toEqual({
    scheduleId,
    from: days[0],
    to: days[2],
    startTime: `${days[0]}T00:00:00.000Z`,
    endTime: `${days[2]}T23:59:59.999Z`,
    overlap: 'BUFFER_ALL',
    actionTimes: days.map((d) => `${d}T03:00:00.000Z`),
  });
  const runs = await completedRuns(scheduleId, 3);
  const results = await Promise.all(
    runs.map(async (wf) => await stack.client.workflow.getHandle<CycleWorkflow>(wf.workflowId, wf.runId).result()),
  );
  expect(runs.map((wf) => wf.workflowId)).toEqual(days.map((d) => `document-expiry-reminder-cycle-${d}T03:00:00Z`));
  expect(results.map((r) => [r.scheduledAt, r.asOf.slice(0, 10), r.status, r.remindersSent])).toEqual([
    [`${days[0]}T03:00:00.000Z`, today, 'completed', 1],
    [`${days[1]}T03:00:00.000Z`, today, 'completed', 0],
    [`${days[2]}T03:00:00.000Z`, today, 'completed', 0],
  ]);
  // Buffer-all: each run started after the previous one closed.
  for (let i = 1; i < runs.length; i++) {
    expect(runs[i].startTime.getTime()).toBeGreaterThanOrEqual(runs[i - 1].closeTime!.getTime());
  }
  const rows = await outbox(stack.db.admin);
  expect(rows).toHaveLength(1);
  const [row] = rows;
  expect(row.correlation_id).toBe(`document-expiry-reminder-cycle-${days[0]}T03:00:00Z`);
  expect(row.payload.remindedAt.slice(0, 10)).toBe(today);
  expect(row.payload.documents).toEqual([
    expect.objectContaining({ documentId: doc.id, thresholdDays: 7, daysLeft: 3 }),
  ]);
});

test('a backfill of a past day after a prune does not re-send what a later cycle handled and pruned', async () => {
  const scheduleId = newScheduleId();
  await cli('schedule', 'apply', '--schedule-id', scheduleId);
  const today = utcDate(new Date());
  // Expired 92 days ago and reminded "expired" (0) back then; still Active. Today's cycle prunes its markers.
  const [doc] = await insertDocuments(stack.db.admin, today, [{ daysLeft: -92 }]);
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     select gen_random_uuid(), d.id, d.owner_user_id, d.type, t, d.expires_at, now() - interval '92 days'
       from profile.person_documents d cross join unnest(array[30, 7, 1, 0]) as t where d.id = $1`,
    [doc.id],
  );
  const todays = await cli<{ result: CycleResult }>('cycle', 'run', '--wait');
  expect(todays.result).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 0, pruned: 4 }));

  // A run as of five days ago has a window from 95 days before it: the document, now without markers.
  const past = addDays(today, -5);
  const manual = await cli<{ result: CycleResult }>('cycle', 'run', '--as-of', past, '--wait');
  await backfill(scheduleId, past, past);
  const [backfilled] = await completedRuns(scheduleId, 1);
  const result = await stack.client.workflow.getHandle<CycleWorkflow>(backfilled.workflowId, backfilled.runId).result();

  expect([manual.result.remindersSent, result.remindersSent]).toEqual([0, 0]);
  expect(await outbox(stack.db.admin)).toEqual([]);
});

test('schedule backfill takes an action time at 00:00 of --from and none at 00:00 after --to (offset 0)', async () => {
  const scheduleId = newScheduleId();
  operator.use(
    testConfig({
      TEMPORAL_TASK_QUEUE: taskQueue,
      DATABASE_URL: stack.db.workerUrl,
      REMINDER_POLLING_OFFSET: '0s',
    }),
  );
  await cli('schedule', 'apply', '--schedule-id', scheduleId);
  const day = addDays(utcDate(new Date()), -60);

  const report = await backfill(scheduleId, day, day);

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
