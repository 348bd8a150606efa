/**
 * The job itself on a stack: workers and relays as the operator runs them (`npm run worker`, `npm run relay`,
 * here `tsx src/worker.ts` and `tsx src/relay.ts`), each with its own identity's variables and a metrics port
 * of its own on loopback, its log in a file. The production profile runs two of each, so that every run on it
 * shares the task queue between two pollers and the outbox between two relays, as a deployment does.
 *
 * Each process's environment is built from an allowlist, never from this process's minus some: what any
 * program needs to run, the job's settings the caller set, and its own identity. A worker never sees the
 * relay's or the admin's database password, a relay never sees a Temporal key (docs/DEPLOYMENT.md).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/observability/ports';

const ROOT = path.resolve(__dirname, '..', '..');

type Kind = 'worker' | 'relay';

/** How a process runs, not who it is: passed on from the stack's environment when set. */
const SYSTEM_VARIABLES = ['PATH', 'HOME', 'USER', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

/** The settings of src/config each kind reads that name no identity and hold no secret. */
const SETTINGS: Record<Kind, RegExp> = {
  worker:
    /^(REMINDER_[A-Z_]+|TEMPORAL_TASK_QUEUE|TEMPORAL_DEPLOYMENT_NAME|TEMPORAL_WORKER_BUILD_ID|WORKFLOW_BUNDLE_PATH|BACKLOG_REFRESH_INTERVAL|DATABASE_(POOL_SIZE|STATEMENT_TIMEOUT|IDLE_IN_TRANSACTION_TIMEOUT|TCP_KEEPALIVE_IDLE)|OTEL_EXPORTER_OTLP_ENDPOINT|OTEL_SERVICE_NAME)$/,
  relay:
    /^(RELAY_(BATCH_SIZE|CONCURRENCY|POLL_INTERVAL|LINGER|SEND_TIMEOUT|MAX_BACKOFF|MAX_ATTEMPTS|CLEANUP_INTERVAL|BACKLOG_REFRESH_INTERVAL)|OUTBOX_RETENTION|KAFKA_(CLIENT_ID|TOPIC_PARTITIONS|TOPIC_REPLICATION_FACTOR)|DATABASE_(STATEMENT_TIMEOUT|IDLE_IN_TRANSACTION_TIMEOUT|TCP_KEEPALIVE_IDLE)|OTEL_EXPORTER_OTLP_ENDPOINT|OTEL_SERVICE_NAME)$/,
};

/**
 * The environment of one job process: the allowed system variables and settings of `from`, then `identity`
 * (its own connections and credentials), then the stack's fixed ones.
 */
function jobEnvironment(
  kind: Kind,
  identity: Record<string, string>,
  fixed: Record<string, string>,
  from: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(from)) {
    if (value !== undefined && (SYSTEM_VARIABLES.includes(name) || SETTINGS[kind].test(name))) env[name] = value;
  }
  return { ...env, ...identity, ...fixed };
}

/** Each kind's own variables: its database URL, and its Temporal client certificate or its Kafka user. */
export type JobIdentities = Record<Kind, Record<string, string>>;

/** How many of each the stack runs. */
export interface JobOptions {
  workers: number;
  relays: number;
}

/** One worker or relay process the stack runs. */
export interface JobProcess {
  name: string;
  pid: number;
  metricsUrl: string;
  logFile: string;
}

export interface RunningJob {
  processes: JobProcess[];
  /** STACK_WORKER_METRICS_URLS and STACK_RELAY_METRICS_URLS: where Prometheus (or a test) reads each one. */
  env: Record<string, string>;
  /** SIGTERM to each (workers drain, relays finish their batch), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** The message each entry point logs once it serves (src/worker.ts, src/relay.ts). */
const STARTED = { worker: 'worker started', relay: 'relay started' } as const;
const START_TIMEOUT_MS = 120_000;

/** Children being stopped on purpose: their exit is not news. */
const stopping = new WeakSet<ChildProcess>();

interface Child {
  info: JobProcess;
  child: ChildProcess;
  exited: Promise<void>;
}

function lastLines(file: string, count = 5): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-count).join('\n');
  } catch {
    return '(no log)';
  }
}

async function startOne(
  kind: Kind,
  index: number,
  identity: Record<string, string>,
  logDir: string,
  log: (line: string) => void,
): Promise<Child> {
  const name = `${kind}-${index}`;
  const port = await freePort();
  const logFile = path.join(logDir, `${name}.log`);
  const out = fs.openSync(logFile, 'a', 0o600);
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), `src/${kind}.ts`], {
    cwd: ROOT,
    // At info, whatever the caller's LOG_LEVEL: the start is read from the log.
    env: jobEnvironment(kind, identity, {
      METRICS_PORT: String(port),
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    }),
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  // The stack's own exit (a test runner that dies) must not leave the job running.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      process.removeListener('exit', killOnExit);
      if (!stopping.has(child))
        log(`${name} exited (${signal ?? `exit ${code}`}); its log ends:\n${lastLines(logFile)}`);
      resolve();
    }),
  );
  const info: JobProcess = { name, pid: child.pid ?? 0, metricsUrl: `http://127.0.0.1:${port}/metrics`, logFile };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited before it started; its log (${logFile}) ends:\n${lastLines(logFile)}`);
    if (fs.readFileSync(logFile, 'utf8').includes(`"msg":"${STARTED[kind]}"`)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not start within ${START_TIMEOUT_MS / 1000} s; log: ${logFile}`);
    }
    await sleep(200);
  }
  log(`${name} (pid ${info.pid}) serves ${info.metricsUrl}; log ${logFile}`);
  return { info, child, exited };
}

async function stopAll(children: Child[], graceMs: number): Promise<void> {
  await Promise.all(
    children.map(async ({ child, exited }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      stopping.add(child);
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/**
 * Starts `workers` workers and `relays` relays, each with its kind's `identities`, and waits until each logged
 * that it serves; on a failure stops those already started and says which one failed, with the end of its log.
 */
export async function startJob(
  options: JobOptions & { identities: JobIdentities; logDir: string; log: (line: string) => void },
): Promise<RunningJob> {
  fs.mkdirSync(options.logDir, { recursive: true, mode: 0o700 });
  const kinds = [
    ...Array.from({ length: options.workers }, (_, i) => ['worker', i + 1] as const),
    ...Array.from({ length: options.relays }, (_, i) => ['relay', i + 1] as const),
  ];
  options.log(`starting ${options.workers} workers and ${options.relays} relays`);
  // All at once: each compiles the workflow bundle or connects on its own, and the two cores share that.
  const results = await Promise.allSettled(
    kinds.map(([kind, index]) => startOne(kind, index, options.identities[kind], options.logDir, options.log)),
  );
  const children = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stopAll(children, 5_000);
    throw failed.reason as Error;
  }
  const urls = (kind: string) =>
    children
      .filter((c) => c.info.name.startsWith(kind))
      .map((c) => c.info.metricsUrl)
      .join(' ');
  return {
    processes: children.map((c) => c.info),
    env: { STACK_WORKER_METRICS_URLS: urls('worker-'), STACK_RELAY_METRICS_URLS: urls('relay-') },
    stop: (graceMs = 35_000) => stopAll(children, graceMs),
  };
}
