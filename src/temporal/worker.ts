/**
 * The worker's Temporal side: the cycle workflow plus the activities built from their dependencies, the
 * workflow's sinks and interceptors (shared with the replay test so that what replays is what runs), and
 * the SDK runtime that sends the SDK's logs to pino.
 */
import {
  DefaultLogger,
  Runtime,
  Worker,
  type InjectedSinks,
  type LogLevel,
  type NativeConnection,
  type WorkerOptions,
} from '@temporalio/worker';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type pg from 'pg';
import { activityFailures, createActivities } from '../activities';
import type { Config, WorkerVersion } from '../config';
import type { Logger } from '../observability/logger';
import { recordCycleEnded, type CycleEnd, type ErrorKind, type WorkerMetrics } from '../observability/metrics';
import { createTracing, OTEL_WORKFLOW_INTERCEPTORS, type Tracing } from '../observability/tracing';
import type { CycleSinks } from '../workflows/sinks';

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
  /** Called when a cycle ends (the backlog gauge refreshes then). */
  onCycleEnded?: () => void;
  /** The worker's identity in workflow histories (default: the SDK's, process id and host name). */
  identity?: string;
  /**
   * The Worker Deployment Version this worker declares: its cycles are pinned to it and it gets new ones only
   * while it is the deployment's current (or ramping) version. Without it the worker is unversioned.
   */
  version?: WorkerVersion;
}

/** Path of the workflow code, for bundling (works from `src/` under tsx and from `dist/`). */
export const WORKFLOWS_PATH = require.resolve('../workflows');

/** The workflow's sinks: metrics recorded in this process, never on replay. */
export function cycleSinks(metrics: WorkerMetrics | undefined, onCycleEnded?: () => void): InjectedSinks<CycleSinks> {
  return {
    cycleMetrics: {
      ownerFailed: { fn: () => metrics?.errors.inc({ kind: 'owner' satisfies ErrorKind }) },
      cycleEnded: {
        fn: (_info, result) => {
          if (metrics) recordCycleEnded(metrics, result);
          onCycleEnded?.();
        },
      },
      cycleFailed: {
        fn: () => {
          metrics?.errors.inc({ kind: 'cycle' satisfies ErrorKind });
          metrics?.cycles.inc({ status: 'failed' satisfies CycleEnd });
        },
      },
    },
  };
}

/**
 * The workflow side of a worker (interceptors and sinks), shared by the real worker and the replay test
 * so that what replays is what runs. With a prebuilt bundle, the bundle must include the interceptors.
 */
export function workflowSideOptions(
  tracing: Tracing,
  metrics: WorkerMetrics | undefined,
  prebuilt: boolean,
  onCycleEnded?: () => void,
) {
  return {
    workflowModules: prebuilt ? [] : [OTEL_WORKFLOW_INTERCEPTORS],
    sinks: {
      ...cycleSinks(metrics, onCycleEnded),
      exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource),
    },
  };
}

/** Creates the worker: the cycle workflow plus the activities built from `deps`. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const { config, connection, pool, logger, metrics } = deps;
  const tracing = deps.tracing ?? createTracing({ serviceName: 'expiry-reminder-worker' });
  const workflowSide = workflowSideOptions(tracing, metrics, Boolean(deps.workflowBundle), deps.onCycleEnded);
  return Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: deps.taskQueue ?? config.temporal.taskQueue,
    ...(deps.identity ? { identity: deps.identity } : {}),
    // A cycle and its partitions run to their end on the version that started them (docs/SAFE-DEPLOYS.md).
    ...(deps.version
      ? {
          workerDeploymentOptions: {
            version: deps.version,
            useWorkerVersioning: true,
            defaultVersioningBehavior: 'PINNED' as const,
          },
        }
      : {}),
    // A prebuilt bundle must include OTEL_WORKFLOW_INTERCEPTORS itself (see bundleWorkflowCode).
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    interceptors: {
      workflowModules: workflowSide.workflowModules,
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
        // Inside the span's interceptor, so the span records the failure Temporal gets.
        activityFailures,
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
