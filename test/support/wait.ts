/** Polling for a condition the way a person refreshing a query would, with a deadline. */
import { setTimeout as sleep } from 'node:timers/promises';
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000, intervalMs = 100): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

/** Polls `fn` until it returns something other than undefined, and returns that. */
export async function eventually<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** Waits `ms`: for the tests that must let time pass (a lock held, a timer due), not for a condition. */
export { sleep };

/** Whether a process of that pid exists (signal 0 checks without signalling). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
