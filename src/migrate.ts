/** `npm run migrate`: applies the numbered migrations with the owner connection. */
import { loadConfig, requireDatabaseUrl } from './config';
import { redactUrl } from './observability/redact';
import { runMigrations } from './db/migrate';
import { createLogger } from './observability/logger';
import { runMain } from './run-main';

async function main(): Promise<void> {
  const config = loadConfig();
  const url = requireDatabaseUrl(config, 'migrate');
  const logger = createLogger(config.logLevel).child({ component: 'migrate' });
  const applied = await runMigrations({ connectionString: url, rolePasswords: config.rolePasswords });
  logger.info({ database: redactUrl(url), applied }, applied.length ? 'migrations applied' : 'schema up to date');
}

runMain('migrate', main);
