/**
 * How a cycle stops early, run by the real workflow code against stub activities on Temporal's
 * time-skipping test server: a cancel request lets the groups in flight finish, schedules nothing more
 * and reports `cancelled` (without the prune); the time limit, passed in skipped time, stops the scan or
 * the busy-owner retries and reports `time-limit` (with the prune).
 */
import type { FindCandidatePageInput } from '../../src/activities';
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
import { callsOf, groups, groupsByFirstOwner, holdUntil, ownerId, owners } from './support/stub-activities';
import { waitFor } from '../support/wait';

const cycle = cycleEnvPerFile();

const pageOf = (input: unknown) => (input as FindCandidatePageInput).page;

test('a cancelled cycle lets its groups in flight finish, schedules no more, skips the prune and reports cancelled', async () => {
  let seen = false;
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 6), owners(7, 6)],
      // The first window's groups run until the workflow has seen the cancel request.
      onGroup: async () => void (await holdUntil(() => seen, 10_000)),
    },
    { ownerConcurrency: 4, ownerGroupSize: 2 },
    async (run) => {
      const { handle, calls, metrics, histories } = run;
      await holdUntil(() => callsOf(calls, 'remindOwners').length === 2, 10_000);
      await cancelAndWaitUntilSeen(run);
      seen = true;
      const result = await handle.result();

      // The two groups in flight were counted; no other group started, and page 2's owners never ran.
      expect(result).toEqual(
        expect.objectContaining({ status: 'cancelled', pages: 1, ownersProcessed: 4, remindersSent: 4, pruned: 0 }),
      );
      expect(groupsByFirstOwner(calls)).toEqual([
        [ownerId(1), ownerId(2)],
        [ownerId(3), ownerId(4)],
      ]);
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(0);
      // Page 2 was read ahead before the request; the cycle waited for that read too, and used nothing of it.
      expect(callsOf(calls, 'findCandidatePage').map((c) => [pageOf(c.input), c.end !== undefined])).toEqual([
        [1, true],
        [2, true],
      ]);

      // Cancellation is observed, not propagated: the workflow completes with its result, nothing open.
      const [{ events }] = await histories();
      const names = eventNames(events);
      expect(names).toContain('WORKFLOW_EXECUTION_CANCEL_REQUESTED');
      expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
      expect(openActivities(events, 'remindOwners').atEnd).toBe(0);
      expect((await handle.describe()).typedSearchAttributes.get(REMINDER_OUTCOME)).toBe('cancelled');
      expect(await counterValue(metrics, 'cycles', 'cancelled')).toBe(1);
    },
  );
});

test('a cancel request seen while a page is read ends the cycle without its owners or a page read ahead', async () => {
  let seen = false;
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 2), owners(3, 2), owners(5, 2)],
      // Page 2 (read ahead while page 1's group runs) answers once the workflow has seen the request.
      onPage: async (input) => void (input.page === 2 && (await holdUntil(() => seen, 10_000))),
    },
    {},
    async (run) => {
      const { handle, calls } = run;
      await holdUntil(() => callsOf(calls, 'findCandidatePage').length === 2, 10_000);
      await cancelAndWaitUntilSeen(run);
      seen = true;
      const result = await handle.result();
      expect(result).toEqual(expect.objectContaining({ status: 'cancelled', pages: 2, ownersProcessed: 2 }));
      expect(groups(calls)).toEqual([owners(1, 2)]);
      // Page 3 is not read: the cycle knew it was cancelled when page 2 came.
      expect(callsOf(calls, 'findCandidatePage').map((c) => pageOf(c.input))).toEqual([1, 2]);
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

test('a cycle that passes its time limit while reading a page stops before its owners and reads no further', async () => {
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 4), owners(5, 4), owners(9, 4)],
      // Page 2 answers on its 4th attempt, after 2 + 4 + 8 s of retry backoff (skipped time).
      onPage: (input, { attempt }) => {
        if (input.page === 2 && attempt < 4) throw new Error('transient');
      },
    },
    { maxRunDurationMs: 10_000 },
    async ({ handle, calls }) => {
      const result = await handle.result();
      // Page 2 was read and counted, but none of its owners got a group; nor was page 3 read ahead, the
      // limit having passed when page 2 came.
      expect(result).toEqual(
        expect.objectContaining({ status: 'time-limit', pages: 2, documentsSeen: 16, ownersProcessed: 4 }),
      );
      expect(result.durationMs).toBeGreaterThanOrEqual(14_000);
      expect(groupsByFirstOwner(calls).flat()).toEqual(owners(1, 4));
      expect(new Set(callsOf(calls, 'findCandidatePage').map((c) => pageOf(c.input)))).toEqual(new Set([1, 2]));
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
    },
  );
});
