/** `npm run migrate`: applies the numbered migrations with the owner connection. */
import { exitOnConfigError, loadConfig, redactUrl, requireDatabaseUrl } from './config';
import { runMigrations } from './db/migrate';
import { createLogger } from './logger';

async function main(): Promise<void> {
  const { config, url } = exitOnConfigError(() => {
    const config = loadConfig();
    return { config, url: requireDatabaseUrl(config, 'migrate') };
  });
  const logger = createLogger(config.logLevel).child({ component: 'migrate' });
  const applied = await runMigrations({ connectionString: url, rolePasswords: config.rolePasswords });
  logger.info({ database: redactUrl(url), applied }, applied.length ? 'migrations applied' : 'schema up to date');
}

main().catch((err: Error) => {
  process.stderr.write(`migrate failed: ${redactUrl(err.message)}\n`);
  process.exit(1);
});
