/**
 * Continue-as-new, run by the real workflow code against stub activities on Temporal's time-skipping
 * test server: a small day whose history would outgrow `maxHistoryEvents` continues as new between its
 * claims, carrying its counts and busy owners, and its result covers every run; a cancel request or the
 * time limit that comes while its last claim runs ends the cycle instead of starting a new run.
 */
import type { ClaimPageInput } from '../../src/activities';
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
  // 8 pages of 4 owners, a claim per page; a claim costs 6 events, so a run of 40 holds a few.
  const pages = Array.from({ length: 8 }, (_, i) => owners(1 + 4 * i, 4));
  const input: CycleInput = {
    batchSize: 8,
    ownerConcurrency: 4,
    ownerGroupSize: 2,
    maxHistoryEvents: 40,
    pagesPerClaim: 1,
  };
  // Owner 1 is busy the first time: found in run 1, retried once the claims are done, in the last run.
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

    // Every page claimed once, in order, over the runs, each run going on from where the last stopped.
    const pageCalls = callsOf(calls, 'claimPage');
    expect(pageCalls.map((c) => (c.input as ClaimPageInput).page)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const runOrder = runs.map((r) => r.runId);
    const runOfPage = pageCalls.map((c) => runOrder.indexOf(c.workflowRunId));
    expect(runOfPage).toEqual([...runOfPage].sort());
    expect(new Set(pageCalls.map((c) => (c.input as ClaimPageInput).cycleId))).toEqual(
      new Set([handle.firstExecutionRunId]),
    );

    const first = runInput(runs[0].events);
    for (const [i, { runId, events }] of runs.entries()) {
      const names = eventNames(events);
      if (i === runs.length - 1) {
        expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
        continue;
      }
      // A continued run stayed within its budget: nothing of it is left running.
      expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
      expect(events.length).toBeLessThanOrEqual(40);
      expect(openActivities(events, 'claimPage').atEnd).toBe(0);
      // What it carried: the counts of every page claimed so far, the busy owner, the same settings and
      // start, and the run number.
      const next = runInput(runs[i + 1].events).continuation!;
      const pagesSoFar = runOfPage.filter((r) => r <= i).length;
      // Owner 1's first claim found it busy: one owner of those pages was not sent.
      const sentSoFar = pagesSoFar * 4 - 1;
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
      });
      if (i > 0) {
        const carried = runInput(events).continuation!;
        expect([carried.settings, carried.startedAtMs]).toEqual([next.settings, next.startedAtMs]);
      }
      expect(runId).not.toBe(runs[i + 1].runId);
    }
    expect(first).toEqual(input);

    // The busy owner, retried alone in the last run after a 1 s pause, once the claims were done.
    const last = runs[runs.length - 1];
    const retry = callsOf(calls, 'remindOwners');
    expect(retry.map((c) => [groups([c])[0], c.workflowRunId])).toEqual([[[ownerId(1)], last.runId]]);
    expect(timerSeconds(last.events)).toEqual([1]);
    const page8 = pageCalls[7];
    expect(retry[0].start).toBeGreaterThan(page8.end!);

    // The end happens once: one prune, in the last run; one cycle in the metrics; one start and end log.
    expect(callsOf(calls, 'pruneReminders').map((c) => c.workflowRunId)).toEqual([last.runId]);
    expect(await counterValue(metrics, 'cycles', 'completed')).toBe(1);
    const messages = logs().map((l) => l.message);
    expect(messages.filter((m) => m === 'cycle started')).toHaveLength(1);
    expect(messages.filter((m) => m === 'cycle completed')).toHaveLength(1);
  });
});

/**
 * A cycle that would continue as new after every claim (the smallest budget), with `stop` coming while
 * page 1's claim runs, so the run learns of it when it would continue.
 */
async function stopBeforeContinuing(
  input: CycleInput,
  stop: Pick<CycleScript, 'onPage'> & { before?: (run: CycleRun) => Promise<void> },
  check: (run: CycleRun, result: CycleResult) => Promise<void>,
) {
  await withCycle(
    cycle(),
    { pages: [owners(1, 4), owners(5, 4)], onPage: stop.onPage },
    { ownerConcurrency: 4, ownerGroupSize: 2, maxHistoryEvents: 10, pagesPerClaim: 1, ...input },
    async (run) => {
      await stop.before?.(run);
      const result = await run.handle.result();
      // It ended in its first run, with page 1's claim counted (it ran to its end) and page 2 unclaimed.
      const runs = await run.histories();
      expect(runs).toHaveLength(1);
      expect(eventNames(runs[0].events).at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
      expect(result).toEqual(expect.objectContaining({ runs: 1, pages: 1, ownersProcessed: 4, remindersSent: 4 }));
      expect(new Set(callsOf(run.calls, 'claimPage').map((c) => (c.input as ClaimPageInput).page))).toEqual(
        new Set([1]),
      );
      await check(run, result);
    },
  );
}

test('a cancel request that comes while the claim before a hand-over runs ends the cycle there', async () => {
  let seen = false;
  await stopBeforeContinuing(
    {},
    {
      // Page 1's claim runs until the workflow has seen the cancel request.
      onPage: async () => void (await holdUntil(() => seen, 10_000)),
      before: async (run) => {
        await holdUntil(() => callsOf(run.calls, 'claimPage').length === 1, 10_000);
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

test('a time limit that passes while the claim before a hand-over is retried ends the cycle there', async () => {
  await stopBeforeContinuing(
    { maxRunDurationMs: 5_000 },
    {
      // Page 1's claim succeeds on its 4th attempt, after 1 + 2 + 4 s of retry backoff (skipped time).
      onPage: (input, { attempt }) => {
        if (input.page === 1 && attempt < 4) throw new Error('transient');
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
      // The workers are redeployed with other settings while the first run claims its first page.
      onPage: () => {
        Object.assign(defaults, { retentionDays: 30, batchSize: 99, thresholdsDays: [60, 14, 3, 0] });
      },
    },
    { batchSize: 8, ownerConcurrency: 4, ownerGroupSize: 2, maxHistoryEvents: 40, pagesPerClaim: 1 },
    async ({ handle, calls, histories }) => {
      const result = await handle.result();
      expect((await histories()).length).toBeGreaterThan(1);
      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', pages: 6, ownersProcessed: 24, thresholdsDays: [30, 7, 1, 0] }),
      );
      const pageCalls = callsOf(calls, 'claimPage').map((c) => c.input as ClaimPageInput);
      expect(new Set(pageCalls.map((p) => p.batchSize))).toEqual(new Set([8]));
      expect(new Set(pageCalls.map((p) => p.window.retentionDays))).toEqual(new Set([STUB_DEFAULTS.retentionDays]));
      expect(new Set(pageCalls.map((p) => p.window.thresholdsDays.join(',')))).toEqual(new Set(['30,7,1,0']));
    },
  );
});
