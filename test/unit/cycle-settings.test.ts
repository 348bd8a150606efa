import { ownerGroups, parseAsOf, resolveCycleSettings, type CycleDefaults, type CycleInput, type CycleSettings } from '../../src/domain/cycle';

const DEFAULTS: CycleDefaults = {
  thresholdsDays: [30, 7, 1, 0],
  batchSize: 500,
  retentionDays: 90,
  maxRunDurationMs: 600_000,
  ownerConcurrency: 50,
  ownerGroupSize: 25,
  maxHistoryEvents: 9_000,
};
const START = new Date('2026-06-01T03:00:00.000Z');

function settingsOf(input: CycleInput): CycleSettings {
  const result = resolveCycleSettings(DEFAULTS, input, START);
  if (!result.ok) throw new Error(`unexpected problems: ${result.problems.join('; ')}`);
  return result.settings;
}

function problemsOf(input: CycleInput): string[] {
  const result = resolveCycleSettings(DEFAULTS, input, START);
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
    const s = settingsOf({ asOf: '2026-12-01' });
    expect(s.asOf).toBe('2026-12-01T00:00:00.000Z');
    expect(s.asOfDate).toBe('2026-12-01');
  });

  it('keeps the UTC date of an asOf instant late in the day', () => {
    expect(settingsOf({ asOf: '2026-12-01T23:59:59.999Z' })).toMatchObject({
      asOf: '2026-12-01T23:59:59.999Z',
      asOfDate: '2026-12-01',
    });
  });

  it('takes the UTC date, not the local one, of an instant with an offset', () => {
    expect(settingsOf({ asOf: '2026-12-01T22:30:00-02:00' })).toMatchObject({
      asOf: '2026-12-02T00:30:00.000Z',
      asOfDate: '2026-12-02',
    });
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
      retentionDays: 0,
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
    ['retentionDays', { retentionDays: -1 }, 'retentionDays=-1: expected a whole number from 0 to 36500'],
    ['maxRunDurationMs', { maxRunDurationMs: 0 }, 'maxRunDurationMs=0: expected a whole number from 1 to'],
    ['ownerConcurrency', { ownerConcurrency: 501 }, 'ownerConcurrency=501: expected a whole number from 1 to 500'],
    ['ownerGroupSize', { ownerGroupSize: 0 }, 'ownerGroupSize=0: expected a whole number from 1 to 500'],
    ['maxHistoryEvents', { maxHistoryEvents: 9 }, 'maxHistoryEvents=9: expected a whole number from 10 to 40000'],
    ['thresholdsDays', { thresholdsDays: [7, 30] }, 'thresholdsDays=[7,30]: thresholds must be sorted in descending order'],
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
    expect(problems.map((p) => p.split('=')[0])).toEqual(['asOf', 'thresholdsDays', 'thresholdsDays', 'batchSize', 'ownerConcurrency']);
  });
});

describe('ownerGroups', () => {
  it.each([
    [{ ownerConcurrency: 400, ownerGroupSize: 100 }, { size: 100, activities: 4 }],
    [{ ownerConcurrency: 250, ownerGroupSize: 100 }, { size: 100, activities: 2 }],
    // ownerConcurrency bounds the owners in flight, so it also bounds the group.
    [{ ownerConcurrency: 1, ownerGroupSize: 100 }, { size: 1, activities: 1 }],
    [{ ownerConcurrency: 20, ownerGroupSize: 1 }, { size: 1, activities: 20 }],
    // Settings recorded before groups existed: one owner per activity, as those cycles ran.
    [{ ownerConcurrency: 50 }, { size: 1, activities: 50 }],
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
