/**
 * The worker and the relay as the suite runs them: real child processes (`src/worker.ts`,
 * `src/relay.ts` under tsx) pointed at the stack, so a fault can SIGKILL one and watch it die.
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkoutBuildId } from '../../src/config';
import { EXIT_CODES } from '../../src/run-main';
import { spawnGroup } from '../process-group';
import { makePollingVersionCurrent } from '../stack/versions';
import type { FaultDb, Harness } from './harness';

const root = path.resolve(__dirname, '..', '..');

/** Exits the bad-input scenario provokes on purpose: not worth a log file. */
const REFUSALS: (number | null)[] = [EXIT_CODES.config, EXIT_CODES.unavailable];

export interface Proc {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
  /** Sends `signal` unless the process has exited; resolves with its exit code. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** Starts `src/<entry>.ts` with the stack's variables and `env` on top; its output joins `h.output`. */
export function startProcess(h: Harness, entry: 'worker' | 'relay', env: Record<string, string>): Proc {
  const group = spawnGroup(process.execPath, ['--import', 'tsx', path.join(root, 'src', `${entry}.ts`)], {
    cwd: root,
    env: { ...process.env, ...h.stack.env, METRICS_PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { child } = group;
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    output.push(chunk.toString());
    h.output.push(chunk.toString());
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let killed = false;
  const exited = group.exited.then((code) => {
    // A process dying on its own is part of what the suite watches for: show why.
    if (!killed && !REFUSALS.includes(code)) {
      const file = path.join(os.tmpdir(), `faults-${entry}-${child.pid}.log`);
      fs.writeFileSync(file, output.join(''));
      h.say(`  ${entry} exited on its own (${code ?? child.signalCode}); its output: ${file}`);
    }
    return code;
  });
  return {
    child,
    output,
    exited,
    kill: async (signal) => {
      killed = true;
      if (child.exitCode === null && child.signalCode === null) group.signal(signal);
      return exited;
    },
  };
}

/** The suite's own Worker Deployment: its workers' version is made current here, for no one else. */
const SUITE_DEPLOYMENT = `faults-${crypto.randomUUID().slice(0, 8)}`;

/**
 * One build id for the whole run, taken at its start: a worker restarted after a commit (a developer's, while
 * the suite runs) would otherwise declare another version, and the pinned cycles it should finish would wait
 * for workers of theirs that never come back.
 */
const SUITE_BUILD_ID = checkoutBuildId() ?? `faults-${crypto.randomUUID().slice(0, 8)}`;

/** Per task queue: its workers' version made current (see {@link versionServing}). */
const serving = new Map<string, Promise<unknown>>();

/**
 * A worker on `taskQueue`, as the worker role of `db`. Its version is made current once it polls (in the
 * background: a scenario may start a worker that is meant to fail); {@link versionServing} waits for that.
 */
export function startWorker(h: Harness, db: FaultDb, taskQueue: string, env: Record<string, string> = {}): Proc {
  const proc = startProcess(h, 'worker', {
    DATABASE_URL: db.workerUrl,
    TEMPORAL_TASK_QUEUE: taskQueue,
    TEMPORAL_DEPLOYMENT_NAME: SUITE_DEPLOYMENT,
    TEMPORAL_WORKER_BUILD_ID: SUITE_BUILD_ID,
    ...env,
  });
  if (!serving.has(taskQueue)) {
    const namespace = h.stack.env.TEMPORAL_NAMESPACE ?? 'default';
    serving.set(
      taskQueue,
      makePollingVersionCurrent(h.client, namespace, taskQueue).catch((err: Error) => {
        serving.delete(taskQueue);
        h.say(`  the workers of ${taskQueue} were not made current: ${err.message}`);
      }),
    );
  }
  return proc;
}

/** Resolves once the version of the workers started on `taskQueue` is current (at once when none was started). */
export const versionServing = (taskQueue: string): Promise<unknown> => serving.get(taskQueue) ?? Promise.resolve();

/** A relay as the relay role of `db`, polling fast and backing off briefly so outages end quickly. */
export const startRelay = (h: Harness, db: FaultDb, env: Record<string, string> = {}): Proc =>
  startProcess(h, 'relay', {
    DATABASE_URL: db.relayUrl,
    // The production profile prints the relay's URL of its own database; the relay reads it before DATABASE_URL.
    RELAY_DATABASE_URL: db.relayUrl,
    KAFKA_BROKERS: h.stack.kafkaBrokers,
    RELAY_POLL_INTERVAL: '200ms',
    RELAY_MAX_BACKOFF: '2s',
    RELAY_SEND_TIMEOUT: '5s',
    ...env,
  });
