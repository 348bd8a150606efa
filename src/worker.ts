/**
 * `npm run worker`: runs the cycle workflow and its activities on the task queue. SIGINT/SIGTERM stop
 * polling, let running activities finish within the grace time, then close the pool and connection.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel, type WorkerOptions } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from './activities';
import { exitOnConfigError, loadConfig, redactUrl, requireDatabaseUrl, type Config } from './config';
import { createPool } from './db/pool';
import { createLogger, type Logger } from './logger';
import { temporalConnectionOptions } from './temporal';

export interface WorkerDeps {
  config: Config;
  connection: NativeConnection;
  pool: pg.Pool;
  logger: Logger;
  /** Overrides `config.temporal.taskQueue` (tests use one queue each). */
  taskQueue?: string;
  /** A prebuilt workflow bundle; without it the worker bundles `src/workflows` itself. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/** Path of the workflow code, for bundling (works from `src/` under tsx and from `dist/`). */
export const WORKFLOWS_PATH = require.resolve('./workflows');

/** Creates the worker: the cycle workflow plus the activities built from `deps`. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const { config, connection, pool, logger } = deps;
  return Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: deps.taskQueue ?? config.temporal.taskQueue,
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({ pool, logger, config }),
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

/** Sends the SDK's own log lines (including workflow `log.*`, which is replay-safe) to pino. */
export function installRuntimeLogger(logger: Logger, level: string): void {
  const sdk = logger.child({ component: 'temporal' });
  Runtime.install({
    logger: new DefaultLogger(PINO_TO_SDK[level] ?? 'INFO', ({ level: l, message, meta }) => {
      sdk[SDK_TO_PINO[l]](meta ?? {}, message);
    }),
  });
}

async function main(): Promise<void> {
  const { config, databaseUrl } = exitOnConfigError(() => {
    const config = loadConfig();
    return { config, databaseUrl: requireDatabaseUrl(config, 'worker') };
  });
  const logger = createLogger(config.logLevel);
  installRuntimeLogger(logger, config.logLevel);
  const pool = createPool(
    { connectionString: databaseUrl, max: config.databasePoolSize, applicationName: 'expiry-reminder-worker' },
    (err) => logger.warn({ err: redactUrl(err.message) }, 'idle database connection lost'),
  );
  let connection: NativeConnection | undefined;
  try {
    connection = await NativeConnection.connect(temporalConnectionOptions(config));
    const worker = await createWorker({ config, connection, pool, logger });
    logger.info(
      { taskQueue: config.temporal.taskQueue, namespace: config.temporal.namespace, address: config.temporal.address },
      'worker started',
    );
    await worker.run();
    logger.info('worker stopped');
  } finally {
    await connection?.close();
    await pool.end();
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`worker failed: ${redactUrl(err.stack ?? err.message)}\n`);
    process.exit(1);
  });
}
