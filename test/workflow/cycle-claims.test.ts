/**
 * A small day's claims, run by the real workflow code against stub activities on Temporal's time-skipping
 * test server: `claimPage` activities of up to `pagesPerClaim` pages each, one after another, each from the
 * page after the last one claimed; the result, search attributes, metrics and logs an operator reads; failed
 * owners and failed attempts counted as the claims report them.
 */
import type { ClaimPageInput } from '../../src/activities';
import { REMINDER_OUTCOME, REMINDERS_SENT } from '../../src/domain/search-attributes';
import { counterValue, cycleEnvPerFile, eventNames, openActivities, withCycle } from './support/cycle-env';
import { DOCUMENTS_PER_OWNER, STUB_DEFAULTS, callsOf, maxConcurrent, ownerId, owners } from './support/stub-activities';

const cycle = cycleEnvPerFile();

test('claims the day in activities of pagesPerClaim pages, one at a time, each from the page after the last, then prunes', async () => {
  // 14 owners on five pages, three pages a claim.
  const pages = [owners(1, 4), owners(5, 3), owners(8, 3), owners(11, 2), owners(13, 2)];
  await withCycle(
    cycle(),
    { pages },
    { pagesPerClaim: 3, ownerConcurrency: 6 },
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
        pages: 5,
        documentsSeen: 14 * DOCUMENTS_PER_OWNER,
        pruned: 3,
        durationMs: expect.any(Number),
        runs: 1,
      });
      expect(callsOf(calls, 'claimPage').map((c) => c.input)).toEqual(
        [1, 4].map((page) =>
          expect.objectContaining({
            page,
            pages: 3,
            cycleId: handle.firstExecutionRunId,
            jobRunId: handle.workflowId,
            batchSize: STUB_DEFAULTS.batchSize,
            ownerConcurrency: 6,
            asOf: result.asOf,
            partition: { index: 0, count: 1 },
            lastAttempt: 10,
          }),
        ),
      );
      expect(maxConcurrent(calls, 'claimPage')).toBe(1);
      // The claims end before the prune starts; nothing is left open in history.
      const [prune] = callsOf(calls, 'pruneReminders');
      expect(prune.input).toEqual(expect.objectContaining({ cycleId: handle.firstExecutionRunId }));
      expect(Math.max(...callsOf(calls, 'claimPage').map((c) => c.end!))).toBeLessThan(prune.start);
      const [{ events }] = await histories();
      expect(openActivities(events, 'claimPage').atEnd).toBe(0);
      expect(eventNames(events).at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');

      // What an operator sees besides the result: search attributes, metrics, logs.
      const { typedSearchAttributes } = await handle.describe();
      expect(typedSearchAttributes.get(REMINDER_OUTCOME)).toBe('completed');
      expect(typedSearchAttributes.get(REMINDERS_SENT)).toBe(14);
      expect(await counterValue(metrics, 'cycles', 'completed')).toBe(1);
      expect(await counterValue(metrics, 'errors', 'owner')).toBe(0);
      expect(logs().map((l) => [l.message, l.meta?.page, l.meta?.pages])).toEqual([
        ['cycle started', undefined, undefined],
        ['day planned', undefined, undefined],
        ['batch selected', 1, 3],
        ['batch selected', 4, 2],
        ['cycle completed', undefined, 5],
      ]);
    },
  );
});

test('without pagesPerClaim a claim asks for 64 pages, so a day whose pages fit in its five seconds is one activity', async () => {
  // Ten pages: two activities when the default was 8.
  const pages = Array.from({ length: 10 }, (_, i) => owners(1 + 2 * i, 2));
  await withCycle(cycle(), { pages }, { ownerConcurrency: 6 }, async ({ handle, calls }) => {
    const result = await handle.result();
    expect(result).toEqual(expect.objectContaining({ status: 'completed', pages: 10, remindersSent: 20 }));
    expect(callsOf(calls, 'claimPage').map((c) => c.input)).toEqual([expect.objectContaining({ page: 1, pages: 64 })]);
  });
});

test('counts and logs the owners a claim reports failed; a claim that fails an attempt is retried and counted once', async () => {
  await withCycle(
    cycle(),
    {
      pages: [owners(1, 3), owners(4, 3)],
      owner: (id) => (id === ownerId(2) ? { failed: 'OwnerRejected: check constraint violated' } : 'sent'),
      onPage: (input, { attempt }) => {
        if (input.page === 2 && attempt < 3) throw new Error('transient');
      },
    },
    { pagesPerClaim: 1 },
    async ({ handle, calls, metrics, logs }) => {
      const result = await handle.result();
      expect(result).toEqual(
        expect.objectContaining({
          status: 'completed',
          pages: 2,
          ownersProcessed: 5,
          remindersSent: 5,
          failedOwners: 1,
        }),
      );
      expect(callsOf(calls, 'claimPage').map((c) => [(c.input as ClaimPageInput).page, c.attempt])).toEqual([
        [1, 1],
        [2, 1],
        [2, 2],
        [2, 3],
      ]);
      expect(await counterValue(metrics, 'errors', 'owner')).toBe(1);
      const warnings = logs().filter((l) => l.level === 'WARN' && l.meta?.sdkComponent === 'workflow');
      expect(warnings.map((l) => [l.message, l.meta?.ownerUserId, l.meta?.error])).toEqual([
        ['owner failed', ownerId(2), 'OwnerRejected: check constraint violated'],
      ]);
    },
  );
});
