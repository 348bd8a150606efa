/**
 * How a cycle stops early, run by the real workflow code against stub activities on Temporal's
 * time-skipping test server: a cancel request lets the claim in flight finish, schedules nothing more
 * and reports `cancelled` (without the prune); the time limit, passed in skipped time, stops the claims or
 * the busy-owner retries and reports `time-limit` (with the prune).
 */
import type { ClaimPageInput } from '../../src/activities';
import { REMINDER_OUTCOME } from '../../src/domain/search-attributes';
import {
  cancelAndWaitUntilSeen,
  counterValue,
  cycleEnvPerFile,
  eventNames,
  openActivities,
  timerSeconds,
  withCycle,
} from './support/cycle-env';
import { callsOf, groups, holdUntil, ownerId, owners } from './support/stub-activities';
import { waitFor } from '../support/wait';

const cycle = cycleEnvPerFile();

const pageOf = (input: unknown) => (input as ClaimPageInput).page;

test('a cancelled cycle lets its claim in flight finish, claims no more, skips the prune and reports cancelled', async () => {
  let seen = false;
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 6), owners(7, 6), owners(13, 2)],
      // The first claim runs until the workflow has seen the cancel request.
      onPage: async () => void (await holdUntil(() => seen, 10_000)),
    },
    { pagesPerClaim: 1 },
    async (run) => {
      const { handle, calls, metrics, histories } = run;
      await holdUntil(() => callsOf(calls, 'claimPage').length === 1, 10_000);
      await cancelAndWaitUntilSeen(run);
      seen = true;
      const result = await handle.result();

      // The claim in flight was counted; no other claim started.
      expect(result).toEqual(
        expect.objectContaining({ status: 'cancelled', pages: 1, ownersProcessed: 6, remindersSent: 6, pruned: 0 }),
      );
      expect(callsOf(calls, 'claimPage').map((c) => [pageOf(c.input), c.end !== undefined])).toEqual([[1, true]]);
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(0);

      // Cancellation is observed, not propagated: the workflow completes with its result, nothing open.
      const [{ events }] = await histories();
      const names = eventNames(events);
      expect(names).toContain('WORKFLOW_EXECUTION_CANCEL_REQUESTED');
      expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
      expect(openActivities(events, 'claimPage').atEnd).toBe(0);
      expect((await handle.describe()).typedSearchAttributes.get(REMINDER_OUTCOME)).toBe('cancelled');
      expect(await counterValue(metrics, 'cycles', 'cancelled')).toBe(1);
    },
  );
});

test('a cancel request ends the pause before a busy-owner retry at once, and the still-busy owner counts failed', async () => {
  await withCycle(
    cycle(),
    // Owner 1 stays busy: the cycle would retry it for a minute (busyRetryWindowMs).
    { pages: [owners(1, 2)], owner: (id) => (id === ownerId(1) ? 'busy' : 'sent') },
    {},
    async (run) => {
      const { handle, calls, logs, histories } = run;
      // Before handle.result() the test server does not skip time: the cycle waits in real time.
      await waitFor(async () => eventNames((await histories())[0].events).includes('TIMER_STARTED'), 10_000, 20);
      await cancelAndWaitUntilSeen(run);
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'cancelled', ownersProcessed: 1, ownersBusy: 1, failedOwners: 1, pruned: 0 }),
      );
      // It did not sit out the pause: the cycle ended with its (non-cancellable) timer still pending.
      const [{ events }] = await histories();
      expect(eventNames(events).filter((n) => n === 'TIMER_STARTED').length).toBeGreaterThan(
        eventNames(events).filter((n) => n === 'TIMER_FIRED').length,
      );
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(0);
      expect(
        logs()
          .filter((l) => l.message === 'owner failed')
          .map((l) => [l.meta?.ownerUserId, l.meta?.error]),
      ).toEqual([[ownerId(1), 'OwnerBusy: another transaction held the owner until the end of the cycle']]);
    },
  );
});

test('a cycle that reaches its time limit while retrying a busy owner ends time-limit, in skipped time', async () => {
  const began = Date.now();
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 2)],
      owner: (id) => (id === ownerId(1) ? 'busy' : 'sent'),
      // Longer than the time limit, so the limit is what ends the retries.
      defaults: { busyRetryWindowMs: 3_600_000 },
    },
    { maxRunDurationMs: 600_000 },
    async ({ handle, calls, metrics, histories }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'time-limit', ownersProcessed: 1, ownersBusy: 1, failedOwners: 1 }),
      );
      // Ten minutes of the cycle's clock, in pauses of 1, 2, 4, 8, 16 s and then 30 s each.
      expect(result.durationMs).toBeGreaterThanOrEqual(600_000);
      const [{ events }] = await histories();
      const pauses = timerSeconds(events);
      expect(pauses.slice(0, 7)).toEqual([1, 2, 4, 8, 16, 30, 30]);
      expect(pauses.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(600);
      // A retry after every pause but the last, each for the busy owner alone; it counts busy once.
      const retries = groups(calls).filter((g) => g.length === 1 && g[0] === ownerId(1));
      expect(retries).toHaveLength(pauses.length - 1);
      // The time limit still prunes, and the metrics say how it ended.
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
      expect(await counterValue(metrics, 'cycles', 'time-limit')).toBe(1);
    },
  );
  // Skipped, not slept: far less than ten minutes of the test's own time.
  expect(Date.now() - began).toBeLessThan(60_000);
});

test('a cycle that passes its time limit while a claim is retried counts the claim and claims no further', async () => {
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 4), owners(5, 4), owners(9, 4)],
      // Page 2's claim answers on its 4th attempt, after 1 + 2 + 4 s of retry backoff (skipped time).
      onPage: (input, { attempt }) => {
        if (input.page === 2 && attempt < 4) throw new Error('transient');
      },
    },
    { maxRunDurationMs: 5_000, pagesPerClaim: 1 },
    async ({ handle, calls }) => {
      const result = await handle.result();
      // Page 2's claim is counted (its owners were claimed in it); page 3 is not claimed, the limit having
      // passed when page 2's claim came back.
      expect(result).toEqual(
        expect.objectContaining({ status: 'time-limit', pages: 2, documentsSeen: 16, ownersProcessed: 8 }),
      );
      expect(result.durationMs).toBeGreaterThanOrEqual(7_000);
      expect(new Set(callsOf(calls, 'claimPage').map((c) => pageOf(c.input)))).toEqual(new Set([1, 2]));
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
    },
  );
});
