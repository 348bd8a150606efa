/**
 * The owner transaction of a cycle for a group of owners (docs/DESIGN.md#owner-transaction): one transaction for
 * the whole group (its owner locks, then the claim, and with a retry a read-back between them), or, when that
 * fails for good, one transaction per owner so one broken owner never costs the others their reminder.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as otel from '@opentelemetry/api';
import { Context } from '@temporalio/activity';
import { describeFailure } from '../domain/failures';
import type { CandidateWindow } from '../db/candidates';
import { withTransaction } from '../db/pool';
import {
  addClaims,
  noClaims,
  remindOwnersReadingBack,
  type ClaimedOwners,
  type OwnerClaim,
  type QueuedByEarlierAttempt,
} from '../db/reminders';
import { currentTraceparent } from '../observability/tracing';
import { isConnectionError, isPermanentDatabaseError, toActivityFailure } from './errors';
import type { ActivityDeps } from './deps';

export interface RemindOwnersInput extends CandidateWindow {
  /** The owners of this unit of work, at most a few hundred. */
  ownerUserIds: string[];
  asOf: string;
  jobRunId: string;
  /**
   * The attempt the workflow's retry policy allows last. On it, owners are isolated and reported one by
   * one instead of failing the whole activity, so one broken owner never costs the others their reminder.
   */
  lastAttempt: number;
  /**
   * For owners retried after an activity found them busy: that activity's `queuedBy`. Its earlier attempt
   * may have been the transaction that held them, and committed since; what it queued is counted here.
   */
  earlierQueuedBy?: Record<string, string[]>;
}

/** An owner left without its reminder in this cycle; the next cycle finds its documents again. */
interface FailedOwner {
  ownerUserId: string;
  error: string;
}

export interface RemindOwnersResult {
  /** Owners claimed, i.e. neither busy nor failed. */
  ownersProcessed: number;
  ownersNotified: number;
  /** Owners another transaction held; the workflow retries them later in the cycle. */
  busyOwnerIds: string[];
  /** This activity's `queuedBy`, with busy owners: their retry reads back what this activity queued. */
  busyQueuedBy?: string;
  remindersSent: number;
  markersInserted: number;
  skippedAlreadyMarked: number;
  failed: FailedOwner[];
}

/**
 * The `remindOwners` activity around the worker's pool, logger and metrics, and the claim of one group it
 * runs (`claimGroup`), which a page's claim runs for each of its groups.
 */
export function createOwnerClaims({ pool, logger, metrics }: Pick<ActivityDeps, 'pool' | 'logger' | 'metrics'>) {
  const log = logger.child({ component: 'activities' });

  /**
   * Claims the owners in one transaction, then logs and counts what was won (after the commit). With
   * `readBack`, what an earlier attempt of this activity committed for these owners counts as won here
   * too (that attempt's worker may have died before it reported, and the claim finds nothing left), and
   * so does what the activity that found an owner busy queued ({@link RemindOwnersInput.earlierQueuedBy}).
   * Both are read after the owner locks, in the claim's transaction (docs/DESIGN.md#owner-transaction).
   */
  async function remindInTransaction(
    input: CandidateWindow & { asOf: string; jobRunId: string; earlierQueuedBy?: Record<string, string[]> },
    ownerUserIds: string[],
    queuedBy: string,
    readBack: boolean,
    waitForLocksUntil?: number,
  ): Promise<ClaimedOwners> {
    const keysOf = (ownerUserId: string): string[] => {
      const earlier = input.earlierQueuedBy?.[ownerUserId] ?? [];
      return [...new Set([...(readBack ? [queuedBy] : []), ...earlier])];
    };
    const claimed = await withTransaction(pool, async (tx) => {
      const { claimed: fresh, earlier } = await remindOwnersReadingBack(
        tx,
        {
          ownerUserIds,
          asOfDate: input.asOfDate,
          thresholdsDays: input.thresholdsDays,
          retentionDays: input.retentionDays,
          asOf: input.asOf,
          jobRunId: input.jobRunId,
          traceContext: currentTraceparent(),
          queuedBy,
        },
        keysOf,
        { waitForLocksUntil },
      );
      return mergeEarlier(fresh, earlier);
    });
    reportClaims(claimed.owners, input.jobRunId);
    return claimed;
  }

  /** Logs and counts what committed claims did: a line and a metric per reminder queued, a line per busy owner. */
  function reportClaims(claims: readonly OwnerClaim[], jobRunId: string): void {
    for (const claim of claims) {
      if (claim.busy) {
        log.info({ ownerUserId: claim.ownerUserId, jobRunId }, 'owner busy in another transaction, retried later');
      }
      for (const doc of claim.won) {
        log.info(
          {
            jobRunId,
            ownerUserId: claim.ownerUserId,
            documentId: doc.documentId,
            type: doc.type,
            thresholdDays: doc.thresholdDays,
            daysLeft: doc.daysLeft,
          },
          'reminder queued',
        );
        metrics?.reminders.inc({ threshold_days: String(doc.thresholdDays) });
      }
      if (claim.won.length > 0) metrics?.ownersNotified.inc();
    }
  }

  /**
   * One transaction per owner, one after another. A transient error gets a few quick retries here
   * (the activity's own retries are spent or do not apply); what still fails is reported, not thrown.
   * Once the database stops answering, the remaining owners are reported without more tries.
   */
  async function isolateOwners(input: RemindOwnersInput, queuedBy: string): Promise<RemindOwnersResult> {
    let claimed = noClaims();
    const failed: FailedOwner[] = [];
    let unreachable: string | undefined;
    for (const ownerUserId of input.ownerUserIds) {
      if (unreachable) {
        failed.push({ ownerUserId, error: unreachable });
        continue;
      }
      const outcome = await claimAlone(input, ownerUserId, queuedBy);
      if (outcome.ok) {
        claimed = addClaims(claimed, outcome.claimed);
        continue;
      }
      log.warn({ jobRunId: input.jobRunId, ownerUserId, error: outcome.error }, 'owner transaction failed');
      failed.push({ ownerUserId, error: outcome.error });
      if (outcome.unreachable) unreachable = outcome.error;
    }
    return summarise(claimed, failed, queuedBy);
  }

  async function claimAlone(
    input: RemindOwnersInput,
    ownerUserId: string,
    queuedBy: string,
  ): Promise<{ ok: true; claimed: ClaimedOwners } | { ok: false; error: string; unreachable: boolean }> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        // Isolation follows a failed group (whose commit may have been lost on the way back) or a try
        // of this loop that may have committed: always read back.
        return { ok: true, claimed: await remindInTransaction(input, [ownerUserId], queuedBy, true) };
      } catch (err) {
        if (isPermanentDatabaseError(err) || attempt >= ISOLATED_ATTEMPTS) {
          return { ok: false, error: describeFailure(toActivityFailure(err)), unreachable: isConnectionError(err) };
        }
        await sleep(ISOLATED_BACKOFF_MS * 4 ** (attempt - 1));
      }
    }
  }

  /**
   * docs/DESIGN.md#owner-transaction for a group of owners in ONE transaction (`remindOwnersReadingBack`). A transient
   * error rolls the group back and fails the attempt, so Temporal's retry redoes exactly the same
   * work. A permanent error (or the last attempt) isolates the owners: each gets its own transaction
   * and a failing one is reported in `failed`, while the others are committed.
   */
  async function remindOwners(input: RemindOwnersInput): Promise<RemindOwnersResult> {
    const ctx = Context.current();
    const { attempt, activityId, workflowExecution } = ctx.info;
    const queuedBy = `${workflowExecution?.runId ?? ctx.info.workflowType}/${activityId}`;
    otel.trace
      .getActiveSpan()
      ?.setAttributes({ correlationId: input.jobRunId, owners: input.ownerUserIds.length, attempt });
    // A liveness signal while the statement runs: the workflow's heartbeat timeout then notices a
    // crashed worker within seconds.
    const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
    try {
      return await claimGroup(input, queuedBy, attempt);
    } finally {
      clearInterval(beat);
    }
  }

  /**
   * One group's claim as attempt `attempt` of the activity that `queuedBy` names: a transient error fails the
   * attempt (thrown, for Temporal to retry), a permanent one or the last attempt isolates the owners.
   */
  async function claimGroup(
    input: RemindOwnersInput,
    queuedBy: string,
    attempt: number,
    { waitForLocksUntil }: { waitForLocksUntil?: number } = {},
  ): Promise<RemindOwnersResult> {
    try {
      return summarise(
        await remindInTransaction(input, input.ownerUserIds, queuedBy, attempt > 1, waitForLocksUntil),
        [],
        queuedBy,
      );
    } catch (err) {
      if (!isPermanentDatabaseError(err) && attempt < input.lastAttempt) throw toActivityFailure(err);
      log.warn(
        {
          jobRunId: input.jobRunId,
          owners: input.ownerUserIds.length,
          attempt,
          error: describeFailure(toActivityFailure(err)),
        },
        'owner group failed, claiming its owners one by one',
      );
      return await isolateOwners(input, queuedBy);
    }
  }

  return { remindOwners, claimGroup, reportClaims };
}

/** How often a running group tells Temporal its worker is alive (the workflow's heartbeat timeout is 10 s). */
export const HEARTBEAT_EVERY_MS = 2_000;

/** Quick in-process tries per isolated owner, and the first pause between them (×4 each time). */
const ISOLATED_ATTEMPTS = 3;
const ISOLATED_BACKOFF_MS = 200;

/**
 * Adds what an earlier attempt queued to this attempt's claims. An owner the earlier attempt handled is
 * not busy for this one, even if another transaction holds it now: its reminder is already queued.
 */
function mergeEarlier(fresh: ClaimedOwners, earlier: QueuedByEarlierAttempt[]): ClaimedOwners {
  if (earlier.length === 0) return fresh;
  const byOwner = new Map(earlier.map((e) => [e.ownerUserId, e]));
  let markersInserted = fresh.markersInserted;
  const owners = fresh.owners.map((claim): OwnerClaim => {
    const before = byOwner.get(claim.ownerUserId);
    if (!before) return claim;
    markersInserted += before.markersInserted;
    return { ...claim, busy: false, won: [...before.won, ...claim.won] };
  });
  return { ...fresh, owners, markersInserted };
}

/** A result that claimed nothing, to add to; `failed` as given. */
export function emptyResult(failed: FailedOwner[] = []): RemindOwnersResult {
  return {
    ownersProcessed: 0,
    ownersNotified: 0,
    busyOwnerIds: [],
    remindersSent: 0,
    markersInserted: 0,
    skippedAlreadyMarked: 0,
    failed,
  };
}

/** The counts of a group's claims; `busyQueuedBy` is `queuedBy` when any owner was busy. */
export function summarise(claimed: ClaimedOwners, failed: FailedOwner[], queuedBy: string): RemindOwnersResult {
  const result = emptyResult(failed);
  result.markersInserted = claimed.markersInserted;
  result.skippedAlreadyMarked = claimed.skippedAlreadyMarked;
  for (const c of claimed.owners) {
    if (c.busy) {
      result.busyOwnerIds.push(c.ownerUserId);
      continue;
    }
    result.ownersProcessed += 1;
    if (c.won.length > 0) result.ownersNotified += 1;
    result.remindersSent += c.won.length;
  }
  if (result.busyOwnerIds.length > 0) result.busyQueuedBy = queuedBy;
  return result;
}
