/**
 * Text an operator typed, turned into a value or a sentence saying what was expected. The environment's
 * schema (`schema.ts`) and the client's arguments (`src/operations/arguments.ts`) both use these, so a variable and
 * the option that overrides it accept the same text and say the same thing about a bad one.
 */
import ms from 'ms';
import { parseThresholdList, thresholdProblems } from '../domain/thresholds';

/** The value read from a text, or what the text should have looked like. */
type Parsed<T> = { value: T } | { expected: string };

/** A parser of one kind of text. */
export type TextParser<T> = (text: string) => Parsed<T>;

/** A whole number from `min` to `max`, surrounding blanks allowed. */
export function wholeNumber(min: number, max: number): TextParser<number> {
  return (text) => {
    const value = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
    return Number.isSafeInteger(value) && value >= min && value <= max
      ? { value }
      : { expected: `expected a whole number from ${min} to ${max}` };
  };
}

/** A list of reminder thresholds in days, e.g. `30,7,1,0`. */
export const thresholdDays: TextParser<number[]> = (text) => {
  const list = parseThresholdList(text);
  const problems = thresholdProblems(list);
  return problems.length === 0
    ? { value: list }
    : { expected: `${problems.join('; ')}; expected distinct whole numbers >= 0 in descending order, e.g. 30,7,1,0` };
};

/** Milliseconds of `90s`, `1.5h` (a number and a unit), or undefined. */
function durationMs(text: string): number | undefined {
  const value = /^\s*\d+(\.\d+)?\s*[a-z]+\s*$/i.test(text) ? ms(text as ms.StringValue) : undefined;
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/** A positive duration with a unit; `example` shows one in the message. */
export function duration(example: string): TextParser<number> {
  return (text) => {
    const value = durationMs(text);
    return value !== undefined && value > 0
      ? { value }
      : { expected: `expected a positive duration with a unit (ms, s, m, h, d), e.g. ${example}` };
  };
}

/** A duration with a unit, or `0` (with or without one) for "off". */
export function durationOrZero(example: string): TextParser<number> {
  return (text) => {
    if (/^\s*0\s*[a-z]*\s*$/i.test(text)) return { value: 0 };
    const value = durationMs(text);
    return value !== undefined && value >= 0
      ? { value }
      : { expected: `expected a duration with a unit (ms, s, m, h, d), e.g. ${example}` };
  };
}
