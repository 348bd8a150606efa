/**
 * `npm run worker`: runs the cycle workflow and its activities on the task queue. SIGINT/SIGTERM stop
 * polling, let running activities finish within the grace time, then close the pool and connection.
 */
import type http from 'node:http';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { loadConfig, requireDatabaseUrl, workerVersion } from './config';
import { redactUrl } from './observability/redact';
import { createPool } from './db/pool';
import { workerSchemaProblems } from './db/schema-check';
import { backlogRefresher } from './observability/backlog';
import { createLogger } from './observability/logger';
import { createWorkerMetrics, startMetricsServer } from './observability/metrics';
import { strandedCyclesRefresher } from './temporal/stranded-cycles';
import { freePort } from './observability/ports';
import { createTracing } from './observability/tracing';
import { runMain, stopOnUnhandledErrors, UnavailableError } from './run-main';
import { connectTemporal, temporalConnectionOptions, withTemporalPermission } from './temporal/connection';
import { createWorker, installRuntime } from './temporal/worker';
import { workflowBundlePath } from './temporal/workflow-bundle';

async function main(): Promise<void> {
  const config = loadConfig();
  const databaseUrl = requireDatabaseUrl(config, 'worker');
  const version = workerVersion(config);
  const logger = createLogger(config.logLevel);
  // The SDK's exporter gets a loopback port of its own, never the one /metrics is about to bind.
  let sdkPort = 0;
  while (config.metricsPort && (sdkPort === 0 || sdkPort === config.metricsPort)) sdkPort = await freePort();
  const sdkMetricsAddress = config.metricsPort ? `127.0.0.1:${sdkPort}` : undefined;
  installRuntime(logger, config.logLevel, sdkMetricsAddress);
  const pool = createPool(
    {
      connectionString: databaseUrl,
      max: config.databasePoolSize,
      applicationName: 'expiry-reminder-worker',
      session: config.databaseSession,
    },
    (err) => logger.warn({ err: redactUrl(err.message) }, 'idle database connection lost'),
  );
  const metrics = createWorkerMetrics(config.cycle.thresholdsDays);
  const tracing = createTracing({
    serviceName: config.tracing.serviceName ?? 'expiry-reminder-worker',
    otlpEndpoint: config.tracing.otlpEndpoint,
  });
  let connection: NativeConnection | undefined;
  let server: http.Server | undefined;
  let worker: Worker | undefined;
  const backlog = backlogRefresher(pool, config.cycle, config.backlogRefreshIntervalMs, metrics);
  const stranded = strandedCyclesRefresher(() => connection, config, metrics, {
    intervalMs: config.backlogRefreshIntervalMs,
  });
  const unhandled = stopOnUnhandledErrors(logger, () => {
    // Not running yet: the start below sees `unhandled.first` and does not run it.
    if (worker?.getState() === 'RUNNING') worker.shutdown();
  });
  try {
    if (config.metricsPort) {
      server = await startMetricsServer({
        registry: metrics.registry,
        port: config.metricsPort,
        host: config.metricsHost,
        beforeScrape: async () => void (await Promise.all([backlog.scrape(), stranded.scrape()])),
        extraUrl: `http://${sdkMetricsAddress}/metrics`,
        // Healthy once it polls: a deploy that waits for health (compose's one-shot) then makes a version
        // current that serves. Before, /healthz answered before the schema check and the Temporal connection.
        notReady: () => (worker?.getState() === 'RUNNING' ? undefined : 'starting: not polling the task queue yet'),
      });
    }
    const schemaProblems = await workerSchemaProblems(pool);
    if (schemaProblems.length > 0) {
      throw new UnavailableError(
        `The database schema is not what this worker needs (run npm run migrate):\n${schemaProblems.map((p) => `  - ${p}`).join('\n')}`,
      );
    }
    const temporalOptions = temporalConnectionOptions(config);
    const conn = await connectTemporal(temporalOptions, (options) => NativeConnection.connect(options));
    connection = conn;
    const bundlePath = workflowBundlePath(config.workflowBundlePath);
    // Creating the worker describes its namespace: the first call the server may refuse this identity.
    worker = await withTemporalPermission(temporalOptions, 'worker', config.temporal.namespace, () =>
      createWorker({
        config,
        connection: conn,
        pool,
        logger,
        metrics,
        tracing,
        version,
        workflowBundle: bundlePath ? { codePath: bundlePath } : undefined,
        onCycleEnded: config.metricsPort ? () => void backlog.now() : undefined,
      }),
    );
    logger.info(
      {
        taskQueue: config.temporal.taskQueue,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        namespace: config.temporal.namespace,
        address: config.temporal.address,
        metricsPort: config.metricsPort || undefined,
        workflowBundle: bundlePath ?? 'built at start',
      },
      'worker started',
    );
    if (!unhandled.first) await worker.run();
    logger.info('worker stopped');
  } finally {
    server?.close();
    await connection?.close();
    await pool.end();
    await tracing.shutdown();
  }
  if (unhandled.first) throw unhandled.first;
}

if (require.main === module) runMain('worker', main);
