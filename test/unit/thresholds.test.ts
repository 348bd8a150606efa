import {
  crossedThresholds,
  currentThreshold,
  parseThresholdList,
  thresholdProblems,
} from '../../src/domain/thresholds';
import { addDays, daysBetween, isIsoDate } from '../../src/domain/dates';

const THRESHOLDS = [30, 7, 1, 0];

describe('thresholdProblems', () => {
  it('accepts a distinct descending list of whole numbers', () => {
    expect(thresholdProblems([30, 7, 1, 0])).toEqual([]);
    expect(thresholdProblems([0])).toEqual([]);
  });

  it('reports an empty list', () => {
    expect(thresholdProblems([])).toEqual(['the list is empty']);
  });

  it('reports a list that is not in descending order', () => {
    expect(thresholdProblems([7, 30])).toEqual(['thresholds must be sorted in descending order']);
  });

  it('reports duplicates', () => {
    expect(thresholdProblems([30, 7, 7])).toContain('thresholds must be distinct');
  });

  it('reports negative numbers', () => {
    expect(thresholdProblems([30, -1])).toEqual(['every threshold must be a whole number of days >= 0']);
  });

  it('reports fractions and NaN', () => {
    expect(thresholdProblems([30, 1.5])).toEqual(['every threshold must be a whole number of days >= 0']);
    expect(thresholdProblems([30, Number.NaN])).toContain('every threshold must be a whole number of days >= 0');
  });
});

describe('parseThresholdList', () => {
  it('parses a comma-separated list, tolerating spaces', () => {
    expect(parseThresholdList('30,7,1,0')).toEqual([30, 7, 1, 0]);
    expect(parseThresholdList(' 30 , 7 ')).toEqual([30, 7]);
  });

  it('returns an empty list for blank text', () => {
    expect(parseThresholdList('  ')).toEqual([]);
  });

  it('turns anything that is not a whole number into NaN', () => {
    expect(parseThresholdList('30,abc,-1,1.5,')).toEqual([30, NaN, NaN, NaN, NaN]);
  });
});

describe('isIsoDate', () => {
  it('accepts real calendar dates, including a leap day', () => {
    expect(isIsoDate('2026-12-01')).toBe(true);
    expect(isIsoDate('2028-02-29')).toBe(true);
  });

  it('rejects dates that do not exist', () => {
    expect(isIsoDate('2026-02-30')).toBe(false);
    expect(isIsoDate('2026-02-29')).toBe(false);
    expect(isIsoDate('2026-13-01')).toBe(false);
  });

  it('rejects other formats', () => {
    for (const text of ['2026-6-1', '01/06/2026', '2026-06-01T00:00:00Z', ' 2026-06-01', '']) {
      expect(isIsoDate(text)).toBe(false);
    }
  });
});

describe('daysBetween and addDays', () => {
  it.each([
    ['2026-01-31', '2026-02-01', 1],
    ['2026-12-31', '2027-01-01', 1],
    ['2028-02-28', '2028-03-01', 2],
    ['2026-02-28', '2026-03-01', 1],
    ['2026-01-01', '2027-01-01', 365],
    ['2028-01-01', '2029-01-01', 366],
    ['2026-03-10', '2026-03-01', -9],
  ])('counts the days from %s to %s as %i, and addDays goes back and forth', (from, to, days) => {
    expect(daysBetween(from, to)).toBe(days);
    expect(addDays(from, days)).toBe(to);
    expect(addDays(to, -days)).toBe(from);
  });

  it('counts zero days between a date and itself', () => {
    expect(daysBetween('2026-06-01', '2026-06-01')).toBe(0);
    expect(addDays('2026-06-01', 0)).toBe('2026-06-01');
  });
});

describe('crossedThresholds and currentThreshold', () => {
  it.each([
    [31, [], undefined],
    [30, [30], 30],
    [8, [30], 30],
    [7, [30, 7], 7],
    [5, [30, 7], 7],
    [1, [30, 7, 1], 1],
    [0, [30, 7, 1, 0], 0],
    [-3, [30, 7, 1, 0], 0],
  ])('with %i days left the crossed thresholds are %j and the current one is %s', (daysLeft, crossed, current) => {
    expect(crossedThresholds(daysLeft, THRESHOLDS)).toEqual(crossed);
    expect(currentThreshold(daysLeft, THRESHOLDS)).toBe(current);
  });

  it('gives an overdue document the smallest configured threshold when 0 is not configured', () => {
    expect(currentThreshold(-3, [30, 7])).toBe(7);
  });
});
