/**
 * Owners another transaction holds ("busy"), run by the real workflow code against stub activities on
 * Temporal's time-skipping test server: reported by the claims, retried in owner groups once the claims are done, after pauses of 1 s doubling up
 * to 30 s, for `busyRetryWindowMs`; counted busy once, and failed if still busy at the end.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { MAX_CARRIED_BUSY_OWNERS } from '../../src/domain/cycle-input';
import {
  counterValue,
  cycleEnvPerFile,
  eventNames,
  runInput,
  timerSeconds,
  withCycle,
  type HistoryEvent,
} from './support/cycle-env';
import type { RemindOwnersInput } from '../../src/activities';
import { STUB_DEFAULTS, callsOf, groups, ownerId, owners } from './support/stub-activities';

const cycle = cycleEnvPerFile();

test('an owner a claim found busy is retried alone once the claims are done, a second later, and counts busy once', async () => {
  await withCycle(
    cycle(),
    { pages: [owners(1, 4), owners(5, 4)], owner: (id, n) => (id === ownerId(2) && n === 1 ? 'busy' : 'sent') },
    { ownerConcurrency: 4, ownerGroupSize: 2 },
    async ({ handle, calls, histories }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({
          status: 'completed',
          ownersProcessed: 8,
          remindersSent: 8,
          ownersBusy: 1,
          failedOwners: 0,
          pages: 2,
        }),
      );
      // The owner alone, after every claim had ended.
      expect(groups(calls)).toEqual([[ownerId(2)]]);
      const retry = callsOf(calls, 'remindOwners')[0];
      const claimsEnd = Math.max(...callsOf(calls, 'claimPage').map((c) => c.end!));
      expect(retry.start).toBeGreaterThan(claimsEnd);

      // In the history: one pause of 1 s, and the retry named for the Web UI's timeline as a retry.
      const [{ events }] = await histories();
      expect(timerSeconds(events)).toEqual([1]);
      const timer = eventNames(events).indexOf('TIMER_FIRED');
      const scheduledAfter = events.slice(timer).filter((e) => e.activityTaskScheduledEventAttributes);
      expect(scheduledAfter.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)).toEqual([
        'remindOwners',
        'pruneReminders',
      ]);
      expect(summaryOf(scheduledAfter[0])).toBe(`busy before: owner ${ownerId(2)}`);
    },
  );
});

test('an owner still busy when busyRetryWindowMs runs out counts failed, is logged by id, and the cycle completes', async () => {
  await withCycle(
    cycle(),
    { pages: [owners(1, 2)], owner: (id) => (id === ownerId(1) ? 'busy' : 'sent') },
    {},
    async ({ handle, calls, metrics, logs, histories }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', ownersProcessed: 1, ownersBusy: 1, failedOwners: 1 }),
      );
      // 1 + 2 + 4 + 8 + 16 = 31 s of pauses; a 30 s one more would pass the 60 s window. Each pause is
      // followed by a retry of the owner alone.
      const [{ events }] = await histories();
      expect(STUB_DEFAULTS.busyRetryWindowMs).toBe(60_000);
      expect(timerSeconds(events)).toEqual([1, 2, 4, 8, 16]);
      expect(groups(calls)).toEqual(Array(5).fill([ownerId(1)]));
      expect(result.durationMs).toBeGreaterThanOrEqual(31_000);

      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
      expect(await counterValue(metrics, 'errors', 'owner')).toBe(1);
      expect(
        logs()
          .filter((l) => l.message === 'owner failed')
          .map((l) => [l.meta?.ownerUserId, l.meta?.error]),
      ).toEqual([[ownerId(1), 'OwnerBusy: another transaction held the owner until the end of the cycle']]);
    },
  );
});

/** The summary an activity was scheduled with (user metadata: the Web UI shows it in the timeline). */
function summaryOf(event: HistoryEvent): string | undefined {
  const payload = event.userMetadata?.summary;
  return payload ? defaultPayloadConverter.fromPayload<string>(payload) : undefined;
}

test('busy owners past what a continue-as-new carries are counted failed and logged by id, not dropped silently', async () => {
  // 10,002 owners busy over three pages (a page holds at most 5,000 owners of two documents each), two more
  // owners on a fourth; a budget of 30 events makes the first run continue as new after its first claim (pages 1-3), carrying
  // 10,000 of the busy owners (each later run retries a group of them and hands over).
  const busyPage = owners(1, MAX_CARRIED_BUSY_OWNERS + 2);
  const half = MAX_CARRIED_BUSY_OWNERS / 2;
  const notCarried = busyPage.slice(MAX_CARRIED_BUSY_OWNERS);
  const busy = new Set(busyPage);
  await withCycle(
    cycle(),
    {
      pages: [busyPage.slice(0, half), busyPage.slice(half, 2 * half), busyPage.slice(2 * half), owners(20_001, 2)],
      owner: (id, n) => (n === 1 && busy.has(id) ? 'busy' : 'sent'),
    },
    { batchSize: 10_000, ownerConcurrency: 500, ownerGroupSize: 500, maxHistoryEvents: 30, pagesPerClaim: 3 },
    async ({ handle, logs, histories }) => {
      const result = await handle.result();
      expect(result.runs).toBeGreaterThanOrEqual(2);
      expect(result).toEqual(
        expect.objectContaining({
          status: 'completed',
          ownersBusy: MAX_CARRIED_BUSY_OWNERS + 2,
          ownersProcessed: MAX_CARRIED_BUSY_OWNERS + 2,
          failedOwners: 2,
        }),
      );
      const [first] = await histories();
      const carried = runInput((await histories())[1].events).continuation!;
      expect(carried.busyOwnerIds).toHaveLength(MAX_CARRIED_BUSY_OWNERS);
      expect(carried.counts.failedOwners).toBe(2);
      expect(eventNames(first.events).at(-1)).toBe('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
      const lines = logs();
      expect(lines.filter((l) => l.message === 'busy owners not carried into the next run').map((l) => l.meta)).toEqual(
        [expect.objectContaining({ carried: MAX_CARRIED_BUSY_OWNERS, notCarried: 2 })],
      );
      expect(lines.filter((l) => l.message === 'owner failed').map((l) => l.meta?.ownerUserId)).toEqual(notCarried);
    },
  );
});

test("a busy owner is retried across continue-as-new, its retries keyed by the chain's first run: their receipts are the partition's", async () => {
  // Owner 1 busy on page 1's claim and again in the first retry round; the run continues as new after page 1.
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 4), owners(5, 4), owners(9, 4)],
      owner: (id, n) => (id === ownerId(1) && n <= 2 ? 'busy' : 'sent'),
    },
    { batchSize: 8, ownerConcurrency: 4, ownerGroupSize: 2, maxHistoryEvents: 30, pagesPerClaim: 1 },
    async ({ handle, calls, histories }) => {
      expect(await handle.result()).toEqual(expect.objectContaining({ status: 'completed', ownersProcessed: 12 }));
      const retries = callsOf(calls, 'remindOwners').filter((c) =>
        (c.input as RemindOwnersInput).ownerUserIds.includes(ownerId(1)),
      );
      expect(retries).toHaveLength(2);
      const runs = await histories();
      expect(runs.length).toBeGreaterThan(1);
      // Found busy in the first run, retried in a later one: the continuation carried it, and every retry names
      // the first run of the chain, as the claims do.
      expect(runInput(runs[1].events).continuation?.busyOwnerIds).toContain(ownerId(1));
      expect(new Set(retries.map((c) => (c.input as RemindOwnersInput).cycleId))).toEqual(new Set([runs[0].runId]));
      expect(new Set(retries.map((c) => c.workflowRunId)).size).toBeGreaterThan(1);
    },
  );
});

test('busy retries never take a run past maxHistoryEvents: owners busy round after round on groups of one hand over to the next run, and the rounds go on where they stopped (issue 28)', async () => {
  // The worst case the settings allow for the retries: every owner busy in every round, one owner per group
  // activity. Each round would add 30 group activities (about 180 events) to a 400-event run.
  const busyPage = owners(1, 30);
  const maxHistoryEvents = 400;
  await withCycle(
    cycle(),
    { pages: [busyPage], owner: () => 'busy' },
    { batchSize: 60, ownerConcurrency: 4, ownerGroupSize: 1, maxHistoryEvents },
    async ({ handle, histories, calls }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({
          status: 'completed',
          ownersBusy: 30,
          failedOwners: 30,
          ownersProcessed: 0,
          pages: 1,
        }),
      );
      expect(result.runs).toBeGreaterThan(1);
      const runs = await histories();
      expect(runs).toHaveLength(result.runs);
      for (const run of runs) expect(run.events.length).toBeLessThanOrEqual(maxHistoryEvents);
      // The rounds go on across the runs: the same pauses as one run would take (1 + 2 + 4 + 8 + 16 s within
      // the 60 s window), not a new window per run; every owner is retried in each of the five rounds.
      expect(runs.flatMap((r) => timerSeconds(r.events))).toEqual([1, 2, 4, 8, 16]);
      expect(groups(callsOf(calls, 'remindOwners')).flat()).toHaveLength(30 * 5);
      for (const run of runs.slice(1)) expect(runInput(run.events).continuation?.busyRetry).toBeDefined();
      // One claim, by the first run only; one prune, by the last.
      expect(callsOf(calls, 'claimPage')).toHaveLength(1);
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
    },
  );
});
