/**
 * Search attributes of a cycle, so operators can filter cycles in the Web UI and the CLI, e.g.
 * `temporal workflow list --query 'ReminderOutcome="time-limit"'`. Workflow-safe (no Node APIs).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The cycle's AsOf (a datetime: filter with `ReminderAsOf >= "2026-12-01T00:00:00Z"`). */
export const REMINDER_AS_OF = defineSearchAttributeKey('ReminderAsOf', SearchAttributeType.DATETIME);
/** How the cycle ended: completed, time-limit, cancelled; `running` while it runs. */
export const REMINDER_OUTCOME = defineSearchAttributeKey('ReminderOutcome', SearchAttributeType.KEYWORD);
/** Reminders the cycle sent (updated as it goes). */
export const REMINDERS_SENT = defineSearchAttributeKey('RemindersSent', SearchAttributeType.INT);

/** Every custom attribute the cycle upserts; the namespace must have them registered. */
export const CYCLE_SEARCH_ATTRIBUTES = [REMINDER_AS_OF, REMINDER_OUTCOME, REMINDERS_SENT];

/** Set by Temporal on runs a schedule starts: the action time (nominal, also for backfills). */
export const TEMPORAL_SCHEDULED_START_TIME = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);
