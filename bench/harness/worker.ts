/**
 * The worker process the Temporal paths measure: a separate process as deployed, so its CPU and memory
 * are its own and the driver's work is not in them.
 */
import crypto from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { checkoutBuildId } from '../../src/config';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * The worker's heap flags as the Dockerfile sets them (NODE_OPTIONS); BENCH_WORKER_NODE_OPTIONS
 * overrides them. A 2 MB young generation keeps the peak RSS near the live heap
 * (bench/REPORT-HISTORY.md#6-worker-memory-backlog-50k-owners).
 */
const WORKER_NODE_OPTIONS = '--max-semi-space-size=2 --max-old-space-size=256';

/** A running worker: its process, everything it wrote, and a stop that waits for its exit. */
export interface BenchWorker {
  child: ChildProcess;
  output: string[];
  stop(): Promise<void>;
}

/**
 * The worker as production runs it (`--worker dist`, the default): compiled, with the workflow bundle
 * prebuilt by `npm run build`, which this runs now. `--worker src` runs the sources under tsx, bundling
 * at start. Returns the arguments for `node`.
 */
export function buildWorkerCommand(kind: string): string[] {
  return buildEntryCommand(kind, 'worker');
}

let built = false;

/**
 * The same for any entry point (`worker`, `relay`); the build runs once per benchmark. With
 * BENCH_CPU_PROF=<dir> each process writes a V8 CPU profile there when it exits (open it in Chrome's
 * DevTools): Node refuses `--cpu-prof` in NODE_OPTIONS, so it has to be an argument.
 */
export function buildEntryCommand(kind: string, entry: 'worker' | 'relay'): string[] {
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  if (kind === 'src') return [...profile, '--import', 'tsx', path.join(ROOT, 'src', `${entry}.ts`)];
  if (kind !== 'dist') throw new Error(`--worker must be dist or src, got ${kind}`);
  if (!built) execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  built = true;
  return [...profile, path.join(ROOT, 'dist', `${entry}.js`)];
}

/** This checkout's build id when the benchmark started (see spawnWorker). */
const RUN_BUILD_ID = checkoutBuildId(ROOT);

/** Starts the worker on `taskQueue` with the stack's variables and the benchmark's database and pool. */
export function spawnWorker(
  command: string[],
  env: Record<string, string>,
  settings: { databaseUrl: string; poolSize: number; taskQueue: string },
): BenchWorker {
  // BENCH_WORKER_CPU_PROF=<dir>: a V8 CPU profile of the worker (flags NODE_OPTIONS refuses).
  const profile = process.env.BENCH_WORKER_CPU_PROF;
  const args = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, ...command] : command;
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      DATABASE_URL: settings.databaseUrl,
      DATABASE_POOL_SIZE: String(settings.poolSize),
      TEMPORAL_TASK_QUEUE: settings.taskQueue,
      // A deployment per task queue: the benchmark's version routes no other run's cycles. One build id for the
      // run, so a worker started after a commit still serves the cycles pinned to the first one's.
      TEMPORAL_DEPLOYMENT_NAME: `bench-${crypto.createHash('sha256').update(settings.taskQueue).digest('hex').slice(0, 12)}`,
      ...(RUN_BUILD_ID ? { TEMPORAL_WORKER_BUILD_ID: RUN_BUILD_ID } : {}),
      METRICS_PORT: '0',
      LOG_LEVEL: process.env.BENCH_WORKER_LOG_LEVEL ?? 'warn',
      NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS ?? WORKER_NODE_OPTIONS,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Waits (up to 120 s) until a worker polls the activity side of `taskQueue`, so no measurement waits for start-up. */
export async function waitForPoller(client: Client, namespace: string, taskQueue: string): Promise<void> {
  const until = Date.now() + 120_000;
  for (;;) {
    const r = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: proto.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    if ((r.pollers ?? []).length > 0) return;
    if (Date.now() > until) throw new Error('the worker did not start polling within 120 s');
    await new Promise((res) => setTimeout(res, 200));
  }
}
