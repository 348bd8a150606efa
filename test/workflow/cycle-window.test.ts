/**
 * The cycle's owner-group window, run by the real workflow code against stub activities on Temporal's
 * time-skipping test server: how many groups run at once, that the window spans pages and is drained
 * before the prune, and how failed owners and failed groups are counted while the cycle goes on.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { FindCandidatePageInput, RemindOwnersInput } from '../../src/activities';
import { REMINDER_OUTCOME, REMINDERS_SENT } from '../../src/domain/search-attributes';
import {
  counterValue,
  cycleEnvPerFile,
  eventNames,
  openActivities,
  withCycle,
  type HistoryEvent,
} from './support/cycle-env';
import {
  DOCUMENTS_PER_OWNER,
  STUB_DEFAULTS,
  callsOf,
  groups,
  groupsByFirstOwner,
  holdUntil,
  maxConcurrent,
  ownerId,
  owners,
} from './support/stub-activities';

const cycle = cycleEnvPerFile();

const ids = (...numbers: number[]) => numbers.map(ownerId);

test('runs ownerConcurrency / ownerGroupSize groups at once, across pages, and drains them before the prune', async () => {
  // 14 owners on three pages, groups of 2, 6 owners at once: 3 group activities in flight at most.
  const pages = [owners(1, 7), owners(8, 5), owners(13, 2)];
  const input = { ownerConcurrency: 6, ownerGroupSize: 2 };
  await withCycle(
    cycle(),
    {
      pages,
      onGroup: async ({ ownerUserIds: [first] }, _call, calls) => {
        // Page 1's first three groups are held until three groups have run at once, so none ends before
        // the window is as full as it gets: a window of 2 would leave them waiting out the hold (and
        // show 2), one of 4 would start group [7] meanwhile (and show 4).
        if (ids(1, 3, 5).includes(first)) await holdUntil(() => maxConcurrent(calls, 'remindOwners') >= 3);
        // Page 1's last group is held until one of page 2 has started: the window does not drain at a
        // page boundary.
        if (first === ownerId(7)) await holdUntil(() => groups(calls).some((g) => g.includes(ownerId(8))));
      },
    },
    input,
    async ({ handle, calls, metrics, logs, histories }) => {
      const result = await handle.result();
      expect(result).toEqual({
        status: 'completed',
        jobRunId: handle.workflowId,
        asOf: expect.any(String),
        thresholdsDays: STUB_DEFAULTS.thresholdsDays,
        remindersSent: 14,
        ownersNotified: 14,
        skippedAlreadyMarked: 0,
        failedOwners: 0,
        ownersProcessed: 14,
        ownersBusy: 0,
        pages: 3,
        documentsSeen: 14 * DOCUMENTS_PER_OWNER,
        pruned: 3,
        durationMs: expect.any(Number),
        runs: 1,
      });

      // Each page read once, in order, for this cycle's scan (its first run id) in pages of batchSize.
      expect(callsOf(calls, 'findCandidatePage').map((c) => c.input)).toEqual(
        [1, 2, 3].map((page) =>
          expect.objectContaining({
            page,
            cycleId: handle.firstExecutionRunId,
            jobRunId: handle.workflowId,
            batchSize: STUB_DEFAULTS.batchSize,
          }),
        ),
      );
      // Groups of ownerGroupSize in scan order within each page; a page's odd owner goes alone.
      expect(groupsByFirstOwner(calls)).toEqual([
        ids(1, 2),
        ids(3, 4),
        ids(5, 6),
        ids(7),
        ids(8, 9),
        ids(10, 11),
        ids(12),
        ids(13, 14),
      ]);
      for (const c of callsOf(calls, 'remindOwners')) {
        expect(c.input).toEqual(
          expect.objectContaining({
            asOf: result.asOf,
            jobRunId: handle.workflowId,
            thresholdsDays: STUB_DEFAULTS.thresholdsDays,
            lastAttempt: 5,
          }),
        );
      }

      // The window: 3 at once, as the stubs saw it and as the history shows it.
      expect(maxConcurrent(calls, 'remindOwners')).toBe(3);
      const [{ events }] = await histories();
      expect(openActivities(events, 'remindOwners').max).toBe(3);
      // It spans pages: a page-2 group started while page 1's last group was still running.
      const last1 = callsOf(calls, 'remindOwners').find((c) => ownersOf(c.input).includes(ownerId(7)))!;
      const first2 = callsOf(calls, 'remindOwners').find((c) => ownersOf(c.input).includes(ownerId(8)))!;
      expect(first2.start).toBeLessThan(last1.end!);
      // Page 2 was read ahead while page 1's groups ran.
      const page2 = callsOf(calls, 'findCandidatePage').find((c) => (c.input as FindCandidatePageInput).page === 2)!;
      expect(page2.start).toBeLessThan(last1.end!);

      // Drained before the prune: no group runs once the prune starts, nor is one open in history.
      const [prune] = callsOf(calls, 'pruneReminders');
      expect(prune.input).toEqual(expect.objectContaining({ cycleId: handle.firstExecutionRunId }));
      expect(Math.max(...callsOf(calls, 'remindOwners').map((c) => c.end!))).toBeLessThan(prune.start);
      const pruneScheduled = scheduledIndex(events, 'pruneReminders');
      expect(openActivities(events.slice(0, pruneScheduled), 'remindOwners').atEnd).toBe(0);
      expect(eventNames(events).at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');

      // What an operator sees besides the result: search attributes, metrics, logs.
      const { typedSearchAttributes } = await handle.describe();
      expect(typedSearchAttributes.get(REMINDER_OUTCOME)).toBe('completed');
      expect(typedSearchAttributes.get(REMINDERS_SENT)).toBe(14);
      expect(await counterValue(metrics, 'cycles', 'completed')).toBe(1);
      expect(await counterValue(metrics, 'errors', 'owner')).toBe(0);
      expect(logs().map((l) => [l.message, l.meta?.page])).toEqual([
        ['cycle started', undefined],
        ['day planned', undefined],
        ['batch selected', 1],
        ['batch selected', 2],
        ['batch selected', 3],
        ['cycle completed', undefined],
      ]);
    },
  );
});

test('counts an owner the activity reports failed and every owner of a group that failed as a whole, and goes on', async () => {
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 6)],
      owner: (id) => (id === ownerId(2) ? { failed: 'OwnerRejected: check constraint violated' } : 'sent'),
      onGroup: ({ ownerUserIds: [first] }, { attempt }) => {
        // Group [3, 4] fails every attempt; group [5, 6] only its first.
        if (first === ownerId(3)) throw ApplicationFailure.retryable('connection reset', 'DatabaseUnavailable');
        if (first === ownerId(5) && attempt === 1) throw new Error('transient');
      },
    },
    { ownerConcurrency: 6, ownerGroupSize: 2 },
    async ({ handle, calls, metrics, logs, histories }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', ownersProcessed: 3, remindersSent: 3, failedOwners: 3 }),
      );
      // Group [3, 4] got every attempt of the retry policy, group [5, 6] a second one that succeeded.
      const attempts = (first: number) =>
        callsOf(calls, 'remindOwners')
          .filter((c) => ownersOf(c.input)[0] === ownerId(first))
          .map((c) => c.attempt);
      expect(attempts(3)).toEqual([1, 2, 3, 4, 5]);
      expect(attempts(5)).toEqual([1, 2]);
      // The retries waited 1 + 2 + 4 + 8 s of the test server's clock, skipped rather than slept.
      expect(result.durationMs).toBeGreaterThanOrEqual(15_000);

      const [{ events }] = await histories();
      expect(eventNames(events).filter((n) => n === 'ACTIVITY_TASK_FAILED')).toHaveLength(1);
      expect(await counterValue(metrics, 'errors', 'owner')).toBe(3);
      const warnings = logs().filter((l) => l.level === 'WARN' && l.meta?.sdkComponent === 'workflow');
      expect(warnings.map((l) => [l.message, l.meta?.ownerUserId ?? l.meta?.firstOwnerUserId, l.meta?.error])).toEqual(
        expect.arrayContaining([
          ['owner failed', ownerId(2), 'OwnerRejected: check constraint violated'],
          ['owner group failed', ownerId(3), 'DatabaseUnavailable: connection reset'],
        ]),
      );
      expect(warnings).toHaveLength(2);
    },
  );
});

const ownersOf = (input: unknown) => (input as RemindOwnersInput).ownerUserIds;

/** The index of the first ActivityTaskScheduled event of `type`. */
function scheduledIndex(events: HistoryEvent[], type: string): number {
  const index = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);
  expect(index).toBeGreaterThan(0);
  return index;
}
