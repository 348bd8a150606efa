/** `npm run stack` as a shell runs it, for the tests of its command line on either profile. */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');

/** A line the stack prints for `eval`: one quoted variable. */
export const EXPORT_LINE = /^export [A-Z_]+='[^']*'$/;

/** A folder of the test file's own for the stack's state, made before its tests and removed after them. */
export function useStateDir(prefix: string): () => string {
  let dir: string | undefined;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!dir) throw new Error('the state folder exists only while the tests run');
    return dir;
  };
}

/** Runs `scripts/stack/cli.ts` with `args` from the repository root, with `env` and a `timeout` in ms. */
export function runStackCli(args: string[], env: NodeJS.ProcessEnv, timeout: number) {
  return run(process.execPath, [require.resolve('tsx/cli'), 'scripts/stack/cli.ts', ...args], {
    cwd: ROOT,
    timeout,
    env,
  });
}
