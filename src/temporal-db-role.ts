/**
 * `node dist/temporal-db-role.js`, compose's `temporal-db-role` job: the Temporal server's role on Temporal's own
 * cluster, created or given TEMPORAL_DB_PASSWORD again (a changed password takes effect on the next `up`), as
 * that cluster's admin (MIGRATION_DATABASE_URL). In the app image, not a psql script: the password must leave as
 * a SCRAM verifier (src/db/temporal-role.ts), which psql does not compute; docker-compose.yml says why not openssl.
 */
import { ConfigError, loadConfig, requireDatabaseUrl } from './config';
import { explainingClient } from './db/connection-errors';
import { ensureTemporalRole } from './db/temporal-role';
import { TEMPORAL_DB_ROLE } from './domain/names';
import { createLogger } from './observability/logger';
import { redactUrl } from './observability/redact';
import { runMain } from './run-main';

async function main(): Promise<void> {
  const config = loadConfig();
  const url = requireDatabaseUrl(config, 'migrate');
  const password = config.temporalDbPassword;
  if (!password) {
    throw new ConfigError([
      `TEMPORAL_DB_PASSWORD=(unset): expected the password of the Temporal server's role ${TEMPORAL_DB_ROLE}`,
    ]);
  }
  const logger = createLogger(config.logLevel).child({ component: 'temporal-db-role' });
  const Client = explainingClient('MIGRATION_DATABASE_URL (or DATABASE_URL)');
  const client = new Client({ connectionString: url });
  client.on('error', (err) => logger.warn({ err: redactUrl(err.message) }, 'database connection error'));
  await client.connect();
  try {
    const done = await ensureTemporalRole(client, password);
    logger.info({ database: redactUrl(url), role: TEMPORAL_DB_ROLE }, `role ${done}`);
  } finally {
    await client.end();
  }
}

runMain('temporal-db-role', main);
