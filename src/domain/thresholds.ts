/**
 * Pure threshold arithmetic of the cycle rules (docs/DESIGN.md#cycle-rules). No I/O and no Node APIs: the workflow bundle, the
 * configuration module and the SQL layer all share it.
 */

/** The largest threshold accepted: ten years. A larger one is a typo, and it would widen every scan. */
const MAX_THRESHOLD_DAYS = 3650;

/** Problems with a thresholds list, as sentences; empty when the list is valid. */
export function thresholdProblems(thresholds: readonly number[]): string[] {
  const problems: string[] = [];
  if (thresholds.length === 0) problems.push('the list is empty');
  if (thresholds.some((t) => !Number.isSafeInteger(t) || t < 0)) {
    problems.push('every threshold must be a whole number of days >= 0');
  } else if (thresholds.some((t) => t > MAX_THRESHOLD_DAYS)) {
    problems.push(`every threshold must be at most ${MAX_THRESHOLD_DAYS} days (ten years)`);
  }
  if (new Set(thresholds).size !== thresholds.length) problems.push('thresholds must be distinct');
  for (let i = 1; i < thresholds.length; i++) {
    if (thresholds[i] >= thresholds[i - 1]) {
      problems.push('thresholds must be sorted in descending order');
      break;
    }
  }
  return problems;
}

/** Parses `30,7,1,0`; returns NaN entries for anything that is not a whole number so validation names it. */
export function parseThresholdList(text: string): number[] {
  if (text.trim() === '') return [];
  return text.split(',').map((part) => (/^\s*\d+\s*$/.test(part) ? Number(part) : Number.NaN));
}

/** crossed(d): every threshold t with DaysLeft <= t. */
export function crossedThresholds(daysLeft: number, thresholds: readonly number[]): number[] {
  return thresholds.filter((t) => daysLeft <= t);
}

/** current(d): the most urgent crossed threshold, or undefined when the document is not due yet. */
export function currentThreshold(daysLeft: number, thresholds: readonly number[]): number | undefined {
  const crossed = crossedThresholds(daysLeft, thresholds);
  return crossed.length === 0 ? undefined : Math.min(...crossed);
}
