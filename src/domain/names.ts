/**
 * The names other systems and operators rely on (docs/DESIGN.md#event, #names). Everything that talks to Temporal, Kafka
 * or the outbox takes its names from here, so a rename is one edit.
 */
export const TASK_QUEUE = 'document-expiry-reminder';
/** The Worker Deployment the workers' versions belong to (docs/SAFE-DEPLOYS.md). */
export const DEPLOYMENT_NAME = 'expiry-reminder';
export const WORKFLOW_TYPE = 'documentExpiryReminderCycle';
export const SCHEDULE_ID = 'document-expiry-reminder';
/** Prefix of the workflow ids the schedule starts; Temporal appends the action time. */
export const SCHEDULED_WORKFLOW_ID = 'document-expiry-reminder-cycle';
/** Prefix of the workflow ids started by hand with `cycle run`. */
export const MANUAL_WORKFLOW_ID_PREFIX = 'document-expiry-reminder-manual';
/**
 * The activity types that claim owners: a partition's page claims and the owner groups. A worker's share of a
 * cycle's work is its share of these in the histories.
 */
export const OWNER_ACTIVITIES: ReadonlySet<string> = new Set(['claimPage', 'remindOwners']);

export const TOPIC = 'pin.profile.document-expiry-reminders.v1';
export const EVENT_TYPE = 'DocumentExpiryReminderKafkaEvent';
export const CONTRACT_VERSION = 1;
export const AGGREGATE_TYPE = 'Profile';

export const WORKER_ROLE = 'expiry_reminder_worker';
export const RELAY_ROLE = 'outbox_relay';
/** The support desk's role: reads what `explain` reads, nothing else, and writes nothing (migration 018). */
export const SUPPORT_ROLE = 'expiry_reminder_support';
/** The Temporal server's role on Temporal's own cluster (compose's `temporal-db-role`, the production stack). */
export const TEMPORAL_DB_ROLE = 'temporal';
