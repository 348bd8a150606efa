/** The operator's client (`npm run client -- …`) run in-process, with what it printed captured. */
import { buildProgram } from '../../src/client';
import crypto from 'node:crypto';
import type { Config } from '../../src/config';
import { useIntegration } from './harness';
import { testConfig } from './stack';
import { errorOf } from '../../src/domain/failures';

export interface ClientRun<T> {
  /** stdout, parsed: every command prints one JSON document there. */
  output: T;
  /** What went to stderr: progress lines, warnings, commander's usage. */
  stderr: string;
}

/** Runs the client with `args` (as after `npm run client --`) and the configuration `config` returns. */
export async function runClient<T = Record<string, unknown>>(
  config: () => Config,
  args: string[],
): Promise<ClientRun<T>> {
  const out: string[] = [];
  const err: string[] = [];
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk));
    return true;
  });
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    err.push(String(chunk));
    return true;
  });
  try {
    await buildProgram(config).parseAsync(['node', 'client', ...args]);
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
  return { output: JSON.parse(out.join('')) as T, stderr: err.join('') };
}

/** Runs the client expecting it to fail, and returns the error. */
export async function clientError(config: () => Config, args: string[]): Promise<Error> {
  try {
    await runClient(config, args);
  } catch (err) {
    return errorOf(err);
  }
  throw new Error(`expected "${args.join(' ')}" to fail`);
}

/**
 * The client as a test file's operator runs it: with the harness workers' configuration, or with one a test
 * sets through `use` for itself (reset before every test).
 */
function operatorClient(base: () => Config) {
  let override: Config | undefined;
  beforeEach(() => {
    override = undefined;
  });
  const current = () => override ?? base();
  return {
    /** This test runs the client with `config`. */
    use(config: Config): void {
      override = config;
    },
    /** Runs `npm run client -- …args` and returns what it printed, parsed. */
    run: async <T = Record<string, unknown>>(...args: string[]): Promise<T> =>
      (await runClient<T>(current, args)).output,
    /** Runs the client expecting it to fail. */
    error: (...args: string[]) => clientError(current, args),
  };
}

/**
 * A file of operator-command tests: the harness with one worker on a task queue of the file's own, its
 * configuration pointing at the file's database, and the client run with it.
 */
export function useOperatorStack(label: string) {
  const taskQueue = `${label}-${crypto.randomUUID()}`;
  const stack = useIntegration(label, {
    worker: 'file',
    taskQueue,
    config: (db) => testConfig({ TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: db.workerUrl }),
  });
  return { stack, taskQueue, operator: operatorClient(() => stack.config) };
}
