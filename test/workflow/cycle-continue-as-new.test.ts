/**
 * Continue-as-new, run by the real workflow code against stub activities on Temporal's time-skipping
 * test server: a cycle whose history would outgrow `maxHistoryEvents` drains its window and continues
 * as new, carrying its counts and busy owners, and its result covers every run; a cancel request or
 * the time limit that comes while it drains ends the cycle instead of starting a new run.
 */
import type { FindCandidatePageInput } from '../../src/activities';
import { ZERO_COUNTS, type CycleContinuation, type CycleInput, type CycleResult } from '../../src/domain/cycle';
import {
  cancelAndWaitUntilSeen,
  counterValue,
  cycleEnvPerFile,
  eventNames,
  openActivities,
  runInput,
  timerSeconds,
  withCycle,
  type CycleRun,
} from './support/cycle-env';
import {
  DOCUMENTS_PER_OWNER,
  STUB_DEFAULTS,
  callsOf,
  groups,
  holdUntil,
  ownerId,
  owners,
  type CycleScript,
} from './support/stub-activities';

const cycle = cycleEnvPerFile();

/** Well-formed settings as the workflow carries them (the stub worker's configuration, as of 2026-06-01). */
const STUB_SETTINGS = {
  ...STUB_DEFAULTS,
  asOf: '2026-06-01T00:00:00.000Z',
  asOfDate: '2026-06-01',
};

test('continues as new before the history fills, carrying counts and busy owners; the result covers every run', async () => {
  // 8 pages of 4 owners; a page may cost (8 / 2 + 1) × 6 = 30 events, so a run of 60 holds a few.
  const pages = Array.from({ length: 8 }, (_, i) => owners(1 + 4 * i, 4));
  const input: CycleInput = { batchSize: 8, ownerConcurrency: 4, ownerGroupSize: 2, maxHistoryEvents: 60 };
  // Owner 1 is busy the first time: found in run 1, retried once the scan is done, in the last run.
  const owner = (id: string, n: number) => (id === ownerId(1) && n === 1 ? 'busy' : 'sent');
  await withCycle(cycle(), { pages, owner }, input, async ({ handle, calls, metrics, logs, histories }) => {
    const result = await handle.result();
    const runs = await histories();
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(result).toEqual(
      expect.objectContaining({
        status: 'completed',
        runs: runs.length,
        pages: 8,
        documentsSeen: 32 * DOCUMENTS_PER_OWNER,
        ownersProcessed: 32,
        remindersSent: 32,
        ownersBusy: 1,
        failedOwners: 0,
      }),
    );

    // Every page read once, in order, over the runs, each run going on from where the last stopped.
    const pageCalls = callsOf(calls, 'findCandidatePage');
    expect(pageCalls.map((c) => (c.input as FindCandidatePageInput).page)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const runOrder = runs.map((r) => r.runId);
    const runOfPage = pageCalls.map((c) => runOrder.indexOf(c.workflowRunId));
    expect(runOfPage).toEqual([...runOfPage].sort());
    expect(new Set(pageCalls.map((c) => (c.input as FindCandidatePageInput).cycleId))).toEqual(
      new Set([handle.firstExecutionRunId]),
    );

    const first = runInput(runs[0].events);
    for (const [i, { runId, events }] of runs.entries()) {
      const names = eventNames(events);
      if (i === runs.length - 1) {
        expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
        continue;
      }
      // A continued run stayed within its budget, and drained: nothing of it is left running.
      expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
      expect(events.length).toBeLessThanOrEqual(60);
      expect(openActivities(events, 'remindOwners').atEnd).toBe(0);
      expect(openActivities(events, 'findCandidatePage').atEnd).toBe(0);
      // What it carried: the counts of every page read so far (all of whose groups had ended), the
      // busy owner, the same settings and start, and the run number.
      const next = runInput(runs[i + 1].events).continuation!;
      const pagesSoFar = runOfPage.filter((r) => r <= i).length;
      const groupsSoFar = callsOf(calls, 'remindOwners').filter((c) => runOrder.indexOf(c.workflowRunId) <= i);
      // Owner 1's first call found it busy: one owner of those groups was not sent.
      const sentSoFar = groups(groupsSoFar).flat().length - 1;
      expect(groupsSoFar.every((c) => c.end !== undefined)).toBe(true);
      expect(next).toEqual({
        settings: expect.objectContaining(input),
        startedAtMs: expect.any(Number),
        counts: {
          remindersSent: sentSoFar,
          ownersNotified: sentSoFar,
          skippedAlreadyMarked: 0,
          failedOwners: 0,
          ownersProcessed: sentSoFar,
          ownersBusy: 1,
          pages: pagesSoFar,
          documentsSeen: pagesSoFar * 4 * DOCUMENTS_PER_OWNER,
        },
        runs: i + 2,
        busyOwnerIds: [ownerId(1)],
        // Who found it busy: its retry reads back what that activity's earlier attempts queued.
        busyQueuedBy: { [ownerId(1)]: [expect.stringMatching(new RegExp(`^${runs[0].runId}/\\d+$`))] },
      });
      if (i > 0) {
        const carried = runInput(events).continuation!;
        expect([carried.settings, carried.startedAtMs]).toEqual([next.settings, next.startedAtMs]);
      }
      expect(runId).not.toBe(runs[i + 1].runId);
    }
    expect(first).toEqual(input);

    // The busy owner, retried alone in the last run after a 1 s pause, once the scan was done.
    const last = runs[runs.length - 1];
    const retry = callsOf(calls, 'remindOwners').filter((c) => groups([c])[0].includes(ownerId(1)));
    expect(retry.map((c) => [groups([c])[0].length, c.workflowRunId])).toEqual([
      [2, runs[0].runId],
      [1, last.runId],
    ]);
    expect(timerSeconds(last.events)).toEqual([1]);
    const page8 = pageCalls[7];
    expect(retry[1].start).toBeGreaterThan(page8.end!);

    // The end happens once: one prune, in the last run; one cycle in the metrics; one start and end log.
    expect(callsOf(calls, 'pruneReminders').map((c) => c.workflowRunId)).toEqual([last.runId]);
    expect(await counterValue(metrics, 'cycles', 'completed')).toBe(1);
    const messages = logs().map((l) => l.message);
    expect(messages.filter((m) => m === 'cycle started')).toHaveLength(1);
    expect(messages.filter((m) => m === 'cycle completed')).toHaveLength(1);
  });
});

/**
 * A cycle that would continue as new after every page (the smallest budget), with `stop` coming while
 * page 1's groups run, so the run learns of it while it drains before continuing.
 */
async function stopWhileDraining(
  input: CycleInput,
  stop: Pick<CycleScript, 'onGroup'> & { before?: (run: CycleRun) => Promise<void> },
  check: (run: CycleRun, result: CycleResult) => Promise<void>,
) {
  await withCycle(
    cycle(),
    { pages: [owners(1, 4), owners(5, 4)], onGroup: stop.onGroup },
    { ownerConcurrency: 4, ownerGroupSize: 2, maxHistoryEvents: 10, ...input },
    async (run) => {
      await stop.before?.(run);
      const result = await run.handle.result();
      // It ended in its first run, with page 1's groups counted (they ran to their end) and page 2 unread.
      const runs = await run.histories();
      expect(runs).toHaveLength(1);
      expect(eventNames(runs[0].events).at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
      expect(result).toEqual(expect.objectContaining({ runs: 1, pages: 1, ownersProcessed: 4, remindersSent: 4 }));
      expect(callsOf(run.calls, 'findCandidatePage')).toHaveLength(1);
      await check(run, result);
    },
  );
}

test('a cancel request that comes while the run drains before continuing ends the cycle there', async () => {
  let seen = false;
  await stopWhileDraining(
    {},
    {
      // Page 1's groups run until the workflow has seen the cancel request.
      onGroup: async () => void (await holdUntil(() => seen, 10_000)),
      before: async (run) => {
        await holdUntil(() => callsOf(run.calls, 'remindOwners').length === 2, 10_000);
        await cancelAndWaitUntilSeen(run);
        seen = true;
      },
    },
    async ({ calls, metrics }, result) => {
      expect(result.status).toBe('cancelled');
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(0);
      expect(await counterValue(metrics, 'cycles', 'cancelled')).toBe(1);
    },
  );
});

test('a time limit that passes while the run drains before continuing ends the cycle there', async () => {
  await stopWhileDraining(
    { maxRunDurationMs: 5_000 },
    {
      // Group [1, 2] succeeds on its 4th attempt, after 1 + 2 + 4 s of retry backoff (skipped time).
      onGroup: ({ ownerUserIds: [first] }, { attempt }) => {
        if (first === ownerId(1) && attempt < 4) throw new Error('transient');
      },
    },
    async ({ calls, metrics }, result) => {
      expect(result.status).toBe('time-limit');
      expect(result.durationMs).toBeGreaterThanOrEqual(7_000);
      // Unlike a cancelled one, a cycle stopped by its time limit still prunes.
      expect(callsOf(calls, 'pruneReminders')).toHaveLength(1);
      expect(await counterValue(metrics, 'cycles', 'time-limit')).toBe(1);
    },
  );
});

test('a continuation typed into a new start (the Web UI) is refused at once: its counts and settings never become the cycle', async () => {
  const continuation: CycleContinuation = {
    settings: { ...STUB_SETTINGS, busyRetryWindowMs: 86_400_000 },
    startedAtMs: 0,
    counts: { ...ZERO_COUNTS, pages: 0, remindersSent: 1_000_000, ownersNotified: 0 },
    runs: 2,
    busyOwnerIds: [],
  };
  await withCycle(cycle(), { pages: [owners(1, 2)] }, { continuation }, async ({ handle, calls }) => {
    const failure = await handle.result().then(
      () => undefined,
      (err: Error) => err.cause as Error & { type?: string },
    );
    expect(failure?.type).toBe('InvalidCycleInput');
    expect(failure?.message).toContain('continuation: only a run that continued as new may carry one');
    expect(calls).toEqual([]);
  });
});

test('a rollout between two runs (retention, batch size, thresholds changed) does not fail the cycle: every run keeps the first run’s settings', async () => {
  const pages = Array.from({ length: 6 }, (_, i) => owners(1 + 4 * i, 4));
  const defaults = { ...STUB_DEFAULTS };
  await withCycle(
    cycle(),
    {
      pages,
      defaults,
      // The workers are redeployed with other settings while the first run reads its first page.
      onPage: () => {
        Object.assign(defaults, { retentionDays: 30, batchSize: 99, thresholdsDays: [60, 14, 3, 0] });
      },
    },
    { batchSize: 8, ownerConcurrency: 4, ownerGroupSize: 2, maxHistoryEvents: 60 },
    async ({ handle, calls, histories }) => {
      const result = await handle.result();
      expect((await histories()).length).toBeGreaterThan(1);
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', pages: 6, ownersProcessed: 24, thresholdsDays: [30, 7, 1, 0] }),
      );
      const pageCalls = callsOf(calls, 'findCandidatePage').map((c) => c.input as FindCandidatePageInput);
      expect(new Set(pageCalls.map((p) => p.batchSize))).toEqual(new Set([8]));
      expect(new Set(pageCalls.map((p) => p.window.retentionDays))).toEqual(new Set([STUB_DEFAULTS.retentionDays]));
      expect(new Set(pageCalls.map((p) => p.window.thresholdsDays.join(',')))).toEqual(new Set(['30,7,1,0']));
    },
  );
});
