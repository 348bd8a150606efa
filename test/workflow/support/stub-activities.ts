/**
 * Stub activities for the workflow tests: plain functions with the real activities' names and types
 * that answer from a script instead of PostgreSQL, and log every call (start and end, in one order),
 * so a test can tell what the cycle asked for, how much of it at once, and in which order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type {
  Activities,
  ClaimPageInput,
  ClaimPageResult,
  PartitionPlan,
  PlanPartitionsInput,
  RemindOwnersInput,
  RemindOwnersResult,
} from '../../../src/activities';
import type { CycleDefaults } from '../../../src/domain/cycle';
import { resolveCycleSettings } from '../../../src/domain/cycle-input';

/** The worker configuration the stub settings start from; a test's input overrides them as usual. */
export const STUB_DEFAULTS: CycleDefaults = {
  thresholdsDays: [30, 7, 1, 0],
  batchSize: 10,
  retentionDays: 400,
  maxRunDurationMs: 3_600_000,
  ownerConcurrency: 6,
  ownerGroupSize: 2,
  maxHistoryEvents: 10_000,
  busyRetryWindowMs: 60_000,
};

/** Documents per owner on every stub page, so `documentsSeen` differs from the owner count. */
export const DOCUMENTS_PER_OWNER = 2;

/** What one owner comes to in one `remindOwners` call. */
type OwnerOutcome = 'sent' | 'busy' | { failed: string };

/** One activity call as the stub saw it. `start` and `end` count in one sequence shared by all calls. */
export interface StubCall {
  activity: keyof Activities;
  input: unknown;
  attempt: number;
  workflowRunId: string;
  start: number;
  end?: number;
}

/** How the stubs answer. Every hook may be async, to hold a call until the test lets it go. */
export interface CycleScript {
  /** Worker configuration other than {@link STUB_DEFAULTS} (`busyRetryWindowMs` is never an input). */
  defaults?: Partial<CycleDefaults>;
  /** A small day (one partition): the owner ids of page 1, 2, …; every page but the last says `hasNext`. */
  pages: string[][];
  /** A partitioned day: partition `i`'s pages (and `pages` is not read then). */
  partitionPages?: string[][][];
  /** Pages a `claimPage` call claims at most, below what it is asked (its time budget); default: as asked. */
  pagesPerClaim?: number;
  /** What `planPartitions` answers; default: one partition, as many due documents as `pages` hold. */
  plan?: { due: number; partitions: number };
  /** Default `sent` (processed, notified, one reminder); `n` counts this owner's calls from 1. */
  owner?: (ownerId: string, n: number) => OwnerOutcome;
  /** Runs when a group's call starts (`calls`: the log so far); what it throws fails that attempt. */
  onGroup?: (input: RemindOwnersInput, call: StubCall, calls: readonly StubCall[]) => Promise<void> | void;
  /** Runs when a page's call starts; what it throws fails that attempt. */
  onPage?: (input: ClaimPageInput, call: StubCall, calls: readonly StubCall[]) => Promise<void> | void;
}

/** The worker configuration the stubs resolve a script's settings from. */
export const stubDefaults = (script: CycleScript): CycleDefaults => ({ ...STUB_DEFAULTS, ...script.defaults });

/** A UUID made from a number (owner ids must be UUIDs: a continuation's busy owners are checked). */
export const ownerId = (n: number) => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** `count` owner ids from `from` on. */
export const owners = (from: number, count: number) => Array.from({ length: count }, (_, i) => ownerId(from + i));

/** The stub activities for `script`, and the log of their calls. */
export function stubActivities(script: CycleScript): { activities: Activities; calls: StubCall[] } {
  const calls: StubCall[] = [];
  const ownerCalls = new Map<string, number>();
  let seq = 0;

  /** Logs the call around `body`; the activity's own context says the attempt and the run. */
  async function logged<T>(activity: keyof Activities, input: unknown, body: (call: StubCall) => Promise<T>) {
    const { info } = Context.current();
    const call: StubCall = {
      activity,
      input,
      attempt: info.attempt,
      workflowRunId: info.workflowExecution?.runId ?? '',
      start: ++seq,
    };
    calls.push(call);
    try {
      return await body(call);
    } finally {
      call.end = ++seq;
    }
  }

  const activities: Activities = {
    resolveCycleSettings: (request: { input: unknown; jobRunId: string; defaultAsOf: string; workflowTime?: string }) =>
      logged('resolveCycleSettings', request, async () => {
        // The pure rules of the real activity, with the test server's clock as "now": time skipping
        // runs it ahead of this host's, and a continuation's start must not lie after "now".
        const now = new Date(Context.current().info.currentAttemptScheduledTimestampMs);
        const resolved = resolveCycleSettings(stubDefaults(script), request.input, {
          defaultAsOf: new Date(request.defaultAsOf),
          now,
          jobRunId: request.jobRunId,
        });
        if (!resolved.ok) throw ApplicationFailure.nonRetryable(resolved.problems.join('; '), 'InvalidCycleInput');
        return resolved.settings;
      }),

    planPartitions: (input: PlanPartitionsInput) =>
      logged('planPartitions', input, async (): Promise<PartitionPlan> => {
        const due = script.pages.flat().length * DOCUMENTS_PER_OWNER;
        return { due, partitions: 1, max: 8, size: 25_000, ...script.plan };
      }),

    remindOwners: (input: RemindOwnersInput) =>
      logged('remindOwners', input, async (call): Promise<RemindOwnersResult> => {
        await script.onGroup?.(input, call, calls);
        return claimOwners(input.ownerUserIds);
      }),

    claimPage: (input: ClaimPageInput) =>
      logged('claimPage', input, async (call): Promise<ClaimPageResult> => {
        await script.onPage?.(input, call, calls);
        const { index, count } = input.partition;
        const pages = script.partitionPages?.[index] ?? (count === 1 ? script.pages : []);
        const asked = Math.min(input.pages ?? 1, script.pagesPerClaim ?? Infinity);
        // The pages it claims: from input.page on, as many as asked, fewer at the scan's end (at least one).
        const last = Math.max(input.page, Math.min(pages.length, input.page + asked - 1));
        const ownerIds = pages.slice(input.page - 1, last).flat();
        const claimed = claimOwners(ownerIds);
        return {
          ...claimed,
          ownersFoundBusy: claimed.busyOwnerIds.length,
          documentCount: ownerIds.length * DOCUMENTS_PER_OWNER,
          owners: ownerIds.length,
          hasNext: last < pages.length,
          pagesClaimed: last - input.page + 1,
        };
      }),

    pruneReminders: (input: unknown) => logged('pruneReminders', input, async () => 3),
  };

  /** What the script says of each owner, as a claim of them reports it. */
  function claimOwners(ownerUserIds: string[]): RemindOwnersResult {
    const outcomes = ownerUserIds.map((id) => {
      const n = (ownerCalls.get(id) ?? 0) + 1;
      ownerCalls.set(id, n);
      return { id, outcome: script.owner?.(id, n) ?? 'sent' };
    });
    // A sent owner is processed and notified, with one reminder and its marker.
    const sent = outcomes.filter((o) => o.outcome === 'sent').length;
    return {
      ownersProcessed: sent,
      ownersNotified: sent,
      remindersSent: sent,
      markersInserted: sent,
      skippedAlreadyMarked: 0,
      busyOwnerIds: outcomes.filter((o) => o.outcome === 'busy').map((o) => o.id),
      failed: outcomes.flatMap(({ id, outcome }) =>
        typeof outcome === 'object' ? [{ ownerUserId: id, error: outcome.failed }] : [],
      ),
    };
  }
  return { activities, calls };
}

/** The calls of one activity, in the order they started. */
export function callsOf(calls: readonly StubCall[], activity: keyof Activities): StubCall[] {
  return calls.filter((c) => c.activity === activity);
}

/** The most calls of `activity` that were running at once. */
export function maxConcurrent(calls: readonly StubCall[], activity: keyof Activities): number {
  const edges = callsOf(calls, activity).flatMap((c) => [
    { at: c.start, d: 1 },
    { at: c.end ?? Infinity, d: -1 },
  ]);
  let now = 0;
  let max = 0;
  for (const e of edges.sort((a, b) => a.at - b.at)) max = Math.max(max, (now += e.d));
  return max;
}

/** The owner ids of each `remindOwners` call, in the order the calls started. */
export function groups(calls: readonly StubCall[]): string[][] {
  return callsOf(calls, 'remindOwners').map((c) => (c.input as RemindOwnersInput).ownerUserIds);
}

/**
 * Waits (polling) until `condition` holds or `timeoutMs` has passed, and says which. A stub holds a call
 * with it so the test can see what the cycle does meanwhile; it never throws, so a condition that never
 * comes shows in the test's assertions rather than as a failed attempt.
 */
export async function holdUntil(condition: () => boolean, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}
