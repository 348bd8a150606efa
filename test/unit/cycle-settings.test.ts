import {
  ZERO_COUNTS,
  ownerGroups,
  type CycleContinuation,
  type CycleDefaults,
  type CycleInput,
  type CycleSettings,
} from '../../src/domain/cycle';
import { parseAsOf, resolveCycleSettings } from '../../src/domain/cycle-input';

const DEFAULTS: CycleDefaults = {
  thresholdsDays: [30, 7, 1, 0],
  batchSize: 500,
  retentionDays: 90,
  maxRunDurationMs: 600_000,
  ownerConcurrency: 50,
  ownerGroupSize: 25,
  maxHistoryEvents: 9_000,
  busyRetryWindowMs: 70_000,
};
const START = new Date('2026-06-01T03:00:00.000Z');
/** The wall clock of the tests: later in the day of START, so dates up to 2026-06-01 are not in the future. */
const NOW = new Date('2026-06-01T21:00:00.000Z');
const AT = { defaultAsOf: START, now: NOW, jobRunId: 'document-expiry-reminder-cycle-2026-06-01T03:00:00Z' };

function settingsOf(input: unknown): CycleSettings {
  const result = resolveCycleSettings(DEFAULTS, input, AT);
  if (!result.ok) throw new Error(`unexpected problems: ${result.problems.join('; ')}`);
  return result.settings;
}

function problemsOf(input: unknown, at = AT): string[] {
  const result = resolveCycleSettings(DEFAULTS, input, at);
  if (result.ok) throw new Error('expected problems, got settings');
  return result.problems;
}

describe('resolveCycleSettings', () => {
  it('uses the defaults and the cycle start when the input is empty', () => {
    expect(settingsOf({})).toEqual({
      ...DEFAULTS,
      asOf: '2026-06-01T03:00:00.000Z',
      asOfDate: '2026-06-01',
    });
  });

  it('reads an asOf date as midnight UTC of that date', () => {
    const s = settingsOf({ asOf: '2026-05-01' });
    expect(s.asOf).toBe('2026-05-01T00:00:00.000Z');
    expect(s.asOfDate).toBe('2026-05-01');
  });

  it('keeps the UTC date of an asOf instant late in the day', () => {
    expect(settingsOf({ asOf: '2026-05-01T23:59:59.999Z' })).toMatchObject({
      asOf: '2026-05-01T23:59:59.999Z',
      asOfDate: '2026-05-01',
    });
  });

  it('takes the UTC date, not the local one, of an instant with an offset', () => {
    expect(settingsOf({ asOf: '2026-05-01T22:30:00-02:00' })).toMatchObject({
      asOf: '2026-05-02T00:30:00.000Z',
      asOfDate: '2026-05-02',
    });
  });

  it("accepts today's UTC date, even an instant later today", () => {
    expect(settingsOf({ asOf: '2026-06-01' }).asOfDate).toBe('2026-06-01');
    expect(settingsOf({ asOf: '2026-06-01T23:00:00Z' }).asOfDate).toBe('2026-06-01');
  });

  it.each(['2027-06-01', '2026-06-02', '2026-06-01T23:30:00-02:00'])(
    'refuses asOf %j, after the current UTC date, naming the field and the value',
    (asOf) => {
      expect(problemsOf({ asOf })).toEqual([
        `asOf=${JSON.stringify(asOf)}: after today's UTC date (2026-06-01); a cycle as of a later day would send reminders early and prune the markers of documents still in the window`,
      ]);
    },
  );

  it('accepts retentionDays equal to the configured retention, and refuses any other, 0 included', () => {
    expect(settingsOf({ retentionDays: 90 }).retentionDays).toBe(90);
    for (const retentionDays of [0, 30, 91, -1]) {
      expect(problemsOf({ retentionDays })).toEqual([
        `retentionDays=${retentionDays}: expected the configured retention, 90 (REMINDER_RETENTION_DAYS), or no value; it bounds both the scan and the prune of the shared ledger, so it is changed in the worker's configuration, not per run`,
      ]);
    }
  });

  it.each([
    [null, 'null'],
    [[], 'an array'],
    ['2026-06-01', 'the string "2026-06-01"'],
    [7, 'number 7'],
  ])('refuses input %j that is not an object', (input, described) => {
    expect(problemsOf(input)).toEqual([
      `the input must be an object such as {} or {"asOf": "2026-12-01"}, got ${described}`,
    ]);
  });

  it('takes a partition count from 1 to 64, and refuses anything else naming the bounds', () => {
    expect(settingsOf({ partitions: 3 }).partitions).toBe(3);
    expect(settingsOf({}).partitions).toBeUndefined();
    for (const partitions of [0, 65, 2.5, '4'])
      expect(problemsOf({ partitions })).toEqual([
        `partitions=${JSON.stringify(partitions)}: expected a whole number from 1 to 64`,
      ]);
  });

  it('takes pages per claim from 1 to 64, kept out of the settings unless given, and refuses anything else', () => {
    expect(settingsOf({ pagesPerClaim: 1 }).pagesPerClaim).toBe(1);
    expect('pagesPerClaim' in settingsOf({})).toBe(false);
    for (const pagesPerClaim of [0, 65, 1.5, '8'])
      expect(problemsOf({ pagesPerClaim })).toEqual([
        `pagesPerClaim=${JSON.stringify(pagesPerClaim)}: expected a whole number from 1 to 64`,
      ]);
  });

  it('refuses an unknown field, such as a typo for asOf, instead of running as of today', () => {
    expect(problemsOf({ asof: '2026-05-01' })).toEqual([
      'unknown field "asof": expected only asOf, thresholdsDays, batchSize, retentionDays, maxRunDurationMs, ownerConcurrency, ownerGroupSize, maxHistoryEvents, partitions, pagesPerClaim',
    ]);
  });

  it('refuses a threshold above ten years', () => {
    expect(problemsOf({ thresholdsDays: [36500, 7] })).toEqual([
      'thresholdsDays=[36500,7]: every threshold must be at most 3650 days (ten years) (e.g. [30, 7, 1, 0])',
    ]);
    expect(settingsOf({ thresholdsDays: [3650, 0] }).thresholdsDays).toEqual([3650, 0]);
  });

  it('refuses a workflow id longer than the outbox correlation_id holds (128), and accepts 128', () => {
    expect(problemsOf({}, { ...AT, jobRunId: 'x'.repeat(129) })).toEqual([
      `workflow id "${'x'.repeat(40)}…" is 129 characters long: expected at most 128, which is what the outbox's correlation_id holds; start the cycle with a shorter id`,
    ]);
    expect(resolveCycleSettings(DEFAULTS, {}, { ...AT, jobRunId: 'x'.repeat(128) }).ok).toBe(true);
  });

  it.each(['yesterday', '01/12/2026', '2026-13-01', ''])('rejects asOf %j, naming the field and the value', (asOf) => {
    expect(problemsOf({ asOf })).toEqual([
      `asOf=${JSON.stringify(asOf)}: expected a date YYYY-MM-DD or an ISO 8601 instant with a UTC offset, e.g. 2026-12-02T03:00:00Z`,
    ]);
  });

  it('rejects asOf 2026-02-30, a date that does not exist', () => {
    expect(problemsOf({ asOf: '2026-02-30' })).toEqual([
      'asOf="2026-02-30": expected a date YYYY-MM-DD or an ISO 8601 instant with a UTC offset, e.g. 2026-12-02T03:00:00Z',
    ]);
  });

  it('applies each override and keeps the other defaults', () => {
    const overrides: CycleInput = {
      thresholdsDays: [14, 0],
      batchSize: 10,
      retentionDays: 90,
      maxRunDurationMs: 1_000,
      ownerConcurrency: 500,
      ownerGroupSize: 1,
      maxHistoryEvents: 10,
    };
    for (const [field, value] of Object.entries(overrides)) {
      expect(settingsOf({ [field]: value })).toEqual({ ...settingsOf({}), [field]: value });
    }
  });

  it.each<[string, CycleInput, string]>([
    ['batchSize', { batchSize: 0 }, 'batchSize=0: expected a whole number from 1 to 10000'],
    ['batchSize', { batchSize: 10_001 }, 'batchSize=10001: expected a whole number from 1 to 10000'],
    ['batchSize', { batchSize: 2.5 }, 'batchSize=2.5: expected a whole number from 1 to 10000'],
    ['maxRunDurationMs', { maxRunDurationMs: 0 }, 'maxRunDurationMs=0: expected a whole number from 1 to'],
    ['ownerConcurrency', { ownerConcurrency: 501 }, 'ownerConcurrency=501: expected a whole number from 1 to 500'],
    ['ownerGroupSize', { ownerGroupSize: 0 }, 'ownerGroupSize=0: expected a whole number from 1 to 500'],
    ['maxHistoryEvents', { maxHistoryEvents: 9 }, 'maxHistoryEvents=9: expected a whole number from 10 to 40000'],
    [
      'thresholdsDays',
      { thresholdsDays: [7, 30] },
      'thresholdsDays=[7,30]: thresholds must be sorted in descending order',
    ],
    ['thresholdsDays', { thresholdsDays: [] }, 'thresholdsDays=[]: the list is empty'],
    ['thresholdsDays', { thresholdsDays: [30, -1] }, 'thresholdsDays=[30,-1]: every threshold must be a whole number'],
  ])('reports a bad %s naming the field and the value (%j)', (_field, input, message) => {
    const problems = problemsOf(input);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(message);
  });

  it('reports a thresholdsDays value that is not an array', () => {
    expect(problemsOf({ thresholdsDays: '30,7' as unknown as number[] })).toEqual([
      'thresholdsDays="30,7": expected an array of whole numbers',
    ]);
  });

  it('reports every bad field at once', () => {
    const problems = problemsOf({ asOf: 'soon', batchSize: 0, ownerConcurrency: 501, thresholdsDays: [1, 1] });
    expect(problems.map((p) => p.split('=')[0])).toEqual([
      'asOf',
      'thresholdsDays',
      'thresholdsDays',
      'batchSize',
      'ownerConcurrency',
    ]);
  });
});

describe('resolveCycleSettings with a continuation', () => {
  const settings = settingsOf({ asOf: '2026-05-01', batchSize: 10 });
  const good: CycleContinuation = {
    settings,
    startedAtMs: START.getTime(),
    counts: {
      ...ZERO_COUNTS,
      pages: 3,
      documentsSeen: 30,
      ownersProcessed: 10,
      ownersNotified: 8,
      remindersSent: 12,
      ownersBusy: 1,
    },
    runs: 2,
    busyOwnerIds: ['0190f3a2-7c1e-7abc-8000-00000000000a'],
  };

  it("accepts the workflow's own continuation and keeps its settings", () => {
    expect(resolveCycleSettings(DEFAULTS, { continuation: good }, AT)).toEqual({ ok: true, settings });
  });

  it('keeps the first run’s settings through a rollout that changed retention, batch size and thresholds', () => {
    const rolledOut: CycleDefaults = {
      ...DEFAULTS,
      retentionDays: 30,
      batchSize: 1_000,
      thresholdsDays: [60, 14, 3, 0],
      ownerGroupSize: 5,
      busyRetryWindowMs: 90_000,
    };
    expect(resolveCycleSettings(rolledOut, { continuation: good }, AT)).toEqual({
      ok: true,
      settings: { ...settings, busyRetryWindowMs: 90_000 },
    });
  });

  it('does not refuse a continuation near midnight on a worker whose clock is 5 minutes behind the workflow’s', () => {
    const workflowTime = new Date('2026-06-01T23:58:00.000Z');
    const lagging = { ...AT, now: new Date('2026-06-01T23:53:00.000Z'), workflowTime };
    const late = {
      ...good,
      settings: { ...settings, asOf: '2026-06-01T23:57:30.000Z', asOfDate: '2026-06-01' },
      startedAtMs: new Date('2026-06-01T23:57:30.000Z').getTime(),
    };
    expect(resolveCycleSettings(DEFAULTS, { continuation: late }, lagging).ok).toBe(true);
    // Past midnight by the workflow's clock, not yet by the worker's: the new day's run is still accepted.
    const nextDay = {
      ...good,
      settings: { ...settings, asOf: '2026-06-02T00:00:30.000Z', asOfDate: '2026-06-02' },
      startedAtMs: new Date('2026-06-02T00:00:30.000Z').getTime(),
    };
    const justAfter = {
      ...lagging,
      now: new Date('2026-06-01T23:56:00.000Z'),
      workflowTime: new Date('2026-06-02T00:01:00.000Z'),
    };
    expect(resolveCycleSettings(DEFAULTS, { continuation: nextDay }, justAfter).ok).toBe(true);
    // A first run as of today by the workflow's clock is not "after today" on the lagging worker either.
    expect(resolveCycleSettings(DEFAULTS, { asOf: '2026-06-02' }, justAfter).ok).toBe(true);
  });

  it('refuses who found a busy owner busy (busyQueuedBy): versions before issue 46 wrote it, and they run their own cycles to the end', () => {
    const owner = good.busyOwnerIds[0];
    expect(problemsOf({ continuation: { ...good, busyQueuedBy: { [owner]: ['0190f3a2-run/17'] } } })).toEqual([
      'continuation: unknown field busyQueuedBy',
    ]);
  });

  it('takes the busy retries handed over mid-way (busyRetry): the round, the pauses waited, the owners still to try', () => {
    const busy = good.busyOwnerIds.length;
    for (const busyRetry of [
      { round: 2, waitedMs: 3_000 },
      { round: 2, waitedMs: 7_000, pending: busy },
    ]) {
      expect(resolveCycleSettings(DEFAULTS, { continuation: { ...good, busyRetry } }, AT).ok).toBe(true);
    }
    for (const [busyRetry, problem] of [
      [{ round: -1, waitedMs: 0 }, 'continuation.busyRetry.round'],
      [{ round: 1, waitedMs: 1.5 }, 'continuation.busyRetry.waitedMs'],
      [{ round: 1, waitedMs: 0, pending: busy + 1 }, 'continuation.busyRetry.pending'],
      [{ round: 1, waitedMs: 0, pending: 0 }, 'continuation.busyRetry.pending'],
      [{ round: 1 }, 'continuation.busyRetry'],
      [{ round: 1, waitedMs: 0, more: 1 }, 'continuation.busyRetry'],
    ] as const) {
      expect(problemsOf({ continuation: { ...good, busyRetry } }).join('\n')).toContain(problem);
    }
  });

  it("refuses a first run whose one page beside maxHistoryEvents could pass Temporal's history limit (the worst case the settings allow), not a continuation", () => {
    // 10,000 documents in groups of one: 10,001 activities, 60,006 events, past the server's 51,200 alone.
    expect(problemsOf({ batchSize: 10_000, ownerGroupSize: 1, maxHistoryEvents: 9_000 })).toEqual([
      "batchSize=10000 with ownerGroupSize=1: one page may add 60006 history events, and a run continues as new only once it has maxHistoryEvents=9000; together past Temporal's 51200-event limit, which terminates the run. Raise ownerGroupSize, or lower batchSize or maxHistoryEvents",
    ]);
    // Groups of two (30,006 events) fit beside 9,000, not beside 40,000.
    expect(
      resolveCycleSettings(DEFAULTS, { batchSize: 10_000, ownerGroupSize: 2, maxHistoryEvents: 9_000 }, AT).ok,
    ).toBe(true);
    expect(problemsOf({ batchSize: 10_000, ownerGroupSize: 2, maxHistoryEvents: 40_000 })).toHaveLength(1);
    // A running cycle keeps the settings its first run fixed, even ones a first run is now refused.
    const unbounded = { ...settings, batchSize: 10_000, ownerGroupSize: 1, maxHistoryEvents: 40_000 };
    expect(resolveCycleSettings(DEFAULTS, { continuation: { ...good, settings: unbounded } }, AT).ok).toBe(true);
  });

  it('still refuses a continuation whose AsOf is after today by both clocks (typed by hand)', () => {
    const lagging = { ...AT, workflowTime: new Date(NOW.getTime() + 60_000) };
    const future = { ...good, settings: { ...settings, asOf: '2026-06-02T00:30:00.000Z', asOfDate: '2026-06-02' } };
    expect(problemsOf({ continuation: future }, lagging).join('\n')).toContain('after today');
  });

  it.each<[string, unknown, string]>([
    ['null', null, 'continuation: expected an object with settings, startedAtMs, counts, runs, busyOwnerIds, got null'],
    [
      'a string',
      'page 3',
      'continuation: expected an object with settings, startedAtMs, counts, runs, busyOwnerIds, got the string "page 3"',
    ],
    [
      'a missing field',
      { settings, startedAtMs: good.startedAtMs, counts: good.counts, runs: 2 },
      'continuation: missing busyOwnerIds',
    ],
    ['an old cursor', { ...good, cursor: { expiresAt: '2026-05-08', id: 'x' } }, 'continuation: unknown field cursor'],
    [
      'a negative retention',
      { ...good, settings: { ...settings, retentionDays: -1 } },
      'continuation.settings.retentionDays=-1: expected a whole number from 0 to 36500',
    ],
    [
      'a future asOf',
      { ...good, settings: { ...settings, asOf: '2027-06-01T00:00:00.000Z', asOfDate: '2027-06-01' } },
      'continuation.settings.asOf="2027-06-01T00:00:00.000Z": after today',
    ],
    [
      'an asOfDate of another day',
      { ...good, settings: { ...settings, asOfDate: '2026-04-01' } },
      'continuation.settings.asOfDate="2026-04-01": expected 2026-05-01',
    ],
    [
      'negative counts',
      { ...good, counts: { ...good.counts, pages: -1 } },
      'continuation.counts.pages=-1: expected a whole number',
    ],
    ['a first run', { ...good, runs: 1 }, 'continuation.runs=1: expected a whole number from 2'],
    ['a start in the future', { ...good, startedAtMs: NOW.getTime() + 1 }, 'continuation.startedAtMs='],
    [
      'owner ids that are not uuids',
      { ...good, busyOwnerIds: ['not-a-uuid'] },
      'continuation.busyOwnerIds: expected an array',
    ],
    [
      'unknown settings',
      { ...good, settings: { ...settings, extra: 1 } },
      'continuation.settings: unknown field extra',
    ],
  ])('refuses a continuation with %s', (_what, continuation, message) => {
    const problems = problemsOf({ continuation });
    expect(problems.join('\n')).toContain(message);
  });

  it("runs a continuation with the worker's busyRetryWindowMs, whatever it carries (a day typed into the Web UI)", () => {
    const typed = { ...good, settings: { ...settings, busyRetryWindowMs: 86_400_000 } };
    expect(resolveCycleSettings(DEFAULTS, { continuation: typed }, AT)).toEqual({
      ok: true,
      settings: { ...settings, busyRetryWindowMs: DEFAULTS.busyRetryWindowMs },
    });
    const without: Record<string, unknown> = { ...settings };
    delete without.busyRetryWindowMs;
    expect(resolveCycleSettings(DEFAULTS, { continuation: { ...good, settings: without } }, AT)).toEqual({
      ok: true,
      settings,
    });
  });

  it.each<[string, Partial<CycleContinuation['counts']>, string]>([
    ['more documents than its full pages hold', { documentsSeen: 31 }, 'documentsSeen <= pages × settings.batchSize'],
    [
      'more owners than documents',
      { ownersProcessed: 25, failedOwners: 6 },
      'ownersProcessed + failedOwners <= documentsSeen',
    ],
    ['more busy owners than documents', { ownersBusy: 31 }, 'ownersBusy <= documentsSeen'],
    [
      'more owners notified than processed',
      { ownersNotified: 11, remindersSent: 20 },
      'ownersNotified <= ownersProcessed',
    ],
    ['more owners notified than reminders sent', { remindersSent: 7 }, 'ownersNotified <= remindersSent'],
    ['more busy owners carried than counted', { ownersBusy: 0 }, 'busyOwnerIds.length <= ownersBusy'],
  ])('refuses counts the workflow never writes: %s', (_what, counts, rule) => {
    const problems = problemsOf({ continuation: { ...good, counts: { ...good.counts, ...counts } } });
    expect(problems).toEqual([expect.stringContaining(`expected ${rule}`)]);
  });

  it('refuses other fields beside a continuation', () => {
    expect(problemsOf({ continuation: good, retentionDays: 0 })).toContain(
      'continuation: expected no other field beside it (a continued run keeps its settings)',
    );
  });
});

describe('ownerGroups', () => {
  it.each([
    [
      { ownerConcurrency: 400, ownerGroupSize: 100 },
      { size: 100, activities: 4 },
    ],
    [
      { ownerConcurrency: 250, ownerGroupSize: 100 },
      { size: 100, activities: 2 },
    ],
    // ownerConcurrency bounds the owners in flight, so it also bounds the group.
    [
      { ownerConcurrency: 1, ownerGroupSize: 100 },
      { size: 1, activities: 1 },
    ],
    [
      { ownerConcurrency: 20, ownerGroupSize: 1 },
      { size: 1, activities: 20 },
    ],
  ])('%j gives %j', (settings, expected) => {
    expect(ownerGroups(settings)).toEqual(expected);
  });

  it('never has more owners in flight than ownerConcurrency', () => {
    for (let c = 1; c <= 500; c += 7) {
      for (const g of [1, 3, 25, 100, 500]) {
        const { size, activities } = ownerGroups({ ownerConcurrency: c, ownerGroupSize: g });
        expect(size * activities).toBeLessThanOrEqual(c);
        expect(size * activities).toBeGreaterThan(c / 2);
      }
    }
  });
});

describe('parseAsOf', () => {
  it('reads an instant without an offset as invalid, since it would depend on the host time zone', () => {
    expect(parseAsOf('2026-06-01T10:00')).toBeUndefined();
  });

  it('rolls no impossible instant over into the next month', () => {
    expect(parseAsOf('2026-02-31T00:00:00Z')).toBeUndefined();
  });

  it('keeps an instant with an offset', () => {
    expect(parseAsOf('2026-06-01T23:30:00-02:00')?.toISOString()).toBe('2026-06-02T01:30:00.000Z');
  });
});
