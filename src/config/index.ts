/**
 * The one place that reads the environment. Every variable is validated at start; a bad value stops the
 * process with a message naming the variable, the value and what is expected, before anything is written.
 */
export type { Config } from './types';
export { ConfigError } from './errors';
export { loadConfig } from './load';
export { requireDatabaseUrl } from './database-url';
export { checkoutBuildId, workerVersion, type WorkerVersion } from './build-id';
