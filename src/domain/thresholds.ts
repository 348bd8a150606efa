/**
 * The thresholds rule of the cycle (docs/DESIGN.md#cycle-rules), in TypeScript: the form `explain` reads a
 * document by. The SQL that decides (`currentThresholdSql` and `notRemindedSql` in src/db/candidates.ts) is
 * pinned to it by a property test (test/integration/due-rule.test.ts: random documents, markers, thresholds and
 * days; the two answers equal). No I/O and no Node APIs: the workflow bundle and the configuration share it.
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

/** crossed(d): every threshold t with DaysLeft <= t, in the order given (descending: the most urgent last). */
export function crossedThresholds(daysLeft: number, thresholds: readonly number[]): number[] {
  return thresholds.filter((t) => daysLeft <= t);
}

/** current(d): the most urgent crossed threshold, or undefined when the document is not due yet. */
export function currentThreshold(daysLeft: number, thresholds: readonly number[]): number | undefined {
  const crossed = crossedThresholds(daysLeft, thresholds);
  return crossed.length === 0 ? undefined : Math.min(...crossed);
}

/**
 * The marker that keeps a document quiet at its current threshold `current`: the most urgent one at or below it
 * (resolution 2: a marker at or below the current threshold means something at least as urgent was handled),
 * or undefined when the document is due.
 */
export function quietingMarker<M extends { thresholdDays: number }>(
  markers: readonly M[],
  current: number,
): M | undefined {
  return markers
    .filter((m) => m.thresholdDays <= current)
    .reduce<M | undefined>(
      (lowest, m) => (lowest === undefined || m.thresholdDays < lowest.thresholdDays ? m : lowest),
      undefined,
    );
}
