/** Stops the stack the global setup started (closing its stdin makes it tear down and exit). */
import type { ChildProcess } from 'node:child_process';
import { removeTestBundle } from './bundle';

export default async function globalTeardown(): Promise<void> {
  const child = (globalThis as { __stack?: ChildProcess }).__stack;
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin?.end();
    await exited;
  }
  removeTestBundle(process.env.WORKFLOW_BUNDLE_PATH);
}
