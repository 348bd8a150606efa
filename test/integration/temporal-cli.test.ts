/**
 * The runbook's `temporal` CLI commands (the binary the stack runs the dev server with, v1.5.1) against
 * the schedule `schedule apply` creates and the real cycle: trigger with the skip policy, toggle with a
 * reason, backfill with AsOf from the action time, and visibility queries on the cycle's search
 * attributes. Each test has its own schedule id and task queue.
 */
import crypto from 'node:crypto';
import type { CycleResult } from '../../src/domain/cycle';
import { addDays, utcDate } from '../../src/domain/dates';
import { applySchedule } from '../../src/operations/schedule';
import { insertDocuments, outbox } from '../support/data';
import { testConfig } from '../support/stack';
import { eventually, sleep } from '../support/wait';
import type { CycleWorkflow } from '../../src/workflows';
import { useIntegration } from '../support/harness';
import { stackEnv, temporalCli, temporalJson } from '../support/temporal-cli';

const stack = useIntegration('temporal_cli', { client: true });

interface Payload {
  data?: string;
}
interface ListedWorkflow {
  execution: { workflowId: string; runId: string };
  status: string;
  searchAttributes?: { indexedFields?: Record<string, Payload> };
}
interface DescribedSchedule {
  schedule: { state: { paused?: boolean; notes?: string } };
  info: {
    actionCount?: string;
    overlapSkipped?: string;
    runningWorkflows?: { workflowId: string; runId: string }[];
  };
}

/** A search attribute of a `--output json` listing: base64 JSON payloads. */
function attribute(wf: ListedWorkflow, name: string): unknown {
  const data = wf.searchAttributes?.indexedFields?.[name]?.data;
  return data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
}

const describeSchedule = (scheduleId: string) =>
  temporalJson<DescribedSchedule>('schedule', 'describe', '--schedule-id', scheduleId);
const listWorkflows = (query: string) => temporalJson<ListedWorkflow[]>('workflow', 'list', '--query', query);

function newScheduleId(): string {
  const id = `temporal-cli-test-${crypto.randomBytes(4).toString('hex')}`;
  stack.trackSchedule(id);
  return id;
}

const newWorker = () => stack.startWorker();

beforeAll(() => {
  stackEnv('TEMPORAL_CLI_PATH');
});

test('temporal schedule trigger starts a cycle, and a second trigger while it runs is skipped', async () => {
  const scheduleId = newScheduleId();
  // No worker polls this queue, so the first cycle stays Running for as long as the test needs.
  const idleQueue = `temporal-cli-idle-${crypto.randomUUID()}`;
  stack.trackTaskQueue(idleQueue);
  await applySchedule(stack.client, testConfig({ TEMPORAL_TASK_QUEUE: idleQueue }), scheduleId);

  await temporalCli('schedule', 'trigger', '--schedule-id', scheduleId, '--overlap-policy', 'Skip');
  const first = await eventually(
    async () => (await describeSchedule(scheduleId)).info.runningWorkflows?.[0],
    'the first cycle to run',
  );
  expect(first.workflowId).toMatch(/^document-expiry-reminder-cycle-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  await temporalCli('schedule', 'trigger', '--schedule-id', scheduleId, '--overlap-policy', 'Skip');
  const after = await eventually(async () => {
    const d = await describeSchedule(scheduleId);
    return d.info.overlapSkipped === '1' ? d : undefined;
  }, 'the second trigger to be skipped');

  expect(after.info.actionCount).toBe('1');
  expect(after.info.runningWorkflows).toEqual([first]);
  const listed = await eventually(async () => {
    const l = await listWorkflows(`TemporalScheduledById = "${scheduleId}"`);
    return l.length > 0 ? l : undefined;
  }, 'the cycle in visibility');
  expect(listed.map((wf) => [wf.execution.workflowId, wf.status])).toEqual([
    [first.workflowId, 'WORKFLOW_EXECUTION_STATUS_RUNNING'],
  ]);
  expect(await temporalJson('workflow', 'count', '--query', `TemporalScheduledById = "${scheduleId}"`)).toEqual({
    count: '1',
  });

  await temporalCli('workflow', 'terminate', '--workflow-id', first.workflowId, '--reason', 'temporal-cli test: done');
  await temporalCli('schedule', 'delete', '--schedule-id', scheduleId);
});

test('temporal schedule toggle --pause stores the reason as the note, and no cycle starts while paused', async () => {
  const w = await newWorker();
  const scheduleId = newScheduleId();
  // Every 2 s, on a queue with a worker: unpaused, it starts a cycle every other second.
  await applySchedule(
    stack.client,
    testConfig({
      TEMPORAL_TASK_QUEUE: w.taskQueue,
      REMINDER_POLLING_INTERVAL: '2s',
      REMINDER_POLLING_OFFSET: '0s',
      REMINDER_MAX_RUN_DURATION: '30s',
    }),
    scheduleId,
  );
  const reason = 'INC-314: notifications outage';

  await temporalCli('schedule', 'toggle', '--schedule-id', scheduleId, '--pause', '--reason', reason);

  const paused = await describeSchedule(scheduleId);
  expect(paused.schedule.state).toEqual({ paused: true, notes: reason });
  const pausedAt = new Date();
  const taken = Number(paused.info.actionCount ?? 0);
  await sleep(5_000); // two and a half intervals
  const later = await describeSchedule(scheduleId);
  expect(later.schedule.state).toEqual({ paused: true, notes: reason });
  expect(Number(later.info.actionCount ?? 0)).toBe(taken);
  expect(
    await listWorkflows(`TemporalScheduledById = "${scheduleId}" AND StartTime > "${pausedAt.toISOString()}"`),
  ).toEqual([]);

  // The same schedule unpaused does start cycles, so the silence above was the pause.
  await temporalCli('schedule', 'toggle', '--schedule-id', scheduleId, '--unpause', '--reason', 'INC-314 resolved');
  const resumed = await eventually(
    async () => {
      const d = await describeSchedule(scheduleId);
      return Number(d.info.actionCount ?? 0) > taken ? d : undefined;
    },
    'a cycle after unpausing',
    10_000,
  );
  expect(resumed.schedule.state).toEqual({ notes: 'INC-314 resolved' });

  // Stop it, then let the cycle it may still be running finish before the worker stops.
  await temporalCli('schedule', 'toggle', '--schedule-id', scheduleId, '--pause', '--reason', 'test done');
  const { info } = await describeSchedule(scheduleId);
  await temporalCli('schedule', 'delete', '--schedule-id', scheduleId);
  for (const wf of info.runningWorkflows ?? [])
    await stack.client.workflow.getHandle<CycleWorkflow>(wf.workflowId, wf.runId).result();
});

test('temporal schedule backfill over three past days starts three cycles that run as of now: the first sends, the others find nothing', async () => {
  const w = await newWorker();
  const scheduleId = newScheduleId();
  await applySchedule(stack.client, testConfig({ TEMPORAL_TASK_QUEUE: w.taskQueue }), scheduleId);
  // Days no other test backfills (workflow ids carry the action time).
  const today = utcDate(new Date());
  const days = [addDays(today, -50), addDays(today, -49), addDays(today, -48)];
  // Three days left today: 53 on the first backfilled day, when a stale run would have sent nothing.
  const [doc] = await insertDocuments(stack.db.admin, today, [{ daysLeft: 3 }]);

  await temporalCli(
    'schedule',
    'backfill',
    '--schedule-id',
    scheduleId,
    '--start-time',
    `${days[0]}T00:00:00Z`,
    '--end-time',
    `${days[2]}T23:59:59Z`,
    '--overlap-policy',
    'BufferAll',
  );

  const completed = await eventually(
    async () => {
      const l = await listWorkflows(`TemporalScheduledById = "${scheduleId}" AND ExecutionStatus = "Completed"`);
      return l.length === 3 ? l : undefined;
    },
    'three completed cycles',
    60_000,
  );
  const byDay = completed
    .map((wf) => ({
      workflowId: wf.execution.workflowId,
      runId: wf.execution.runId,
      reminderAsOfDate: String(attribute(wf, 'ReminderAsOf')).slice(0, 10),
      scheduledStart: attribute(wf, 'TemporalScheduledStartTime'),
    }))
    .sort((a, b) => String(a.scheduledStart).localeCompare(String(b.scheduledStart)));
  expect(byDay).toEqual(
    days.map((day) => ({
      workflowId: `document-expiry-reminder-cycle-${day}T03:00:00Z`,
      runId: expect.any(String),
      reminderAsOfDate: today,
      scheduledStart: `${day}T03:00:00Z`,
    })),
  );
  const sent: number[] = [];
  for (const [i, day] of days.entries()) {
    // With the run id: these workflow ids repeat whenever the same days are backfilled again.
    const { workflowId, runId } = byDay[i];
    const described = await temporalJson<{ result?: CycleResult }>(
      'workflow',
      'describe',
      '--workflow-id',
      workflowId,
      '--run-id',
      runId,
    );
    expect(described.result).toEqual(
      expect.objectContaining({ status: 'completed', scheduledAt: `${day}T03:00:00.000Z` }),
    );
    expect(described.result!.asOf.slice(0, 10)).toBe(today);
    sent.push(described.result!.remindersSent);
  }
  expect(sent).toEqual([1, 0, 0]);
  const rows = await outbox(stack.db.admin);
  expect(
    rows.map((r) => [
      r.correlation_id,
      r.payload.remindedAt.slice(0, 10),
      r.payload.documents.map((d) => [d.documentId, d.thresholdDays, d.daysLeft]),
    ]),
  ).toEqual([[`document-expiry-reminder-cycle-${days[0]}T03:00:00Z`, today, [[doc.id, 7, 3]]]]);
});

test('temporal workflow list with a query on ReminderOutcome, RemindersSent and ReminderAsOf finds the cycle', async () => {
  const w = await newWorker();
  await insertDocuments(stack.db.admin, '2025-08-01', [{ daysLeft: 1 }]);
  const prefix = `temporal-cli-list-${crypto.randomBytes(3).toString('hex')}`;
  // Started with the CLI too, as the runbook starts a cycle with explicit input.
  for (const n of [1, 2]) {
    await temporalCli(
      'workflow',
      'start',
      '--type',
      'documentExpiryReminderCycle',
      '--task-queue',
      w.taskQueue,
      '--workflow-id',
      `${prefix}-${n}`,
      '--input',
      '{"asOf": "2025-08-01"}',
    );
    await stack.client.workflow.getHandle<CycleWorkflow>(`${prefix}-${n}`).result();
  }
  const scope = `TaskQueue = "${w.taskQueue}"`;

  const sent = await eventually(async () => {
    const l = await listWorkflows(`${scope} AND ReminderOutcome = "completed" AND RemindersSent >= 1`);
    return l.length > 0 ? l : undefined;
  }, 'the cycle that sent a reminder');
  expect(
    sent.map((wf) => [wf.execution.workflowId, attribute(wf, 'RemindersSent'), attribute(wf, 'ReminderOutcome')]),
  ).toEqual([[`${prefix}-1`, 1, 'completed']]);
  // A day is a range: `ReminderAsOf = "2025-08-01T00:00:00Z"` matches nothing on the dev server's SQLite
  // visibility, which keeps datetimes in a finer format than the query literal.
  const day = 'ReminderAsOf >= "2025-08-01T00:00:00Z" AND ReminderAsOf < "2025-08-02T00:00:00Z"';
  const both = await eventually(async () => {
    const l = await listWorkflows(`${scope} AND ${day} AND ReminderOutcome = "completed"`);
    return l.length === 2 ? l : undefined;
  }, 'both cycles by AsOf');
  expect(both.map((wf) => wf.execution.workflowId).sort()).toEqual([`${prefix}-1`, `${prefix}-2`]);
  expect((await listWorkflows(`${scope} AND RemindersSent = 0`)).map((wf) => wf.execution.workflowId)).toEqual([
    `${prefix}-2`,
  ]);
  expect(await listWorkflows(`${scope} AND ReminderAsOf >= "2025-08-02T00:00:00Z"`)).toEqual([]);
});

test("OPERATIONS' `temporal worker deployment` commands, as written: make current, describe, ramp and end it, list a version's cycles, back to unversioned", async () => {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const deployment = `test-${crypto.randomUUID().slice(0, 8)}`;
  stack.trackTaskQueue(taskQueue);
  const config = { ...testConfig(), temporal: { ...testConfig().temporal, taskQueue, deploymentName: deployment } };
  for (const buildId of ['n', 'n-plus-1']) {
    await stack.startWorker({ taskQueue, config, version: { deploymentName: deployment, buildId } });
  }
  const setCurrent = (...args: string[]) =>
    temporalCli('worker', 'deployment', 'set-current-version', '--deployment-name', deployment, ...args, '--yes');
  const setRamping = (...args: string[]) =>
    temporalCli('worker', 'deployment', 'set-ramping-version', '--deployment-name', deployment, ...args, '--yes');
  /** Where new cycles go, as `worker deployment describe` prints it. */
  const routing = async () => {
    const described = await temporalJson<{
      routingConfig?: {
        currentVersionBuildID?: string;
        rampingVersionBuildID?: string;
        rampingVersionPercentage?: number;
      };
    }>('worker', 'deployment', 'describe', '--name', deployment);
    const r = described.routingConfig ?? {};
    return {
      current: r.currentVersionBuildID ?? '',
      ramping: r.rampingVersionBuildID ?? '',
      percent: r.rampingVersionPercentage ?? 0,
    };
  };

  // A version is known to the server once its workers have polled.
  await eventually(
    () =>
      setCurrent('--build-id', 'n').then(
        () => true,
        () => undefined,
      ),
    'version n made current',
  );
  expect(await routing()).toEqual({ current: 'n', ramping: '', percent: 0 });
  const version = await temporalJson<Record<string, unknown>>(
    'worker',
    'deployment',
    'describe-version',
    '--deployment-name',
    deployment,
    '--build-id',
    'n',
  );
  // The version serves the test's task queue: its workers polled it.
  expect(version).toEqual(
    expect.objectContaining({
      BuildID: 'n',
      taskQueuesInfos: expect.arrayContaining([{ name: taskQueue, type: 'workflow' }]),
    }),
  );

  await eventually(
    () =>
      setRamping('--build-id', 'n-plus-1', '--percentage', '10').then(
        () => true,
        () => undefined,
      ),
    'n-plus-1 ramping',
  );
  expect(await routing()).toEqual({ current: 'n', ramping: 'n-plus-1', percent: 10 });
  await setRamping('--delete');
  expect(await routing()).toEqual({ current: 'n', ramping: '', percent: 0 });

  const handle = await stack.startCycle({ asOf: '2025-08-01' }, { taskQueue });
  await handle.result();
  const query = `TemporalWorkerDeploymentVersion = '${deployment}:n' AND TaskQueue = '${taskQueue}'`;
  const listed = await eventually(async () => {
    const l = await listWorkflows(query);
    return l.length > 0 ? l : undefined;
  }, "the cycle in version n's list");
  expect(listed.map((wf) => wf.execution.workflowId)).toEqual([handle.workflowId]);
  // Its open cycles: none once it ended (the CLI prints no count at zero).
  const open = await temporalJson<{ count?: string }>(
    'workflow',
    'count',
    '--query',
    `${query} AND ExecutionStatus = 'Running'`,
  );
  expect(Number(open.count ?? 0)).toBe(0);

  await setCurrent('--unversioned');
  expect((await routing()).current).toBe('');
});
