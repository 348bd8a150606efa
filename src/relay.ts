/**
 * `npm run relay`: publishes the outbox to Kafka until SIGINT/SIGTERM, then finishes the batch in
 * flight and closes the producer and the pool. Connects as the `outbox_relay` role (DATABASE_URL).
 */
import { exitOnConfigError, loadConfig, redactUrl, requireDatabaseUrl } from './config';
import { outboxBacklog } from './db/outbox';
import { createPool } from './db/pool';
import { createKafka } from './kafka';
import { createLogger } from './logger';
import { OutboxRelay } from './relay/outbox-relay';

async function main(): Promise<void> {
  const { config, databaseUrl } = exitOnConfigError(() => {
    const config = loadConfig();
    return { config, databaseUrl: requireDatabaseUrl(config, 'worker') };
  });
  const logger = createLogger(config.logLevel);
  const pool = createPool(
    { connectionString: databaseUrl, max: 2, applicationName: 'expiry-reminder-relay' },
    (err) => logger.warn({ err: redactUrl(err.message) }, 'idle database connection lost'),
  );
  const relay = new OutboxRelay({ pool, listenUrl: databaseUrl, kafka: createKafka(config, logger), config, logger });
  try {
    const backlog = await outboxBacklog(pool);
    await relay.start();
    logger.info({ brokers: config.kafka.brokers, backlog: backlog.count, oldestAgeSeconds: backlog.oldestAgeSeconds }, 'relay started');
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    logger.info({ signal }, 'relay stopping');
  } finally {
    await relay.stop();
    await pool.end();
    logger.info({ published: relay.publishedTotal }, 'relay stopped');
  }
}

main().catch((err: Error) => {
  process.stderr.write(`relay failed: ${redactUrl(err.stack ?? err.message)}\n`);
  process.exit(1);
});
