/** Workflow entry point for the worker's bundle: exports every workflow type this worker runs. */
export { documentExpiryReminderCycle } from './cycle';
