/**
 * `npm run relay`: publishes the outbox to Kafka until SIGINT/SIGTERM, then finishes the batch in
 * flight and closes the producer and the pool. Connects as the `outbox_relay` role (RELAY_DATABASE_URL, else
 * DATABASE_URL).
 */
import { loadConfig, requireDatabaseUrl } from './config';
import { redactUrl } from './observability/redact';
import { relayBacklog } from './db/outbox-backlog';
import { createPool } from './db/pool';
import { relaySchemaProblems } from './db/schema-check';
import { createKafka } from './relay/kafka';
import { createLogger } from './observability/logger';
import { createRelayMetrics, startMetricsServer } from './observability/metrics';
import { TOPIC } from './domain/names';
import { runMain, stopOnUnhandledErrors, UnavailableError } from './run-main';
import { OutboxRelay } from './relay/outbox-relay';
import { relaySessionLimits } from './relay/session';
import { GAUGE_STATEMENT_TIMEOUT_MS, gaugeRefresh, withStatementTimeout } from './observability/refresh';
import { createTracing } from './observability/tracing';

async function main(): Promise<void> {
  const config = loadConfig();
  const databaseUrl = requireDatabaseUrl(config, 'relay');
  const logger = createLogger(config.logLevel);
  // Its own idle-in-transaction limit, above the longest wait on Kafka (src/relay/session.ts), checked at start.
  const pool = createPool(
    {
      connectionString: databaseUrl,
      // A transaction per lane, and one more for the cleanup and the backlog gauge.
      max: config.relay.concurrency + 1,
      applicationName: 'expiry-reminder-relay',
      session: relaySessionLimits(config),
      urlVariable: 'RELAY_DATABASE_URL (or DATABASE_URL)',
    },
    (err) => logger.warn({ err: redactUrl(err.message) }, 'idle database connection lost'),
  );
  const metrics = createRelayMetrics();
  metrics.published.inc({ topic: TOPIC }, 0);
  metrics.failures.inc({ topic: TOPIC }, 0);
  metrics.rejected.inc({ topic: TOPIC }, 0);
  const tracing = createTracing({
    serviceName: config.tracing.serviceName ?? 'expiry-reminder-relay',
    otlpEndpoint: config.tracing.otlpEndpoint,
  });
  const relay = new OutboxRelay({
    pool,
    listenUrl: databaseUrl,
    listenTimings: { keepaliveIdleMs: config.databaseSession.tcpKeepaliveIdleMs },
    kafka: createKafka(config, logger),
    config,
    logger,
    metrics,
    // Spans nobody exports still cost the relay CPU for every row (bench/REPORT-HISTORY.md#relay-issue-12).
    tracer: tracing.exporting ? tracing.tracer : undefined,
  });
  // Read on scrape, so a stuck relay loop cannot freeze the lag it should reveal; at most every
  // RELAY_BACKLOG_REFRESH_INTERVAL and one at a time, so a scrape loop cannot take the lanes' pool.
  const backlogGauges = gaugeRefresh({
    intervalMs: config.relay.backlogRefreshIntervalMs,
    refresh: async () => {
      const backlog = await withStatementTimeout(pool, GAUGE_STATEMENT_TIMEOUT_MS, relayBacklog);
      metrics.backlog.set(backlog.count);
      metrics.parked.set(backlog.parked);
      metrics.waitingBehindParked.set(backlog.waitingBehindParked);
      metrics.oldestAge.set(backlog.oldestAgeSeconds);
    },
    onError: () => metrics.backlogRefreshErrors.inc(),
  });
  const server = config.metricsPort
    ? await startMetricsServer({
        registry: metrics.registry,
        port: config.metricsPort,
        host: config.metricsHost,
        beforeScrape: backlogGauges.scrape,
      })
    : undefined;
  // Listening from the start: a signal during start-up stops the relay right after it.
  let stopFor: (reason: string) => void = () => {};
  const stopSignal = new Promise<string>((resolve) => {
    stopFor = resolve;
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  const unhandled = stopOnUnhandledErrors(logger, () => stopFor('unhandled error'));
  try {
    const schemaProblems = await relaySchemaProblems(pool);
    if (schemaProblems.length > 0) {
      throw new UnavailableError(
        `The outbox is not what this relay needs (run npm run migrate):\n${schemaProblems.map((p) => `  - ${p}`).join('\n')}`,
      );
    }
    const backlog = await relayBacklog(pool);
    await relay.start();
    logger.info(
      {
        brokers: config.kafka.brokers,
        backlog: backlog.count,
        parked: backlog.parked,
        oldestAgeSeconds: backlog.oldestAgeSeconds,
      },
      'relay started',
    );
    const signal = await stopSignal;
    logger.info({ signal }, 'relay stopping');
  } finally {
    server?.close();
    await relay.stop();
    await pool.end();
    await tracing.shutdown();
    logger.info({ published: relay.publishedTotal }, 'relay stopped');
  }
  if (unhandled.first) throw unhandled.first;
}

runMain('relay', main);
