/**
 * The per-run input rules (docs/DESIGN.md#run-input): how a run's overrides merge into the worker's defaults,
 * and how strictly a continuation is checked. Pure, so workflow and activity code share it. One idea over
 * 250 lines: a first input and a continuation are checked by one resolver, and splitting them would let the
 * two rule sets drift apart.
 */
import { isIsoDate, utcDate } from './dates';
import { thresholdProblems } from './thresholds';
import { RUN_INPUT_FIELDS, RUN_SETTINGS, settingProblems } from './settings';
import {
  pageHistoryEvents,
  ZERO_COUNTS,
  type CycleContinuation,
  type CycleCounts,
  type CycleDefaults,
  type CycleInput,
  type CycleSettings,
} from './cycle';

const INSTANT_RE = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * A date (midnight UTC) or an instant with an explicit offset; undefined for anything else, including
 * impossible dates (which `Date` would silently roll over) and local times (which depend on the host).
 */
export function parseAsOf(text: string): Date | undefined {
  if (isIsoDate(text)) return new Date(`${text}T00:00:00Z`);
  const m = INSTANT_RE.exec(text);
  if (!m || !isIsoDate(m[1])) return undefined;
  const instant = new Date(text);
  return Number.isNaN(instant.getTime()) ? undefined : instant;
}

function wholeNumberProblem(name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): string[] {
  return Number.isSafeInteger(value) && value >= min && value <= max
    ? []
    : [`${name}=${JSON.stringify(value)}: expected a whole number from ${min} to ${max}`];
}

/** `correlation_id varchar(128)` of the outbox carries the workflow id (jobRunId) to every event. */
const MAX_JOB_RUN_ID_LENGTH = 128;

/**
 * AsOf of a run whose input names none (docs/DESIGN.md#run-input): the schedule's action time, unless that
 * falls on an earlier UTC date than the run's start (a backfilled day, or a tick that fired after
 * midnight), when it is the start. A past day is caught up as of now, never replayed stale: the ledger
 * carries over what the missed day would have sent (a crossed threshold stays crossed), and a reminder
 * computed as of ten days ago would tell the investor a wrong number of days.
 */
export function defaultAsOf(actionTime: Date | undefined, start: Date): Date {
  if (!actionTime || utcDate(actionTime) < utcDate(start)) return start;
  return actionTime;
}

/** Owners found busy that one run carries into the next; more would bloat the continue-as-new input. */
export const MAX_CARRIED_BUSY_OWNERS = 10_000;

/** When and as what a cycle is being started, for {@link resolveCycleSettings}. */
export interface CycleStart {
  /** AsOf when the input names none (the schedule's action time, or the cycle's start). */
  defaultAsOf: Date;
  /** The current time on the host that checks: an AsOf after its UTC date is refused. */
  now: Date;
  /**
   * The workflow's time when it asked (the server's clock, recorded in history). The later of the two
   * counts, so a host whose clock lags never refuses what the workflow started a moment ago.
   */
  workflowTime?: Date;
  /** The workflow id, which becomes `correlation_id`; absent where no cycle is started (preview). */
  jobRunId?: string;
}

type Resolved = { ok: true; settings: CycleSettings } | { ok: false; problems: string[] };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? `the string ${JSON.stringify(value)}` : `${typeof value} ${String(value)}`;
}

/** The problem with a workflow input that is not an object at all; undefined when it is one. */
export function inputShapeProblem(input: unknown): string | undefined {
  if (input === undefined || isPlainObject(input)) return undefined;
  return `the input must be an object such as {} or {"asOf": "2026-12-01"}, got ${describeValue(input)}`;
}

/**
 * Merges a run's overrides into the defaults and validates the result, and validates a continuation
 * (which an operator can type into the Web UI as well as the workflow can pass it) just as strictly.
 * No input may undo the ledger: an AsOf after today's UTC date and a retention other than the
 * configured one are refused.
 *
 * @returns the settings (a continuation's own, once checked), or the list of problems, each naming the
 * field, the value and what is expected.
 */
export function resolveCycleSettings(defaults: CycleDefaults, input: unknown, at: CycleStart): Resolved {
  const start: CycleStart = at.workflowTime && at.workflowTime > at.now ? { ...at, now: at.workflowTime } : at;
  const shape = inputShapeProblem(input);
  if (shape) return { ok: false, problems: [shape] };
  const fields = (input ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  if (start.jobRunId !== undefined && start.jobRunId.length > MAX_JOB_RUN_ID_LENGTH) {
    problems.push(
      `workflow id "${start.jobRunId.slice(0, 40)}…" is ${start.jobRunId.length} characters long: expected at most ` +
        `${MAX_JOB_RUN_ID_LENGTH}, which is what the outbox's correlation_id holds; start the cycle with a shorter id`,
    );
  }
  const unknown = Object.keys(fields).filter((k) => k !== 'continuation' && !RUN_INPUT_FIELDS.includes(k));
  for (const key of unknown) {
    problems.push(`unknown field ${JSON.stringify(key)}: expected only ${RUN_INPUT_FIELDS.join(', ')}`);
  }
  if (fields.continuation !== undefined) {
    if (Object.keys(fields).length > 1) {
      problems.push('continuation: expected no other field beside it (a continued run keeps its settings)');
    }
    problems.push(...continuationProblems(defaults, fields.continuation, start.now));
    if (problems.length > 0) return { ok: false, problems };
    // The busy-retry window is the worker's, never the input's: a continuation typed into the Web UI
    // could otherwise hold a cycle for a day.
    const carried = (fields.continuation as CycleContinuation).settings;
    return { ok: true, settings: { ...carried, busyRetryWindowMs: defaults.busyRetryWindowMs } };
  }
  const resolved = resolveOverrides(defaults, fields as CycleInput, start);
  if (!resolved.ok) problems.push(...resolved.problems);
  // A first run's settings only: a continuation keeps what its first run fixed (a rollout never fails it).
  else problems.push(...pageHistoryProblems(resolved.settings));
  return problems.length > 0 ? { ok: false, problems } : resolved;
}

function resolveOverrides(defaults: CycleDefaults, input: CycleInput, start: CycleStart): Resolved {
  const problems: string[] = [];
  let asOf = start.defaultAsOf.toISOString();
  if (input.asOf !== undefined) {
    const instant = typeof input.asOf === 'string' ? parseAsOf(input.asOf) : undefined;
    if (instant === undefined) {
      problems.push(
        `asOf=${JSON.stringify(input.asOf)}: expected a date YYYY-MM-DD or an ISO 8601 instant with a UTC offset, e.g. 2026-12-02T03:00:00Z`,
      );
    } else if (utcDate(instant) > utcDate(start.now)) {
      problems.push(
        `asOf=${JSON.stringify(input.asOf)}: after today's UTC date (${utcDate(start.now)}); a cycle as of a later day would ` +
          'send reminders early and prune the markers of documents still in the window',
      );
    } else {
      asOf = instant.toISOString();
    }
  }
  const thresholdsDays = input.thresholdsDays ?? defaults.thresholdsDays;
  if (!Array.isArray(thresholdsDays)) {
    problems.push(`thresholdsDays=${JSON.stringify(thresholdsDays)}: expected an array of whole numbers`);
  } else {
    for (const p of thresholdProblems(thresholdsDays)) {
      problems.push(`thresholdsDays=${JSON.stringify(thresholdsDays)}: ${p} (e.g. [30, 7, 1, 0])`);
    }
  }
  if (input.retentionDays !== undefined && input.retentionDays !== defaults.retentionDays) {
    problems.push(
      `retentionDays=${JSON.stringify(input.retentionDays)}: expected the configured retention, ${defaults.retentionDays} ` +
        '(REMINDER_RETENTION_DAYS), or no value; it bounds both the scan and the prune of the shared ledger, so it is ' +
        "changed in the worker's configuration, not per run",
    );
  }
  const settings: CycleSettings = {
    asOf,
    asOfDate: utcDate(new Date(asOf)),
    thresholdsDays,
    batchSize: input.batchSize ?? defaults.batchSize,
    retentionDays: defaults.retentionDays,
    maxRunDurationMs: input.maxRunDurationMs ?? defaults.maxRunDurationMs,
    ownerConcurrency: input.ownerConcurrency ?? defaults.ownerConcurrency,
    ownerGroupSize: input.ownerGroupSize ?? defaults.ownerGroupSize,
    maxHistoryEvents: input.maxHistoryEvents ?? defaults.maxHistoryEvents,
    ...(input.partitions !== undefined ? { partitions: input.partitions } : {}),
    ...(input.pagesPerClaim !== undefined ? { pagesPerClaim: input.pagesPerClaim } : {}),
    busyRetryWindowMs: defaults.busyRetryWindowMs,
  };
  // Every setting a run may set, by the settings table's bounds: a value the worker's variable takes, the
  // input takes, and the other way round.
  for (const name of RUN_SETTINGS) {
    const value = settings[name];
    if (value !== undefined) problems.push(...settingProblems(name, value));
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, settings };
}

/** What the settings of {@link pageHistoryProblems} are called where they were given. */
const SETTING_NAMES = {
  batchSize: 'batchSize',
  ownerGroupSize: 'ownerGroupSize',
  maxHistoryEvents: 'maxHistoryEvents',
};

/** Temporal's default history limit: a run past it is terminated, with no prune and no result. */
const SERVER_HISTORY_EVENT_LIMIT = 51_200;

/**
 * A run continues as new between pages, once its history nears `maxHistoryEvents`: one page more may still
 * come on top ({@link pageHistoryEvents}), and the two must stay under Temporal's limit. The settings allow a
 * page of 10,000 documents in groups of one, 60,006 events on its own.
 * @param names what to call the settings (the input's fields, or the worker's variables).
 */
export function pageHistoryProblems(
  settings: Pick<CycleSettings, 'batchSize' | 'ownerConcurrency' | 'ownerGroupSize' | 'maxHistoryEvents'>,
  names: typeof SETTING_NAMES = SETTING_NAMES,
): string[] {
  const events = pageHistoryEvents(settings);
  if (settings.maxHistoryEvents + events <= SERVER_HISTORY_EVENT_LIMIT) return [];
  return [
    `${names.batchSize}=${settings.batchSize} with ${names.ownerGroupSize}=${settings.ownerGroupSize}: one page may add ` +
      `${events} history events, and a run continues as new only once it has ${names.maxHistoryEvents}=` +
      `${settings.maxHistoryEvents}; together past Temporal's ${SERVER_HISTORY_EVENT_LIMIT}-event limit, which ` +
      `terminates the run. Raise ${names.ownerGroupSize}, or lower ${names.batchSize} or ${names.maxHistoryEvents}`,
  ];
}

const COUNT_FIELDS = Object.keys(ZERO_COUNTS) as (keyof CycleCounts)[];
const CONTINUATION_FIELDS = ['settings', 'startedAtMs', 'counts', 'runs', 'busyOwnerIds'];
/** Continuation fields that runs of older versions did not write. */
const OPTIONAL_CONTINUATION_FIELDS = ['busyRetry'];
/** Settings a run's input may leave out, which the cycle then decides (they have no default in settings.ts). */
const OPTIONAL_INPUT_SETTINGS: readonly string[] = ['partitions', 'pagesPerClaim'];
const SETTINGS_FIELDS = [
  'asOf',
  'asOfDate',
  ...RUN_INPUT_FIELDS.filter((f) => f !== 'asOf' && !OPTIONAL_INPUT_SETTINGS.includes(f)),
];
/**
 * Settings a continuation may carry beside {@link SETTINGS_FIELDS}: `busyRetryWindowMs`, which the worker's
 * configuration replaces, and `partitions` and `pagesPerClaim`, there only when the cycle's input set them
 * (settings of older versions lack them, and a worker before them refuses a continuation that has them).
 */
const OPTIONAL_SETTINGS_FIELDS = ['busyRetryWindowMs', ...OPTIONAL_INPUT_SETTINGS];
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function exactFieldProblems(
  name: string,
  value: unknown,
  fields: readonly string[],
  optional: readonly string[] = [],
): string[] {
  if (!isPlainObject(value))
    return [`${name}: expected an object with ${fields.join(', ')}, got ${describeValue(value)}`];
  const keys = Object.keys(value);
  const missing = fields.filter((f) => !keys.includes(f));
  const extra = keys.filter((k) => !fields.includes(k) && !optional.includes(k));
  return [
    ...(missing.length > 0 ? [`${name}: missing ${missing.join(', ')}`] : []),
    ...(extra.length > 0 ? [`${name}: unknown field${extra.length > 1 ? 's' : ''} ${extra.join(', ')}`] : []),
  ];
}

/**
 * What is wrong with a continuation, checked as strictly as a first run's input for shape and bounds, but
 * against its own settings, not the worker's: the first run fixed them (they are in history), and a rollout
 * of other settings, or a second worker configured otherwise, must not fail a running cycle. A retention
 * other than the worker's cannot undo the ledger either: the prune cutoff keeps every scan above what any
 * prune deleted (docs/DESIGN.md#resolutions). What could, an AsOf after today, is refused.
 */
function continuationProblems(defaults: CycleDefaults, value: unknown, now: Date): string[] {
  const shape = exactFieldProblems('continuation', value, CONTINUATION_FIELDS, OPTIONAL_CONTINUATION_FIELDS);
  if (shape.length > 0) return shape;
  const c = value as Record<string, unknown>;
  const problems = exactFieldProblems('continuation.settings', c.settings, SETTINGS_FIELDS, OPTIONAL_SETTINGS_FIELDS);
  if (problems.length === 0) {
    const given = c.settings as CycleSettings;
    problems.push(...settingProblems('retentionDays', given.retentionDays, 'continuation.settings.retentionDays'));
    const again = resolveOverrides(
      { ...defaults, ...given, busyRetryWindowMs: defaults.busyRetryWindowMs },
      {
        asOf: given.asOf,
        thresholdsDays: given.thresholdsDays,
        batchSize: given.batchSize,
        retentionDays: given.retentionDays,
        maxRunDurationMs: given.maxRunDurationMs,
        ownerConcurrency: given.ownerConcurrency,
        ownerGroupSize: given.ownerGroupSize,
        maxHistoryEvents: given.maxHistoryEvents,
        partitions: given.partitions,
        pagesPerClaim: given.pagesPerClaim,
      },
      { defaultAsOf: now, now },
    );
    if (!again.ok) problems.push(...again.problems.map((p) => `continuation.settings.${p}`));
    else if (again.settings.asOfDate !== given.asOfDate) {
      problems.push(
        `continuation.settings.asOfDate=${JSON.stringify(given.asOfDate)}: expected ${again.settings.asOfDate}, the UTC date of asOf`,
      );
    }
  }
  problems.push(...wholeNumberProblem('continuation.startedAtMs', c.startedAtMs as number, 0, now.getTime()));
  problems.push(...wholeNumberProblem('continuation.runs', c.runs as number, 2, 1_000_000));
  const counts = exactFieldProblems('continuation.counts', c.counts, COUNT_FIELDS);
  problems.push(...counts);
  if (counts.length === 0) {
    for (const f of COUNT_FIELDS)
      problems.push(...wholeNumberProblem(`continuation.counts.${f}`, (c.counts as CycleCounts)[f], 0));
    if (problems.length === 0) {
      problems.push(
        ...countBoundProblems(c.counts as CycleCounts, (c.settings as CycleSettings).batchSize, c.busyOwnerIds),
      );
    }
  }
  const busy = c.busyOwnerIds;
  if (
    !Array.isArray(busy) ||
    busy.length > MAX_CARRIED_BUSY_OWNERS ||
    busy.some((id) => typeof id !== 'string' || !UUID_RE.test(id))
  ) {
    problems.push(
      `continuation.busyOwnerIds: expected an array of at most ${MAX_CARRIED_BUSY_OWNERS} lower-case owner uuids`,
    );
  }
  problems.push(...busyRetryProblems(c.busyRetry, Array.isArray(busy) ? busy.length : 0));
  return problems;
}

/**
 * `busyRetry`, when present: the round, the milliseconds waited, and how many of the carried busy owners
 * still wait for their try of that round.
 */
function busyRetryProblems(value: unknown, busyOwnerCount: number): string[] {
  if (value === undefined) return [];
  const shape = exactFieldProblems('continuation.busyRetry', value, ['round', 'waitedMs'], ['pending']);
  if (shape.length > 0) return shape;
  const r = value as Record<string, number>;
  return [
    ...wholeNumberProblem('continuation.busyRetry.round', r.round, 0, 1_000_000),
    ...wholeNumberProblem('continuation.busyRetry.waitedMs', r.waitedMs, 0),
    ...(r.pending === undefined
      ? []
      : wholeNumberProblem('continuation.busyRetry.pending', r.pending, 1, busyOwnerCount)),
  ];
}

/**
 * What the counts of a run that continues as new always satisfy: it continues only after full pages, each
 * page's owners (at most its documents) end processed, failed or busy once, and a notified owner was sent
 * at least one reminder. Counts that break them were not written by the workflow.
 */
function countBoundProblems(counts: CycleCounts, batchSize: number, busyOwnerIds: unknown): string[] {
  const bounds: [boolean, string][] = [
    [counts.documentsSeen <= counts.pages * batchSize, 'documentsSeen <= pages × settings.batchSize'],
    [
      counts.ownersProcessed + counts.failedOwners <= counts.documentsSeen,
      'ownersProcessed + failedOwners <= documentsSeen',
    ],
    [counts.ownersBusy <= counts.documentsSeen, 'ownersBusy <= documentsSeen'],
    [counts.ownersNotified <= counts.ownersProcessed, 'ownersNotified <= ownersProcessed'],
    [counts.ownersNotified <= counts.remindersSent, 'ownersNotified <= remindersSent'],
    [!Array.isArray(busyOwnerIds) || busyOwnerIds.length <= counts.ownersBusy, 'busyOwnerIds.length <= ownersBusy'],
  ];
  return bounds
    .filter(([holds]) => !holds)
    .map(
      ([, rule]) => `continuation.counts=${JSON.stringify(counts)}: expected ${rule}, as the workflow's own counts are`,
    );
}
