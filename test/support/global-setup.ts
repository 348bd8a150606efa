/**
 * Starts the local stack once for all integration test files (or adopts one named by the environment)
 * and bundles the workflow code once, so each test's worker starts in milliseconds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { writeTestBundle } from './bundle';

const READY = 'STACK_READY ';

function startStackProcess(): Promise<{ child: ChildProcess; env: Record<string, string> }> {
  const root = path.resolve(__dirname, '..', '..');
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), 'scripts/stack/cli.ts', '--json'], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith(READY));
      if (line) resolve({ child, env: JSON.parse(line.slice(READY.length)) });
    });
    child.on('exit', (code) => reject(new Error(`the local stack exited with code ${code} before it was ready`)));
  });
}

export default async function globalSetup(): Promise<void> {
  if (!(process.env.STACK_DATABASE_ADMIN_URL && process.env.TEMPORAL_ADDRESS)) {
    const { child, env } = await startStackProcess();
    (globalThis as { __stack?: ChildProcess }).__stack = child;
    Object.assign(process.env, env);
  }
  // Built once for every test file.
  process.env.WORKFLOW_BUNDLE_PATH = await writeTestBundle();
}
