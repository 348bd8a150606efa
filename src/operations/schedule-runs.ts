/**
 * Runs of the schedule started by hand: a trigger (and finding the cycle it led to) and a backfill of past days.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { addDays, utcDate } from '../domain/dates';
import { SCHEDULE_ID } from '../domain/names';
import { describeSchedule } from './schedule';

/** Starts a cycle now through the schedule; skipped (not queued) while a cycle is running. */
export async function triggerSchedule(client: Client, scheduleId: string = SCHEDULE_ID): Promise<void> {
  // The SDK's default for a manual trigger is allow-all; the job's policy is skip.
  await client.schedule.getHandle(scheduleId).trigger(ScheduleOverlapPolicy.SKIP);
}

/**
 * The runs the schedule has started or is running (first execution run ids: a workflow id, named to the
 * second, can repeat), to tell a trigger's cycle from earlier ones.
 */
export async function scheduleActionRuns(client: Client, scheduleId: string): Promise<Set<string>> {
  const { info } = await client.schedule.getHandle(scheduleId).describe();
  return new Set([
    ...info.recentActions.map((a) => a.action.workflow.firstExecutionRunId),
    ...info.runningActions.map((a) => a.workflow.firstExecutionRunId),
  ]);
}

/**
 * The cycle a trigger led to, given the runs from before it (`scheduleActionRuns`): the one it started,
 * or, when a cycle was already running (the skip policy drops the trigger), that one, which does today's
 * work. The schedule's list of running actions lags behind a run's end, so a listed run counts as
 * running only when the workflow itself says so. Waits up to `timeoutMs`.
 */
export async function cycleStartedBy(
  client: Client,
  scheduleId: string,
  before: Set<string>,
  timeoutMs = 30_000,
): Promise<{ workflowId: string; firstExecutionRunId: string; skipped: boolean }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { info } = await client.schedule.getHandle(scheduleId).describe();
    const started = info.recentActions.find((a) => !before.has(a.action.workflow.firstExecutionRunId))?.action;
    if (started) {
      return {
        workflowId: started.workflow.workflowId,
        firstExecutionRunId: started.workflow.firstExecutionRunId,
        skipped: false,
      };
    }
    for (const running of info.runningActions) {
      if (!before.has(running.workflow.firstExecutionRunId)) continue;
      const { status } = await client.workflow
        .getHandle(running.workflow.workflowId, running.workflow.firstExecutionRunId)
        .describe();
      if (status.name === 'RUNNING') {
        return {
          workflowId: running.workflow.workflowId,
          firstExecutionRunId: running.workflow.firstExecutionRunId,
          skipped: true,
        };
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `schedule ${scheduleId} recorded no cycle within ${timeoutMs / 1000} s of the trigger; it may have been ` +
          'skipped while an earlier cycle was ending (see schedule describe)',
      );
    }
    await sleep(250);
  }
}

/** Temporal's scheduler buffers at most this many starts per schedule; more would be dropped. */
const MAX_BACKFILL_ACTIONS = 1000;

/**
 * The instants a backfill of the UTC days `from`..`to` (inclusive) covers: from `from` 00:00:00.000 to
 * `to` 23:59:59.999. Temporal includes both ends, so every action time whose UTC date lies in the range is
 * taken, and no other: with the default 24h interval at the 3h offset, that is 03:00 UTC of each day.
 */
function backfillRange(from: string, to: string): { start: Date; end: Date } {
  return {
    start: new Date(`${from}T00:00:00.000Z`),
    end: new Date(Date.parse(`${addDays(to, 1)}T00:00:00.000Z`) - 1),
  };
}

/**
 * The action times of interval specs in `[start, end]`, in order, at most `limit + 1` of them (so a
 * caller can tell "more than limit"). Temporal counts intervals from the Unix epoch: an interval matches
 * `offset + n × every`.
 */
function intervalActionTimes(
  intervals: readonly { everyMs: number; offsetMs: number }[],
  start: Date,
  end: Date,
  limit: number,
): Date[] {
  const times = new Set<number>();
  for (const { everyMs, offsetMs } of intervals) {
    const phase = (((offsetMs - start.getTime()) % everyMs) + everyMs) % everyMs;
    for (let t = start.getTime() + phase; t <= end.getTime() && times.size <= limit; t += everyMs) times.add(t);
  }
  return [...times]
    .sort((a, b) => a - b)
    .slice(0, limit + 1)
    .map((t) => new Date(t));
}

/** What `schedule backfill` did. */
export interface BackfillReport {
  scheduleId: string;
  from: string;
  to: string;
  startTime: string;
  endTime: string;
  overlap: 'BUFFER_ALL';
  /**
   * The action times the backfill covers; each becomes one cycle, which runs as of its own start, not as of
   * that time (a past day is caught up as of now: `defaultAsOf` in src/domain/cycle-input.ts).
   */
  actionTimes: string[];
}

/**
 * Runs the schedule's actions for the UTC days `from`..`to` (see {@link backfillRange}), one after another
 * (buffer-all), each cycle computing reminders as of its own start. Refuses, before starting
 * anything, a range that is reversed, covers an action time in the future (its cycle would remind early),
 * covers no action time, or covers more than {@link MAX_BACKFILL_ACTIONS}; the action times are computed
 * from the schedule's intervals, so a schedule with calendars is refused too.
 */
export async function backfillSchedule(
  client: Client,
  from: string,
  to: string,
  options: { scheduleId?: string; now?: Date } = {},
): Promise<BackfillReport> {
  const scheduleId = options.scheduleId ?? SCHEDULE_ID;
  const now = options.now ?? new Date();
  if (from > to) throw new Error(`--from ${from} is after --to ${to}`);
  const today = utcDate(now);
  if (to > today) {
    throw new Error(
      `--to ${to} is after today's UTC date (${today}): its cycles would compute reminders as of a later day and ` +
        'send them early; nothing was backfilled',
    );
  }
  const { start, end } = backfillRange(from, to);
  const { spec } = await describeSchedule(client, scheduleId);
  if (spec.calendars > 0 || spec.intervals.length === 0) {
    throw new Error(`schedule ${scheduleId} is not interval-based; backfill it with the temporal CLI`);
  }
  // The schedule's own start and end bound its backfills too.
  const first = spec.startAt && Date.parse(spec.startAt) > start.getTime() ? new Date(spec.startAt) : start;
  const last = spec.endAt && Date.parse(spec.endAt) < end.getTime() ? new Date(spec.endAt) : end;
  const times = intervalActionTimes(spec.intervals, first, last, MAX_BACKFILL_ACTIONS);
  if (times.length === 0) throw new Error(`no action time of schedule ${scheduleId} falls on ${from}..${to}`);
  if (times.length > MAX_BACKFILL_ACTIONS) {
    throw new Error(
      `${from}..${to} covers more than ${MAX_BACKFILL_ACTIONS} action times of schedule ${scheduleId}; ` +
        'Temporal buffers at most that many, split the range',
    );
  }
  const latest = times[times.length - 1];
  if (latest > now) {
    throw new Error(
      `${from}..${to} covers the action time ${latest.toISOString()}, which is in the future: ` +
        'its cycle would compute reminders as of that time and send them early',
    );
  }
  await client.schedule.getHandle(scheduleId).backfill({ start, end, overlap: ScheduleOverlapPolicy.BUFFER_ALL });
  return {
    scheduleId,
    from,
    to,
    startTime: start.toISOString(),
    endTime: end.toISOString(),
    overlap: 'BUFFER_ALL',
    actionTimes: times.map((t) => t.toISOString()),
  };
}
