/**
 * Runs before every file of the `production` project. These files start the services they need
 * themselves; when `npm run test:production` also runs the integration tests on a shared production stack,
 * that stack's variables (DATABASE_URL, KAFKA_BROKERS, TEMPORAL_*, …) are in the environment too, and
 * would make `startPostgres` and `startStack` adopt its servers. They are dropped here, from this file's
 * `process.env` only (Jest's copy): a child process a file starts must get `env: { ...process.env }`, since
 * one started without `env` inherits the runner's, shared stack's variables and all.
 */
import { STACK_ENV_KEYS } from '../../support/profile';

for (const name of (process.env[STACK_ENV_KEYS] ?? '').split(',').filter(Boolean)) delete process.env[name];
delete process.env[STACK_ENV_KEYS];
delete process.env.WORKFLOW_BUNDLE_PATH;
