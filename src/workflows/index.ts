/** Workflow entry point for the worker's bundle: exports every workflow type this worker runs. */
import { documentExpiryReminderCycle } from './cycle';
import { documentExpiryReminderPartition } from './partition';

export { documentExpiryReminderCycle, documentExpiryReminderPartition };
/** The cycle workflow's type, for typed handles: `client.workflow.getHandle<CycleWorkflow>(id)`. */
export type CycleWorkflow = typeof documentExpiryReminderCycle;
