/** The operator's client (`npm run client -- …`) run in-process, with what it printed captured. */
import { buildProgram } from '../../src/client';
import type { Config } from '../../src/config';

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
    return err as Error;
  }
  throw new Error(`expected "${args.join(' ')}" to fail`);
}
