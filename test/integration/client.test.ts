/** The operator's client against the dev server: the schedule and manual cycles. */
import crypto from 'node:crypto';
import { runClient } from '../support/cli';
import { resultWithProgress } from '../../src/operations/progress';
import { applySchedule } from '../../src/operations/schedule';
import { cycleStartedBy, scheduleActionRuns, triggerSchedule } from '../../src/operations/schedule-runs';
import { scheduledCycleTimeoutMs } from '../../src/domain/cycle';
import { utcDate } from '../../src/domain/dates';
import { insertDocuments, outbox } from '../support/data';
import { resetData, testConfig } from '../support/stack';
import type { CycleWorkflow } from '../../src/workflows';
import { useIntegration } from '../support/harness';
import { sleep } from '../support/wait';

const taskQueue = `client-test-${crypto.randomUUID()}`;
const config = testConfig({ TEMPORAL_TASK_QUEUE: taskQueue });
// A schedule of this file's own: other files run against the same dev server at the same time.
const scheduleId = `client-test-${crypto.randomBytes(4).toString('hex')}`;
const stack = useIntegration('client', { worker: 'file', taskQueue, resetEachTest: false });
stack.trackSchedule(scheduleId);

/** What the last `cli` call wrote to stderr. */
let stderrOfLastCli = '';

/** Runs `npm run client -- …args` in-process, on this file's schedule, and returns what it printed as JSON. */
async function cli(...args: string[]): Promise<Record<string, unknown>> {
  const run = await runClient(() => config, ['--schedule-id', scheduleId, ...args]);
  stderrOfLastCli = run.stderr;
  return run.output;
}

test('schedule apply creates the schedule, and applying again updates it and keeps it paused', async () => {
  expect(await cli('schedule', 'apply')).toEqual(expect.objectContaining({ scheduleId, outcome: 'created' }));
  const handle = stack.client.schedule.getHandle(scheduleId);
  await handle.pause('maintenance window');

  expect(await cli('schedule', 'apply')).toEqual(expect.objectContaining({ outcome: 'updated' }));

  const described = await handle.describe();
  expect(described.state).toEqual(expect.objectContaining({ paused: true, note: 'maintenance window' }));
  expect(described.policies.overlap).toBe('SKIP');
  expect(described.spec.intervals).toEqual([{ every: 24 * 3_600_000, offset: 3 * 3_600_000 }]);
  expect(described.action).toEqual(expect.objectContaining({ workflowType: 'documentExpiryReminderCycle', taskQueue }));
  await handle.unpause();
});

test('schedule trigger starts a cycle through the schedule that reminds due owners', async () => {
  await insertDocuments(stack.db.admin, utcDate(new Date()), [{ daysLeft: 7 }, { daysLeft: 0 }]);
  await cli('schedule', 'apply');

  expect(await cli('schedule', 'trigger')).toEqual(expect.objectContaining({ triggered: true }));

  const handle = stack.client.schedule.getHandle(scheduleId);
  let workflowId: string | undefined;
  for (let i = 0; i < 100 && !workflowId; i++) {
    const { info } = await handle.describe();
    workflowId = (info.runningActions[0] ?? info.recentActions[0]?.action)?.workflow.workflowId;
    if (!workflowId) await sleep(100);
  }
  const result = await stack.client.workflow.getHandle<CycleWorkflow>(workflowId!).result();
  expect(result).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 2, ownersNotified: 2 }));
  expect((await outbox(stack.db.admin)).map((r) => r.correlation_id)).toEqual([workflowId, workflowId]);
});

test('cycle run --as-of --wait prints the result as JSON', async () => {
  await resetData(stack.db);
  await insertDocuments(stack.db.admin, '2025-03-01', [{ daysLeft: 1 }]);

  const printed = await cli('cycle', 'run', '--as-of', '2025-03-01', '--wait');

  expect(printed).toEqual(
    expect.objectContaining({
      workflowId: expect.stringMatching(/^document-expiry-reminder-manual-2025-03-01-/),
      result: expect.objectContaining({ status: 'completed', asOf: '2025-03-01T00:00:00.000Z', remindersSent: 1 }),
    }),
  );
  // A manual cycle ends within a day as a scheduled one does, should it never make progress (a version
  // without workers): the execution timeout of scheduled cycles, 90 % of the polling interval.
  const { workflowId } = printed as { workflowId: string };
  const { raw } = await stack.client.workflow.getHandle(workflowId).describe();
  const timeoutMs = Number(raw.executionConfig?.workflowExecutionTimeout?.seconds ?? 0) * 1000;
  expect(timeoutMs).toBe(scheduledCycleTimeoutMs(stack.config.schedule.intervalMs));
  expect(timeoutMs).toBeLessThan(24 * 3_600_000);
});

test('schedule trigger --wait prints the cycle it started and its result; stdout stays one JSON document', async () => {
  await resetData(stack.db);
  await insertDocuments(stack.db.admin, utcDate(new Date()), [{ daysLeft: 30 }, { daysLeft: 1 }]);
  await cli('schedule', 'apply');
  // The previous test's cycle has ended, but the schedule lists it as running for a moment longer;
  // a trigger then is skipped (that case is the next test's).
  const schedule = stack.client.schedule.getHandle(scheduleId);
  for (let i = 0; i < 100 && (await schedule.describe()).info.runningActions.length > 0; i++) {
    await sleep(100);
  }

  const printed = await cli('schedule', 'trigger', '--wait');

  expect(printed).toEqual(
    expect.objectContaining({
      triggered: true,
      skipped: false,
      workflowId: expect.stringMatching(/^document-expiry-reminder-cycle/),
      result: expect.objectContaining({ status: 'completed', remindersSent: 2, ownersNotified: 2 }),
    }),
  );
  expect((await outbox(stack.db.admin)).map((r) => r.correlation_id)).toEqual([printed.workflowId, printed.workflowId]);
  // Whatever progress was shown went to stderr, as whole lines in this non-terminal run.
  for (const line of stderrOfLastCli.split('\n').filter(Boolean))
    expect(line).toMatch(/^cycle as of \d{4}-\d{2}-\d{2} · page \d+ · owners \d+ done/);
});

test('a trigger skipped while a cycle runs is followed to that running cycle, not to an earlier one', async () => {
  // No worker polls this queue, so the first cycle stays running and the second trigger is skipped.
  const idle = testConfig({ TEMPORAL_TASK_QUEUE: `client-test-idle-${crypto.randomUUID()}` });
  const idleScheduleId = `client-test-idle-${crypto.randomBytes(4).toString('hex')}`;
  await applySchedule(stack.client, idle, idleScheduleId);
  try {
    const beforeFirst = await scheduleActionRuns(stack.client, idleScheduleId);
    await triggerSchedule(stack.client, idleScheduleId);
    const first = await cycleStartedBy(stack.client, idleScheduleId, beforeFirst);
    expect(first.skipped).toBe(false);

    const beforeSecond = await scheduleActionRuns(stack.client, idleScheduleId);
    await triggerSchedule(stack.client, idleScheduleId);
    const second = await cycleStartedBy(stack.client, idleScheduleId, beforeSecond);

    expect(second).toEqual({ ...first, skipped: true });
    await stack.client.workflow.getHandle(first.workflowId, first.firstExecutionRunId).terminate('test done');
  } finally {
    await stack.client.schedule.getHandle(idleScheduleId).delete();
  }
});

test('the progress line follows a running cycle through its query and never runs ahead of the result', async () => {
  await resetData(stack.db);
  const asOf = '2025-06-01';
  await insertDocuments(
    stack.db.admin,
    asOf,
    Array.from({ length: 60 }, (_, i) => ({ daysLeft: i % 31 })),
  );
  const handle = await stack.client.workflow.start<CycleWorkflow>('documentExpiryReminderCycle', {
    taskQueue,
    workflowId: `client-test-progress-${crypto.randomUUID()}`,
    args: [{ asOf, batchSize: 2, ownerGroupSize: 1, ownerConcurrency: 1 }],
  });
  const lines: string[] = [];

  const result = await resultWithProgress(handle, { out: { write: (t: string) => lines.push(t) }, intervalMs: 25 });

  expect(result).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 60 }));
  expect(lines.length).toBeGreaterThan(1);
  let previous = -1;
  for (const line of lines) {
    const m =
      /^cycle as of 2025-06-01 · page (\d+) · owners (\d+) done, (\d+) failed · (\d+) reminders · \d+ s\n$/.exec(line);
    expect(m).not.toBeNull();
    const reminders = Number(m![4]);
    expect(reminders).toBeGreaterThanOrEqual(previous);
    expect(reminders).toBeLessThanOrEqual(result.remindersSent);
    expect(Number(m![2])).toBeLessThanOrEqual(result.ownersProcessed);
    previous = reminders;
  }
});

test('cycle run rejects a malformed --as-of before contacting anything', async () => {
  await expect(cli('cycle', 'run', '--as-of', '2027-02-30')).rejects.toThrow(/expected a calendar date YYYY-MM-DD/);
});

test('cycle run refuses an --as-of after today (a typo for this year) before starting anything', async () => {
  await resetData(stack.db);
  const today = utcDate(new Date());
  const typo = `${Number(today.slice(0, 4)) + 1}${today.slice(4)}`;
  // Due at 30 today; "expired" as of the typo.
  await insertDocuments(stack.db.admin, today, [{ daysLeft: 20 }]);

  await expect(cli('cycle', 'run', '--as-of', typo, '--wait')).rejects.toThrow(
    `--as-of ${typo} is after today's UTC date (${today}): a cycle as of a later day would send reminders early and prune the markers of documents still in the window; nothing was started`,
  );
  // Today itself is fine.
  expect(await cli('cycle', 'run', '--as-of', today, '--wait')).toEqual(
    expect.objectContaining({ result: expect.objectContaining({ status: 'completed', remindersSent: 1 }) }),
  );
  expect(await outbox(stack.db.admin)).toHaveLength(1);
});
