/**
 * The cycle's contracts (SPEC §3.4, §5): workflow input, resolved settings, the result, and the pure
 * rules that merge a run's overrides into the worker's defaults. Shared by workflow and activity code,
 * so nothing here may touch Node APIs.
 */
import { isIsoDate, thresholdProblems, utcDate } from './thresholds';

/** Workflow input: every field optional, each overrides the worker's configuration for this run. */
export interface CycleInput {
  /** The cycle's instant (ISO 8601) or date (`YYYY-MM-DD`, read as midnight UTC). Default: the cycle's start. */
  asOf?: string;
  thresholdsDays?: number[];
  batchSize?: number;
  retentionDays?: number;
  maxRunDurationMs?: number;
  /** Owners in flight at once (in `ownerConcurrency / ownerGroupSize` activities). */
  ownerConcurrency?: number;
  /** Owners per activity and transaction; capped by `ownerConcurrency`. */
  ownerGroupSize?: number;
  /** History events one run may use before it continues as new. */
  maxHistoryEvents?: number;
  /** Set only by the workflow itself when it continues as new. */
  continuation?: CycleContinuation;
}

/** Settings a cycle runs with, fixed at its start and recorded in history. */
export interface CycleSettings {
  asOf: string;
  asOfDate: string;
  thresholdsDays: number[];
  batchSize: number;
  retentionDays: number;
  maxRunDurationMs: number;
  ownerConcurrency: number;
  /** Absent in settings recorded before owners were grouped: those runs mean one owner per activity. */
  ownerGroupSize?: number;
  maxHistoryEvents: number;
}

/** The worker's configured defaults for the overridable settings. */
export type CycleDefaults = Omit<CycleSettings, 'asOf' | 'asOfDate' | 'ownerGroupSize'> & { ownerGroupSize: number };

/** Keyset position: the last `(expires_at, id)` a page returned. */
export interface PageCursor {
  expiresAt: string;
  id: string;
}

export interface CycleCounts {
  remindersSent: number;
  ownersNotified: number;
  skippedAlreadyMarked: number;
  failedOwners: number;
  ownersProcessed: number;
  pages: number;
  documentsSeen: number;
}

/** State carried from one run of a cycle to the next when it continues as new. */
export interface CycleContinuation {
  settings: CycleSettings;
  startedAtMs: number;
  /** Where the next page starts; null before the first page. */
  cursor: PageCursor | null;
  counts: CycleCounts;
  runs: number;
}

export type CycleStatus = 'completed' | 'time-limit' | 'cancelled';

/** SPEC §3.4, camelCase. */
export interface CycleResult extends CycleCounts {
  status: CycleStatus;
  jobRunId: string;
  asOf: string;
  thresholdsDays: number[];
  pruned: number;
  durationMs: number;
  /** Runs of the workflow this cycle used (more than one when it continued as new). */
  runs: number;
}

export const ZERO_COUNTS: CycleCounts = {
  remindersSent: 0,
  ownersNotified: 0,
  skippedAlreadyMarked: 0,
  failedOwners: 0,
  ownersProcessed: 0,
  pages: 0,
  documentsSeen: 0,
};

/** Upper bound on owners in flight: with groups of one, the SDK allows 2,000 pending activities. */
export const MAX_OWNER_CONCURRENCY = 500;

/** Upper bound on owners per activity: one statement and one transaction hold their locks. */
export const MAX_OWNER_GROUP_SIZE = 500;

/**
 * How a cycle spreads owners over activities: `size` owners per activity (one transaction each), at most
 * `activities` of them in flight, so never more than `ownerConcurrency` owners at once.
 */
export function ownerGroups(settings: Pick<CycleSettings, 'ownerConcurrency' | 'ownerGroupSize'>): {
  size: number;
  activities: number;
} {
  const size = Math.max(1, Math.min(settings.ownerGroupSize ?? 1, settings.ownerConcurrency));
  return { size, activities: Math.max(1, Math.floor(settings.ownerConcurrency / size)) };
}

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

/**
 * Merges a run's overrides into the defaults and validates the result.
 *
 * @param defaultAsOf the instant to use when the input has no `asOf` (the cycle's start).
 * @returns the settings, or the list of problems (each naming the field, the value and what is expected).
 */
export function resolveCycleSettings(
  defaults: CycleDefaults,
  input: CycleInput,
  defaultAsOf: Date,
): { ok: true; settings: CycleSettings } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  let asOf = defaultAsOf.toISOString();
  if (input.asOf !== undefined) {
    const instant = parseAsOf(String(input.asOf));
    if (instant === undefined) {
      problems.push(
        `asOf=${JSON.stringify(input.asOf)}: expected a date YYYY-MM-DD or an ISO 8601 instant with a UTC offset, e.g. 2026-12-02T03:00:00Z`,
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
  const settings: CycleSettings = {
    asOf,
    asOfDate: utcDate(new Date(asOf)),
    thresholdsDays,
    batchSize: input.batchSize ?? defaults.batchSize,
    retentionDays: input.retentionDays ?? defaults.retentionDays,
    maxRunDurationMs: input.maxRunDurationMs ?? defaults.maxRunDurationMs,
    ownerConcurrency: input.ownerConcurrency ?? defaults.ownerConcurrency,
    ownerGroupSize: input.ownerGroupSize ?? defaults.ownerGroupSize,
    maxHistoryEvents: input.maxHistoryEvents ?? defaults.maxHistoryEvents,
  };
  problems.push(
    ...wholeNumberProblem('batchSize', settings.batchSize, 1, 10_000),
    ...wholeNumberProblem('retentionDays', settings.retentionDays, 0, 36_500),
    ...wholeNumberProblem('maxRunDurationMs', settings.maxRunDurationMs, 1),
    ...wholeNumberProblem('ownerConcurrency', settings.ownerConcurrency, 1, MAX_OWNER_CONCURRENCY),
    ...wholeNumberProblem('ownerGroupSize', settings.ownerGroupSize ?? 1, 1, MAX_OWNER_GROUP_SIZE),
    ...wholeNumberProblem('maxHistoryEvents', settings.maxHistoryEvents, 10, 40_000),
  );
  return problems.length > 0 ? { ok: false, problems } : { ok: true, settings };
}
