/**
 * The client's argument parsers for commander: the configuration's parsers (`src/config/parsers.ts`) where an
 * option overrides a variable, so both accept the same text, and the client's own kinds of text.
 */
import { InvalidArgumentError } from 'commander';
import { durationOrZero, thresholdDays, wholeNumber, type TextParser } from '../config/parsers';
import { isIsoDate } from '../domain/dates';
import { CYCLE_SETTINGS, type CycleSettingName } from '../domain/settings';

/** `parse` as a commander argument parser: a bad text is an InvalidArgumentError with its `expected` sentence. */
function argument<T>(parse: TextParser<T>): (text: string) => T {
  return (text) => {
    const parsed = parse(text);
    if ('expected' in parsed) throw new InvalidArgumentError(parsed.expected);
    return parsed.value;
  };
}

/** A calendar date `YYYY-MM-DD`. */
export const date = argument((text) =>
  isIsoDate(text) ? { value: text } : { expected: 'expected a calendar date YYYY-MM-DD, e.g. 2026-12-01' },
);

/** A thresholds list, as REMINDER_THRESHOLDS_DAYS takes it. */
export const thresholds = argument(thresholdDays);

/** A duration with a unit (`90s`, `2m`), or `0`: how long to wait. */
export const waitDuration = argument(durationOrZero('2m'));

/** A whole number from `min` to `max`. */
export const wholeNumberFrom = (min: number, max: number) => argument(wholeNumber(min, max));

/** Cycle setting `name`, by the settings table's bounds (domain/settings.ts), as its variable and a run take it. */
export const settingArgument = (name: CycleSettingName) =>
  wholeNumberFrom(CYCLE_SETTINGS[name].min, CYCLE_SETTINGS[name].max);

/** `min-max` of cycle setting `name`, for a help text. */
export const bounds = (name: CycleSettingName) => `${CYCLE_SETTINGS[name].min}-${CYCLE_SETTINGS[name].max}`;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID, lower-cased; `what` names it in the error. */
const uuidOf = (what: string) =>
  argument((text) => (UUID_RE.test(text) ? { value: text.toLowerCase() } : { expected: `expected ${what}` }));

/** An outbox row id, lower-cased. */
export const outboxRowId = uuidOf('an outbox row id (a UUID, as `outbox parked` lists them)');

/** An investor's id (the documents' owner_user_id), lower-cased. */
export const ownerId = uuidOf("an investor's id (a UUID: the documents' owner_user_id)");

/** A document's id, lower-cased. */
export const documentId = uuidOf("a document's id (a UUID)");

/** Some text, trimmed. */
export const nonEmpty = argument((text) => (text.trim() ? { value: text.trim() } : { expected: 'expected some text' }));
