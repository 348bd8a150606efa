/** Workflows of the production Temporal checks: one that completes at once, one that waits for a signal. */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';

export async function greet(name: string): Promise<string> {
  return `hello ${name}`;
}

export const releaseSignal = defineSignal<[string]>('release');
export const stateQuery = defineQuery<'waiting' | 'released'>('state');

/** Waits for `release` (across a server restart, for the restart test), then returns its note. */
export async function waitForRelease(): Promise<string> {
  let note: string | undefined;
  setHandler(releaseSignal, (n) => {
    note = n;
  });
  setHandler(stateQuery, () => (note === undefined ? 'waiting' : 'released'));
  await condition(() => note !== undefined);
  return `released: ${note}`;
}
