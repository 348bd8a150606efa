/**
 * The cycle's settings in one table (docs/DESIGN.md#run-input): each with the worker's variable that sets its
 * default, its bounds, its default, and whether a run's input may set it. The environment's schema
 * (`src/config/schema.ts`), a run's and a continuation's checks (`cycle-input.ts`) and the client's options
 * (`src/client.ts`) are made from it, so their bounds agree. Pure: workflow code may import it.
 */
/** A whole-number setting of the cycle. */
export interface WholeNumberSetting {
  /** The worker's variable that sets it; absent when only a run's input does. */
  variable?: string;
  min: number;
  max: number;
  /** Its value when neither the variable nor the input sets it; absent: the cycle decides (see `about`). */
  default?: number;
  /** Whether a run's input may set it: `yes`; `equal`, only to the worker's value; `no`, the worker's alone. */
  run: 'yes' | 'equal' | 'no';
  /** Milliseconds, which the variable takes as a duration with a unit (`10m`). */
  duration?: boolean;
  /** What it is, in a few words (help texts, the README's table). */
  about: string;
}

/** The run's thresholds: a list, whose rule is `thresholdProblems` (domain/thresholds.ts). */
export const THRESHOLDS_SETTING = {
  variable: 'REMINDER_THRESHOLDS_DAYS',
  default: [30, 7, 1, 0],
  run: 'yes',
  about: 'reminder thresholds in days, distinct, descending',
} as const;

/** Every whole-number setting of a cycle, by its name in the run's input and settings. */
export const CYCLE_SETTINGS = {
  batchSize: {
    variable: 'REMINDER_BATCH_SIZE',
    min: 1,
    max: 10_000,
    default: 500,
    run: 'yes',
    about: 'due documents a page holds',
  },
  retentionDays: {
    variable: 'REMINDER_RETENTION_DAYS',
    min: 0,
    max: 36_500,
    default: 90,
    run: 'equal',
    about: "days after expiry a document is reminded, and its markers kept: the ledger's, not a run's",
  },
  maxRunDurationMs: {
    variable: 'REMINDER_MAX_RUN_DURATION',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    default: 10 * 60_000,
    run: 'yes',
    duration: true,
    about: 'how long a cycle runs before it stops as time-limit',
  },
  ownerConcurrency: {
    variable: 'REMINDER_OWNER_CONCURRENCY',
    min: 1,
    // With groups of one, the SDK allows 2,000 pending activities; and a partition's transaction holds a lock per
    // owner (docs/DESIGN.md#page-claims, "PostgreSQL's lock table").
    max: 500,
    default: 500,
    run: 'yes',
    about: "owners a partition's claim locks at once",
  },
  ownerGroupSize: {
    variable: 'REMINDER_OWNER_GROUP_SIZE',
    min: 1,
    // One transaction holds their locks.
    max: 500,
    default: 100,
    run: 'yes',
    about: "owners a busy retry's activity claims",
  },
  maxHistoryEvents: {
    variable: 'REMINDER_MAX_HISTORY_EVENTS',
    min: 10,
    max: 40_000,
    default: 9_000,
    run: 'yes',
    about: 'history events a run uses before it continues as new',
  },
  partitions: {
    min: 1,
    // Each is a child workflow with its own chain of pages.
    max: 64,
    run: 'yes',
    about: "partitions of the day; default: planned from the day's due count",
  },
  plannedPartitions: {
    variable: 'REMINDER_PARTITIONS',
    min: 1,
    max: 64,
    default: 8,
    run: 'no',
    about: 'the most partitions a planned day gets',
  },
  pagesPerClaim: {
    min: 1,
    max: 64,
    // The bound, so what ends an activity is its budget of about five seconds or the partition's end. Each
    // activity and the workflow task after it cost the worker and the Temporal server about what a page's claim
    // costs PostgreSQL (bench/REPORT.md); a default of 8 split a backlog's partitions and a steady day's into
    // two activities each, the second after a second or less, where one fits in the budget.
    default: 64,
    run: 'yes',
    about: "pages a partition's claim activity claims at most; fewer: smaller activities, spread more finely",
  },
} as const satisfies Record<string, WholeNumberSetting>;

export type CycleSettingName = keyof typeof CYCLE_SETTINGS;

/** A setting a run's input may set. */
type RunSettingName = {
  [K in CycleSettingName]: (typeof CYCLE_SETTINGS)[K]['run'] extends 'no' ? never : K;
}[CycleSettingName];

/** The whole-number settings a run's input may set, of {@link CYCLE_SETTINGS}. */
export const RUN_SETTINGS = (Object.keys(CYCLE_SETTINGS) as CycleSettingName[]).filter(
  (name): name is RunSettingName => CYCLE_SETTINGS[name].run !== 'no',
);

/** Every field a run's input may set (`continuation` aside), for the message about any other. */
export const RUN_INPUT_FIELDS: readonly string[] = ['asOf', 'thresholdsDays', ...RUN_SETTINGS];

/** `<name>=<value>: expected a whole number from <min> to <max>`, or nothing when `value` is one. */
export function settingProblems(name: CycleSettingName, value: unknown, shownAs: string = name): string[] {
  const { min, max } = CYCLE_SETTINGS[name];
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max
    ? []
    : [`${shownAs}=${JSON.stringify(value)}: expected a whole number from ${min} to ${max}`];
}
