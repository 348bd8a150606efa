/** The Temporal Schedule that starts one cycle per polling interval (SPEC §5). */
import {
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Config } from './config';
import type { documentExpiryReminderCycle } from './workflows';
import { SCHEDULE_ID, SCHEDULED_WORKFLOW_ID, WORKFLOW_TYPE } from './names';
import { CYCLE_SEARCH_ATTRIBUTES } from './search-attributes';
import { scheduledCycleMetadata } from './ui-metadata';

type CycleWorkflow = typeof documentExpiryReminderCycle;

function desired(config: Pick<Config, 'temporal' | 'schedule' | 'cycle'>): Omit<ScheduleOptions<ScheduleOptionsStartWorkflowAction<CycleWorkflow>>, 'scheduleId'> {
  const action: ScheduleOptionsStartWorkflowAction<CycleWorkflow> = {
    type: 'startWorkflow',
    workflowType: WORKFLOW_TYPE,
    taskQueue: config.temporal.taskQueue,
    workflowId: SCHEDULED_WORKFLOW_ID,
    // Empty input: the worker's configuration decides, and AsOf is the action time.
    args: [{}],
    ...scheduledCycleMetadata(config),
  };
  return {
    spec: { intervals: [{ every: config.schedule.intervalMs, offset: config.schedule.offsetMs }] },
    action,
    policies: {
      // A tick while a cycle still runs is dropped: the next tick picks up whatever is left.
      overlap: ScheduleOverlapPolicy.SKIP,
      catchupWindow: '1h',
      pauseOnFailure: false,
    },
  };
}

/**
 * Creates the schedule, or updates its spec, action and policies in place. Pause state and note are
 * kept, so re-applying never unpauses a schedule an operator paused.
 * @returns whether it was created or updated.
 */
export async function applySchedule(
  client: Client,
  config: Pick<Config, 'temporal' | 'schedule' | 'cycle'>,
): Promise<'created' | 'updated'> {
  const want = desired(config);
  try {
    await client.schedule.create({ scheduleId: SCHEDULE_ID, ...want });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning) && (err as Error)?.name !== 'ScheduleAlreadyRunning') throw err;
  }
  await client.schedule.getHandle(SCHEDULE_ID).update<CycleWorkflow>((previous) => ({
    spec: want.spec,
    action: want.action,
    policies: want.policies,
    state: { paused: previous.state.paused, note: previous.state.note },
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

/** Starts a cycle now through the schedule; skipped (not queued) while a cycle is running. */
export async function triggerSchedule(client: Client): Promise<void> {
  // The SDK's default for a manual trigger is allow-all; the job's policy is skip.
  await client.schedule.getHandle(SCHEDULE_ID).trigger(ScheduleOverlapPolicy.SKIP);
}
