/** The Temporal Schedule that starts one cycle per polling interval (docs/DESIGN.md#names), and what operators do with it. */
import {
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type Client,
  type IntervalSpecDescription,
  type ScheduleDescription,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import { msOptionalToNumber } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';
import { scheduledCycleTimeoutMs } from '../domain/cycle';
import type { documentExpiryReminderCycle } from '../workflows';
import { SCHEDULE_ID, SCHEDULED_WORKFLOW_ID, WORKFLOW_TYPE } from '../domain/names';
import { CYCLE_SEARCH_ATTRIBUTES } from '../domain/search-attributes';
import { scheduledCycleMetadata } from '../temporal/ui-metadata';
import { errorOf } from '../domain/failures';

type CycleWorkflow = typeof documentExpiryReminderCycle;

function desired(
  config: Pick<Config, 'temporal' | 'schedule' | 'cycle'>,
  options: ApplyOptions,
): Omit<ScheduleOptions<ScheduleOptionsStartWorkflowAction<CycleWorkflow>>, 'scheduleId'> {
  const action: ScheduleOptionsStartWorkflowAction<CycleWorkflow> = {
    type: 'startWorkflow',
    workflowType: WORKFLOW_TYPE,
    taskQueue: config.temporal.taskQueue,
    workflowId: SCHEDULED_WORKFLOW_ID,
    // Empty input: the worker's configuration decides, and AsOf is the action time; a partition count
    // given to `schedule apply` is the one input it sets.
    args: [options.partitions ? { partitions: options.partitions } : {}],
    // A cycle stuck in a workflow-task failure loop would otherwise hold the schedule's one running
    // slot (overlap SKIP) forever; ended before the next tick, it cannot block that tick.
    workflowExecutionTimeout: scheduledCycleTimeoutMs(config.schedule.intervalMs),
    ...scheduledCycleMetadata(config),
  };
  return {
    spec: { intervals: [{ every: config.schedule.intervalMs, offset: config.schedule.offsetMs }] },
    action,
    policies: {
      // A tick while a cycle still runs is dropped: the next tick picks up whatever is left.
      overlap: ScheduleOverlapPolicy.SKIP,
      // A tick missed while Temporal was down runs when it is back, as long as its cycle could still end
      // before the next tick: an outage of a few hours at 03:00 still runs that day's cycle (as of its
      // action time), where a window of 1 h dropped it. Never more than one interval, so a long outage
      // does not replay every day it missed. Always sent: an update without it falls back to the
      // server's default of one year.
      catchupWindow: scheduledCycleTimeoutMs(config.schedule.intervalMs),
      pauseOnFailure: false,
    },
  };
}

/** What `schedule apply` may set beside the configuration. */
export interface ApplyOptions {
  /**
   * A fixed partition count for every scheduled cycle (docs/DESIGN.md#partitions); without it each cycle plans
   * its day. A later apply without it goes back to planning.
   */
  partitions?: number;
}

/**
 * Creates the schedule, or updates it in place.
 *
 * An update replaces the whole schedule (spec, action, policies and state), so anything it leaves out is
 * reset. The configuration owns the interval, the action and the policies; everything else an operator
 * may have set is carried over from the current schedule: pause state and note, the remaining-actions
 * limit, and the spec's jitter, start/end bounds, skip calendars and time zone. Calendars and cron
 * expressions are dropped, since the configured interval alone says when cycles run.
 *
 * The SDK reads the schedule and then writes it without a conflict token, so a pause that lands in
 * between those two calls is overwritten; re-check with `schedule describe` after applying during an
 * incident.
 * @returns whether it was created or updated.
 */
export async function applySchedule(
  client: Client,
  config: Pick<Config, 'temporal' | 'schedule' | 'cycle'>,
  scheduleId: string = SCHEDULE_ID,
  options: ApplyOptions = {},
): Promise<'created' | 'updated'> {
  const want = desired(config, options);
  try {
    await client.schedule.create({ scheduleId, ...want });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning) && errorOf(err)?.name !== 'ScheduleAlreadyRunning') throw err;
  }
  await client.schedule.getHandle(scheduleId).update<CycleWorkflow>((previous) => ({
    spec: {
      intervals: want.spec.intervals,
      jitter: previous.spec.jitter,
      startAt: previous.spec.startAt,
      endAt: previous.spec.endAt,
      skip: previous.spec.skip,
      timezone: previous.spec.timezone,
    },
    action: want.action,
    policies: want.policies,
    state: {
      paused: previous.state.paused,
      note: previous.state.note,
      remainingActions: previous.state.remainingActions,
    },
  }));
  return 'updated';
}

const INDEXED_TYPE: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  DATETIME: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  INT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
};

/**
 * Registers the cycle's custom search attributes in the namespace when missing. A cycle upserting an
 * unregistered attribute fails its workflow tasks, so `schedule apply` makes sure they exist first.
 * @returns the names it registered (empty when all were there).
 */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<string[]> {
  const operator = client.connection.operatorService;
  const { customAttributes } = await operator.listSearchAttributes({ namespace });
  const missing = CYCLE_SEARCH_ATTRIBUTES.filter((k) => !(k.name in (customAttributes ?? {})));
  if (missing.length > 0) {
    await operator.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED_TYPE[k.type]])),
    });
  }
  return missing.map((k) => k.name);
}

/** What `schedule describe` prints: the schedule's definition and what it did and will do. */
export interface ScheduleReport {
  scheduleId: string;
  spec: {
    intervals: { everyMs: number; offsetMs: number }[];
    calendars: number;
    jitterMs?: number;
    startAt?: string;
    endAt?: string;
    timezone?: string;
  };
  action: { workflowType: string; taskQueue: string; workflowIdPrefix?: string; workflowExecutionTimeoutMs?: number };
  policies: { overlap: string; catchupWindowMs: number; pauseOnFailure: boolean };
  state: { paused: boolean; note?: string; remainingActions?: number };
  info: {
    createdAt: string;
    lastUpdatedAt?: string;
    nextActionTimes: string[];
    /** Oldest first, as Temporal keeps them (the last ten). */
    recentActions: { scheduledAt: string; takenAt: string; workflowId: string; runId: string; status?: string }[];
    runningWorkflows: { workflowId: string; runId: string }[];
    actionsTaken: number;
    actionsSkippedOverlap: number;
    actionsMissedCatchupWindow: number;
  };
}

const STATUS_NAMES = temporal.api.enums.v1.WorkflowExecutionStatus;

/** `WORKFLOW_EXECUTION_STATUS_RUNNING` → `RUNNING`, as the SDK names statuses elsewhere. */
function statusName(code: temporal.api.enums.v1.WorkflowExecutionStatus | null | undefined): string | undefined {
  if (!code) return undefined;
  return STATUS_NAMES[code]?.replace(/^WORKFLOW_EXECUTION_STATUS_/, '');
}

/** Reads the schedule: spec, policies, pause state and note, next action times and recent runs. */
export async function describeSchedule(client: Client, scheduleId: string = SCHEDULE_ID): Promise<ScheduleReport> {
  const d: ScheduleDescription = await client.schedule.getHandle(scheduleId).describe();
  const rawRecent = d.raw.info?.recentActions ?? [];
  return {
    scheduleId,
    spec: {
      intervals: (d.spec.intervals ?? []).map((i: IntervalSpecDescription) => ({
        everyMs: i.every,
        offsetMs: i.offset ?? 0,
      })),
      calendars: d.spec.calendars?.length ?? 0,
      jitterMs: d.spec.jitter,
      startAt: d.spec.startAt?.toISOString(),
      endAt: d.spec.endAt?.toISOString(),
      timezone: d.spec.timezone || undefined,
    },
    action: {
      workflowType: d.action.workflowType,
      taskQueue: d.action.taskQueue,
      workflowIdPrefix: d.action.workflowId,
      workflowExecutionTimeoutMs: msOptionalToNumber(d.action.workflowExecutionTimeout),
    },
    policies: {
      overlap: String(d.policies.overlap),
      catchupWindowMs: d.policies.catchupWindow,
      pauseOnFailure: d.policies.pauseOnFailure,
    },
    state: { paused: d.state.paused, note: d.state.note || undefined, remainingActions: d.state.remainingActions },
    info: {
      createdAt: d.info.createdAt.toISOString(),
      lastUpdatedAt: d.info.lastUpdatedAt?.toISOString(),
      nextActionTimes: d.info.nextActionTimes.map((t) => t.toISOString()),
      recentActions: d.info.recentActions.map((a, i) => ({
        scheduledAt: a.scheduledAt.toISOString(),
        takenAt: a.takenAt.toISOString(),
        workflowId: a.action.workflow.workflowId,
        runId: a.action.workflow.firstExecutionRunId,
        // The SDK drops the status the server reports for each recent run; the raw list has the same order.
        status: statusName(rawRecent[i]?.startWorkflowStatus),
      })),
      runningWorkflows: d.info.runningActions.map((a) => ({
        workflowId: a.workflow.workflowId,
        runId: a.workflow.firstExecutionRunId,
      })),
      actionsTaken: d.info.numActionsTaken,
      actionsSkippedOverlap: d.info.numActionsSkippedOverlap,
      actionsMissedCatchupWindow: d.info.numActionsMissedCatchupWindow,
    },
  };
}

/** Pauses the schedule; `reason` becomes its note, shown in the Web UI and in `describe`. */
export async function pauseSchedule(client: Client, reason: string, scheduleId: string = SCHEDULE_ID): Promise<void> {
  await client.schedule.getHandle(scheduleId).pause(requiredText(reason, 'a reason'));
}

/** Unpauses the schedule; `reason` replaces the pause note (the server ignores an empty one). */
export async function unpauseSchedule(
  client: Client,
  reason: string | undefined,
  scheduleId: string = SCHEDULE_ID,
): Promise<void> {
  await client.schedule.getHandle(scheduleId).unpause(reason?.trim() || '(no reason provided)');
}

/** Deletes the schedule. Cycles it already started keep running to their end. */
export async function deleteSchedule(client: Client, scheduleId: string = SCHEDULE_ID): Promise<void> {
  await client.schedule.getHandle(scheduleId).delete();
}

function requiredText(value: string, what: string): string {
  if (!value.trim()) throw new Error(`expected ${what}, got an empty string`);
  return value.trim();
}
