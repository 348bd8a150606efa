/**
 * `npm run worker`: runs the cycle workflow and its activities on the task queue. SIGINT/SIGTERM stop
 * polling, let running activities finish within the grace time, then close the pool and connection.
 */
import type http from 'node:http';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type InjectedSinks,
  type LogLevel,
  type WorkerOptions,
} from '@temporalio/worker';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type pg from 'pg';
import { createActivities } from './activities';
import { exitOnConfigError, loadConfig, redactUrl, requireDatabaseUrl, type Config } from './config';
import { countDueDocuments } from './db/candidates';
import { createPool } from './db/pool';
import { workerSchemaProblems } from './db/schema-check';
import { utcDate } from './domain/thresholds';
import { createLogger, type Logger } from './logger';
import { createWorkerMetrics, recordCycleEnded, startMetricsServer, type WorkerMetrics } from './metrics';
import { freePort } from './ports';
import { temporalConnectionOptions } from './temporal';
import { createTracing, OTEL_WORKFLOW_INTERCEPTORS, type Tracing } from './tracing';
import { workflowBundlePath } from './workflow-bundle';
import type { CycleSinks } from './workflows/sinks';

export interface WorkerDeps {
  config: Config;
  connection: NativeConnection;
  pool: pg.Pool;
  logger: Logger;
  metrics?: WorkerMetrics;
  /** Span export; without it spans are created and dropped. */
  tracing?: Tracing;
  /** Overrides `config.temporal.taskQueue` (tests use one queue each). */
  taskQueue?: string;
  /** A prebuilt workflow bundle; without it the worker bundles `src/workflows` itself. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/** Path of the workflow code, for bundling (works from `src/` under tsx and from `dist/`). */
export const WORKFLOWS_PATH = require.resolve('./workflows');

/** The workflow's sinks: metrics recorded in this process, never on replay. */
export function cycleSinks(metrics: WorkerMetrics | undefined): InjectedSinks<CycleSinks> {
  return {
    cycleMetrics: {
      ownerFailed: { fn: () => metrics?.errors.inc({ kind: 'owner' }) },
      cycleEnded: { fn: (_info, result) => metrics && recordCycleEnded(metrics, result) },
      cycleFailed: {
        fn: () => {
          metrics?.errors.inc({ kind: 'cycle' });
          metrics?.cycles.inc({ status: 'failed' });
        },
      },
    },
  };
}

/**
 * The workflow side of a worker (interceptors and sinks), shared by the real worker and the replay test
 * so that what replays is what runs. With a prebuilt bundle, the bundle must include the interceptors.
 */
export function workflowSideOptions(tracing: Tracing, metrics: WorkerMetrics | undefined, prebuilt: boolean) {
  return {
    workflowModules: prebuilt ? [] : [OTEL_WORKFLOW_INTERCEPTORS],
    sinks: { ...cycleSinks(metrics), exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}

/** Creates the worker: the cycle workflow plus the activities built from `deps`. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const { config, connection, pool, logger, metrics } = deps;
  const tracing = deps.tracing ?? createTracing({ serviceName: 'expiry-reminder-worker' });
  const workflowSide = workflowSideOptions(tracing, metrics, Boolean(deps.workflowBundle));
  return Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: deps.taskQueue ?? config.temporal.taskQueue,
    // A prebuilt bundle must include OTEL_WORKFLOW_INTERCEPTORS itself (see bundleWorkflowCode).
    ...(deps.workflowBundle
      ? { workflowBundle: deps.workflowBundle }
      : { workflowsPath: WORKFLOWS_PATH }),
    interceptors: {
      workflowModules: workflowSide.workflowModules,
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    activities: createActivities({ pool, logger, config, metrics }),
    sinks: workflowSide.sinks,
    // Owner transactions hold a pooled connection each; never run more than the pool can serve.
    maxConcurrentActivityTaskExecutions: config.databasePoolSize,
    shutdownGraceTime: '30s',
  });
}

const PINO_TO_SDK: Record<string, LogLevel> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  error: 'ERROR',
  fatal: 'ERROR',
  silent: 'ERROR',
};
const SDK_TO_PINO = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/**
 * Installs the SDK runtime: its log lines (including workflow `log.*`, which is replay-safe) go to pino,
 * and, when `sdkMetricsAddress` is given, its worker metrics are served there for `/metrics` to append.
 */
export function installRuntime(logger: Logger, level: string, sdkMetricsAddress?: string): void {
  const sdk = logger.child({ component: 'temporal' });
  Runtime.install({
    logger: new DefaultLogger(PINO_TO_SDK[level] ?? 'INFO', ({ level: l, message, meta }) => {
      sdk[SDK_TO_PINO[l]](meta ?? {}, message);
    }),
    telemetryOptions: sdkMetricsAddress
      ? { metrics: { prometheus: { bindAddress: sdkMetricsAddress, useSecondsForDurations: true } } }
      : undefined,
  });
}

/** Keeps the backlog gauge fresh on scrape, at most every `minIntervalMs`; a failed count keeps the last value. */
export function backlogRefresher(pool: pg.Pool, config: Config, metrics: WorkerMetrics, minIntervalMs = 15_000) {
  let last = 0;
  return async () => {
    if (Date.now() - last < minIntervalMs) return;
    last = Date.now();
    const { thresholdsDays, retentionDays } = config.cycle;
    metrics.backlog.set(await countDueDocuments(pool, { asOfDate: utcDate(new Date()), thresholdsDays, retentionDays }));
  };
}

async function main(): Promise<void> {
  const { config, databaseUrl } = exitOnConfigError(() => {
    const config = loadConfig();
    return { config, databaseUrl: requireDatabaseUrl(config, 'worker') };
  });
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
  const tracing = createTracing({ serviceName: config.tracing.serviceName ?? 'expiry-reminder-worker', otlpEndpoint: config.tracing.otlpEndpoint });
  let connection: NativeConnection | undefined;
  let server: http.Server | undefined;
  try {
    if (config.metricsPort) {
      server = await startMetricsServer({
        registry: metrics.registry,
        port: config.metricsPort,
        beforeScrape: backlogRefresher(pool, config, metrics),
        extraUrl: `http://${sdkMetricsAddress}/metrics`,
      });
    }
    const schemaProblems = await workerSchemaProblems(pool);
    if (schemaProblems.length > 0) {
      throw new SchemaError(schemaProblems);
    }
    connection = await NativeConnection.connect(temporalConnectionOptions(config));
    const bundlePath = workflowBundlePath(config.workflowBundlePath);
    const worker = await createWorker({
      config,
      connection,
      pool,
      logger,
      metrics,
      tracing,
      workflowBundle: bundlePath ? { codePath: bundlePath } : undefined,
    });
    logger.info(
      {
        taskQueue: config.temporal.taskQueue,
        namespace: config.temporal.namespace,
        address: config.temporal.address,
        metricsPort: config.metricsPort || undefined,
        workflowBundle: bundlePath ?? 'built at start',
      },
      'worker started',
    );
    await worker.run();
    logger.info('worker stopped');
  } finally {
    server?.close();
    await connection?.close();
    await pool.end();
    await tracing.shutdown();
  }
}

/** The database is not migrated as the worker needs (exit code 69, EX_UNAVAILABLE). */
class SchemaError extends Error {
  constructor(problems: string[]) {
    super(`The database schema is not what this worker needs (run npm run migrate):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SchemaError';
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    if (err instanceof SchemaError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(69);
    }
    process.stderr.write(`worker failed: ${redactUrl(err.stack ?? err.message)}\n`);
    process.exit(1);
  });
}
