/** The real `temporal` CLI against the test stack's dev server, as an operator runs it. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A variable the test stack sets (jest's global setup), or a message that says so. */
export function stackEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the test stack sets it (run through jest's global setup)`);
  return value;
}

/** Runs the real `temporal` binary against the dev server; rejects with its stderr on a non-zero exit. */
export async function temporalCli(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run(
      stackEnv('TEMPORAL_CLI_PATH'),
      [...args, '--address', stackEnv('TEMPORAL_ADDRESS'), '--namespace', 'default', '--color', 'never'],
      { timeout: 30_000 },
    );
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`temporal ${args.join(' ')} failed: ${e.stderr || e.message}`);
  }
}

/** `temporal … --output json`, parsed. */
export async function temporalJson<T>(...args: string[]): Promise<T> {
  return JSON.parse(await temporalCli(...args, '--output', 'json')) as T;
}
