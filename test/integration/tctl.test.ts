/**
 * The legacy `tctl` CLI (v1.18, end of support since 2025-09-30; its successor is `temporal`) against the
 * dev server (Server 1.29.1): the runbook's tctl commands pause, unpause, trigger and backfill the
 * schedule, describe it, and find cycles with `workflow list --query`, and the effect is checked through
 * the TypeScript client. tctl is `scripts/build-tctl.sh`'s (TCTL_PATH, else built from ops/tctl with Go on
 * first use and cached, as the stack builds the `temporal` CLI), so none of these tests is skipped.
 * docs/TCTL.md has the commands.
 *
 * Each test creates its own schedule (unique id) whose action starts the cycle workflow on a task queue no
 * worker polls, so started cycles stay Running for as long as the test looks at them; afterAll deletes the
 * schedules and terminates those cycles.
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { ScheduleOverlapPolicy, type ScheduleDescription } from '@temporalio/client';
import { WORKFLOW_TYPE } from '../../src/domain/names';
import { ensureSearchAttributes } from '../../src/operations/schedule';
import { REMINDER_AS_OF, REMINDER_OUTCOME, REMINDERS_SENT } from '../../src/domain/search-attributes';
import { eventually } from '../support/wait';
import type { CycleWorkflow } from '../../src/workflows';
import { useIntegration } from '../support/harness';

const run = promisify(execFile);

const BUILD_SCRIPT = path.resolve(__dirname, '..', '..', 'scripts', 'build-tctl.sh');
/** The first build downloads tctl's modules and compiles them: 2-3 minutes on 2 cores, more when busy. */
const BUILD_TIMEOUT_MS = 15 * 60_000;

/**
 * tctl's path: TCTL_PATH, or the cached build of ops/tctl (built now on first use); the script prints it
 * last on stdout, and its progress on stderr, passed through so a first build does not look hung.
 */
async function buildTctl(): Promise<string> {
  const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'], timeout: BUILD_TIMEOUT_MS });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const binary = stdout.trim().split('\n').pop();
  if (code !== 0 || !binary) throw new Error(`${BUILD_SCRIPT} failed (exit ${code}); what it said is above`);
  return binary;
}

let tctlPath: string | undefined;
const stack = useIntegration('tctl', { client: true, database: false });

function temporalAddress(): string {
  const value = process.env.TEMPORAL_ADDRESS;
  if (!value) throw new Error('TEMPORAL_ADDRESS is not set: the test stack sets it (run through jest’s global setup)');
  return value;
}

/** Runs tctl against the dev server; rejects with its stderr (minus the deprecation notice) on a non-zero exit. */
async function tctl(...args: string[]): Promise<string> {
  try {
    if (!tctlPath) throw new Error('tctl is not built yet: the suite’s beforeAll builds it');
    const { stdout } = await run(tctlPath, ['--address', temporalAddress(), '--namespace', 'default', ...args], {
      timeout: 30_000,
    });
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    const stderr = (e.stderr ?? '').replace(/^DEPRECATION NOTICE:.*$/m, '').trim();
    throw new Error(`tctl ${args.join(' ')} failed: ${stderr || e.message}`);
  }
}

interface Payload {
  data?: string;
}
/** One row of `tctl workflow list --pjson`. */
interface ListedWorkflow {
  execution: { workflowId: string; runId: string };
  type: { name: string };
  status: string;
  searchAttributes?: { indexedFields?: Record<string, Payload> };
}

/** `tctl workflow list --query … --pjson`, parsed. */
async function tctlList(query: string): Promise<ListedWorkflow[]> {
  return JSON.parse(await tctl('workflow', 'list', '--query', query, '--pjson')) as ListedWorkflow[];
}

/** A search attribute of a `--pjson` listing: base64 JSON payloads. */
function attribute(wf: ListedWorkflow, name: string): unknown {
  const data = wf.searchAttributes?.indexedFields?.[name]?.data;
  return data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
}

/** A schedule of the production shape (every 24h at 03:00 UTC, overlap skip) on a queue with no worker. */
async function createSchedule(): Promise<{ scheduleId: string; workflowIdPrefix: string }> {
  const suffix = crypto.randomBytes(4).toString('hex');
  const scheduleId = `tctl-test-${suffix}`;
  const taskQueue = `tctl-test-idle-${suffix}`;
  const workflowIdPrefix = `tctl-test-cycle-${suffix}`;
  stack.trackSchedule(scheduleId);
  stack.trackTaskQueue(taskQueue);
  await stack.client.schedule.create({
    scheduleId,
    spec: { intervals: [{ every: '24h', offset: '3h' }] },
    action: { type: 'startWorkflow', workflowType: WORKFLOW_TYPE, taskQueue, workflowId: workflowIdPrefix, args: [{}] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1h' },
    state: { paused: false },
  });
  return { scheduleId, workflowIdPrefix };
}

const describeSchedule = (scheduleId: string): Promise<ScheduleDescription> =>
  stack.client.schedule.getHandle(scheduleId).describe();

describe('tctl against the dev server', () => {
  beforeAll(async () => {
    tctlPath = await buildTctl();
    // The stack registers them; a stack adopted from the environment may not have.
    await ensureSearchAttributes(stack.client, 'default');
  }, BUILD_TIMEOUT_MS);

  test('tctl --version is the v1.18 line', async () => {
    // Built from v1.18.0 (ops/tctl); v1.18.1-v1.18.4 report 1.18.0 too (the string was not bumped).
    expect(await tctl('--version')).toMatch(/^tctl version 1\.18\.\d+/);
  });

  test('schedule toggle --pause stores the reason as the note; --unpause resumes with its own note', async () => {
    const { scheduleId } = await createSchedule();
    const reason = 'INC-314: notifications outage';

    expect(await tctl('schedule', 'toggle', '--sid', scheduleId, '--pause', '--reason', reason)).toMatch(
      /Schedule updated/,
    );

    expect((await describeSchedule(scheduleId)).state).toEqual(expect.objectContaining({ paused: true, note: reason }));
    // tctl's own describe shows the same state.
    const raw = JSON.parse(await tctl('schedule', 'describe', '--sid', scheduleId, '--print_raw'));
    expect(raw.schedule.state).toEqual({ paused: true, notes: reason });

    await tctl('schedule', 'toggle', '--sid', scheduleId, '--unpause', '--reason', 'INC-314 resolved');
    expect((await describeSchedule(scheduleId)).state).toEqual(
      expect.objectContaining({ paused: false, note: 'INC-314 resolved' }),
    );
  });

  test('schedule trigger starts a cycle now, and a second trigger with the skip policy while it runs is skipped', async () => {
    const { scheduleId, workflowIdPrefix } = await createSchedule();

    expect(await tctl('schedule', 'trigger', '--sid', scheduleId, '--overlap_policy', 'Skip')).toMatch(
      /Trigger request sent/,
    );

    const first = await eventually(
      async () => (await describeSchedule(scheduleId)).info.runningActions[0],
      'the triggered cycle',
    );
    expect(first.workflow.workflowId).toMatch(
      new RegExp(`^${workflowIdPrefix}-\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`),
    );
    const started = await stack.client.workflow.getHandle<CycleWorkflow>(first.workflow.workflowId).describe();
    expect(started.type).toBe(WORKFLOW_TYPE);
    expect(started.status.name).toBe('RUNNING');

    await tctl('schedule', 'trigger', '--sid', scheduleId, '--overlap_policy', 'Skip');
    const after = await eventually(async () => {
      const d = await describeSchedule(scheduleId);
      return d.info.numActionsSkippedOverlap === 1 ? d : undefined;
    }, 'the second trigger to be skipped');
    expect(after.info.recentActions).toHaveLength(1);
    expect(after.info.runningActions.map((a) => a.workflow.workflowId)).toEqual([first.workflow.workflowId]);

    // The runbook's way to find it: workflow list with a visibility query, and its history.
    const listed = await eventually(async () => {
      const l = await tctlList(`TemporalScheduledById = "${scheduleId}" AND ExecutionStatus = "Running"`);
      return l.length > 0 ? l : undefined;
    }, 'the cycle in visibility');
    expect(listed.map((wf) => [wf.execution.workflowId, wf.type.name, wf.status])).toEqual([
      [first.workflow.workflowId, WORKFLOW_TYPE, 'Running'],
    ]);
    expect(await tctl('workflow', 'show', '--wid', first.workflow.workflowId)).toMatch(/WorkflowExecutionStarted/);
  });

  test('schedule trigger starts a cycle while the schedule is paused (a manual trigger ignores the pause)', async () => {
    const { scheduleId } = await createSchedule();
    await tctl('schedule', 'toggle', '--sid', scheduleId, '--pause', '--reason', 'maintenance');

    await tctl('schedule', 'trigger', '--sid', scheduleId, '--overlap_policy', 'Skip');

    const d = await eventually(async () => {
      const x = await describeSchedule(scheduleId);
      return x.info.runningActions.length > 0 ? x : undefined;
    }, 'the triggered cycle');
    expect(d.state).toEqual(expect.objectContaining({ paused: true, note: 'maintenance' }));
    expect(d.info.recentActions).toHaveLength(1);
  });

  test('schedule backfill over three days starts one cycle per day, at each day’s action time', async () => {
    const { scheduleId, workflowIdPrefix } = await createSchedule();
    const days = ['2026-03-01', '2026-03-02', '2026-03-03'];

    // AllowAll: no worker finishes the first cycle, and the schedule's own policy (skip) would drop the
    // other two. In production the worker runs them and the runbook uses BufferAll.
    await tctl(
      'schedule',
      'backfill',
      '--sid',
      scheduleId,
      '--overlap_policy',
      'AllowAll',
      '--start_time',
      `${days[0]}T00:00:00Z`,
      '--end_time',
      `${days[2]}T23:59:59Z`,
    );

    const listed = await eventually(async () => {
      const l = await tctlList(`TemporalScheduledById = "${scheduleId}"`);
      return l.length === 3 ? l : undefined;
    }, 'three backfilled cycles');
    const byStart = listed.map((wf) => [attribute(wf, 'TemporalScheduledStartTime'), wf.execution.workflowId]).sort();
    expect(byStart).toEqual(days.map((day) => [`${day}T03:00:00Z`, `${workflowIdPrefix}-${day}T03:00:00Z`]));
    // The schedule counts them as its actions (with AllowAll it does not track them as running).
    const d = await describeSchedule(scheduleId);
    expect(d.info.recentActions.map((a) => a.scheduledAt.toISOString()).sort()).toEqual(
      days.map((day) => `${day}T03:00:00.000Z`),
    );
  });

  test('workflow list --query filters on the cycle’s custom search attributes', async () => {
    const queue = `tctl-test-idle-${crypto.randomBytes(4).toString('hex')}`;
    stack.trackTaskQueue(queue);
    const workflowId = `tctl-test-attributes-${crypto.randomBytes(4).toString('hex')}`;
    // Started with the attributes a cycle upserts as it ends (no worker: it stays Running, attributes as given).
    await stack.client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
      taskQueue: queue,
      workflowId,
      args: [{}],
      typedSearchAttributes: [
        { key: REMINDER_AS_OF, value: new Date('2026-03-01T03:00:00Z') },
        { key: REMINDER_OUTCOME, value: 'time-limit' },
        { key: REMINDERS_SENT, value: 42 },
      ],
    });

    const query = `ReminderOutcome = "time-limit" AND ReminderAsOf >= "2026-03-01T00:00:00Z" AND RemindersSent >= 40 AND WorkflowId = "${workflowId}"`;
    const listed = await eventually(async () => {
      const l = await tctlList(query);
      return l.length > 0 ? l : undefined;
    }, 'the workflow in visibility');
    expect(listed.map((wf) => wf.execution.workflowId)).toEqual([workflowId]);
    expect(attribute(listed[0], 'ReminderOutcome')).toBe('time-limit');
    expect(attribute(listed[0], 'RemindersSent')).toBe(42);
    expect(await tctlList(`ReminderOutcome = "completed" AND WorkflowId = "${workflowId}"`)).toEqual([]);
  });
});
