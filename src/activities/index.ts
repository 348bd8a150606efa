/**
 * Activities of the cycle, built by the worker from its dependencies. Results carry ids and counts
 * only: they are recorded in workflow history, which every operator can read.
 */
import * as otel from '@opentelemetry/api';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import type { Config } from '../config';
import { resolveCycleSettings as resolveSettings, type CycleSettings } from '../domain/cycle';
import { describeFailure } from '../domain/failures';
import { addDays } from '../domain/thresholds';
import { selectCandidatePage, type CandidateWindow } from '../db/candidates';
import { deleteScanPositions, selectScanPosition, upsertScanPosition } from '../db/scan-positions';
import { withTransaction } from '../db/pool';
import { claimOwners, deleteExpiredMarkers, type OwnerClaim } from '../db/reminders';
import type { Logger } from '../observability/logger';
import type { WorkerMetrics } from '../observability/metrics';
import { currentTraceparent } from '../observability/tracing';
import { isConnectionError, isPermanentDatabaseError, toActivityFailure } from './errors';

export interface ActivityDeps {
  pool: pg.Pool;
  logger: Logger;
  config: Pick<Config, 'cycle' | 'scanSlices'>;
  metrics?: WorkerMetrics;
}

export interface CandidatePage {
  /** Distinct owners of the page's documents, in scan order. */
  ownerIds: string[];
  documentCount: number;
  /** False when this page was not full: the scan is done. */
  hasNext: boolean;
}

/**
 * Which page of which cycle's scan to read. Page 1 starts at the window; page n starts where page n − 1
 * ended, a position stored in PostgreSQL (a document's expiry date is a document value, so it never
 * travels through history).
 */
export interface FindCandidatePageInput {
  window: CandidateWindow;
  /** The first run id of the cycle's chain of runs: stable across continue-as-new. */
  cycleId: string;
  jobRunId: string;
  page: number;
  batchSize: number;
}

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
}

/** An owner left without its reminder in this cycle; the next cycle finds its documents again. */
export interface FailedOwner {
  ownerUserId: string;
  error: string;
}

export interface RemindOwnersResult {
  /** Owners claimed, i.e. neither busy nor failed. */
  ownersProcessed: number;
  ownersNotified: number;
  /** Owners another transaction held; the workflow retries them later in the cycle. */
  busyOwnerIds: string[];
  remindersSent: number;
  markersInserted: number;
  skippedAlreadyMarked: number;
  failed: FailedOwner[];
}

export interface PruneInput {
  asOfDate: string;
  retentionDays: number;
  /** The cycle whose scan positions go too (with any older than {@link STALE_SCAN_POSITION_DAYS}). */
  cycleId?: string;
  /** Rows per delete statement (each its own transaction). */
  chunkSize?: number;
}

/** Builds the activity implementations around the worker's pool, logger and configuration. */
export function createActivities({ pool, logger, config, metrics }: ActivityDeps) {
  const log = logger.child({ component: 'activities' });

  /** Claims the owners in one transaction, then logs and counts what was won (after the commit). */
  async function claimInTransaction(
    input: CandidateWindow & { asOf: string; jobRunId: string },
    ownerUserIds: string[],
  ): Promise<OwnerClaim[]> {
    const claims = await withTransaction(pool, (tx) =>
      claimOwners(tx, {
        ownerUserIds,
        asOfDate: input.asOfDate,
        thresholdsDays: input.thresholdsDays,
        retentionDays: input.retentionDays,
        asOf: input.asOf,
        jobRunId: input.jobRunId,
        traceContext: currentTraceparent(),
      }),
    );
    for (const claim of claims) {
      if (claim.busy) {
        log.info(
          { ownerUserId: claim.ownerUserId, jobRunId: input.jobRunId },
          'owner busy in another transaction, retried later',
        );
      }
      for (const doc of claim.won) {
        log.info(
          {
            jobRunId: input.jobRunId,
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
    return claims;
  }

  /**
   * One transaction per owner, one after another. A transient error gets a few quick retries here
   * (the activity's own retries are spent or do not apply); what still fails is reported, not thrown.
   * Once the database stops answering, the remaining owners are reported without more tries.
   */
  async function isolateOwners(input: RemindOwnersInput): Promise<RemindOwnersResult> {
    const claims: OwnerClaim[] = [];
    const failed: FailedOwner[] = [];
    let unreachable: string | undefined;
    for (const ownerUserId of input.ownerUserIds) {
      if (unreachable) {
        failed.push({ ownerUserId, error: unreachable });
        continue;
      }
      const outcome = await claimAlone(input, ownerUserId);
      if (outcome.ok) {
        claims.push(...outcome.claims);
        continue;
      }
      log.warn({ jobRunId: input.jobRunId, ownerUserId, error: outcome.error }, 'owner transaction failed');
      failed.push({ ownerUserId, error: outcome.error });
      if (outcome.unreachable) unreachable = outcome.error;
    }
    return summarise(claims, failed);
  }

  async function claimAlone(
    input: RemindOwnersInput,
    ownerUserId: string,
  ): Promise<{ ok: true; claims: OwnerClaim[] } | { ok: false; error: string; unreachable: boolean }> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return { ok: true, claims: await claimInTransaction(input, [ownerUserId]) };
      } catch (err) {
        if (isPermanentDatabaseError(err) || attempt >= ISOLATED_ATTEMPTS) {
          return { ok: false, error: describeFailure(toActivityFailure(err)), unreachable: isConnectionError(err) };
        }
        await sleep(ISOLATED_BACKOFF_MS * 4 ** (attempt - 1));
      }
    }
  }

  return {
    /**
     * Fixes the cycle's settings: the worker's configuration overridden by the run's input, validated;
     * a continued run's settings are validated the same way. Invalid input fails the cycle at once
     * (non-retryable) with a message naming each bad field.
     */
    async resolveCycleSettings(request: {
      input: unknown;
      jobRunId: string;
      defaultAsOf: string;
    }): Promise<CycleSettings> {
      const resolved = resolveSettings(config.cycle, request.input, {
        defaultAsOf: new Date(request.defaultAsOf),
        now: new Date(),
        jobRunId: request.jobRunId,
      });
      if (!resolved.ok) {
        throw ApplicationFailure.nonRetryable(
          `Invalid cycle input: ${resolved.problems.join('; ')}`,
          'InvalidCycleInput',
        );
      }
      return resolved.settings;
    },

    /** One page of the candidate scan, reduced to owner ids; its end position stays in PostgreSQL. */
    async findCandidatePage(input: FindCandidatePageInput): Promise<CandidatePage> {
      const { attempt } = Context.current().info;
      let after = null;
      try {
        if (input.page > 1) {
          after = await selectScanPosition(pool, input.cycleId, input.page - 1);
        }
      } catch (err) {
        throw toActivityFailure(err);
      }
      if (input.page > 1 && !after) {
        throw ApplicationFailure.nonRetryable(
          `no scan position for page ${input.page - 1} of cycle ${input.jobRunId} (${input.cycleId}): a continuation ` +
            'only continues the cycle that wrote it',
          'ScanPositionMissing',
        );
      }
      try {
        // Only a scan's first page is sliced: on an idle day it is the only page and walks the whole
        // window to find nothing; a later page follows a full one, so it is busy, and a second slice
        // would mostly be read and thrown away (bench/REPORT.md).
        const slices = input.page === 1 ? config.scanSlices : 1;
        const rows = await selectCandidatePage(pool, input.window, after ?? null, input.batchSize, slices);
        const hasNext = rows.length === input.batchSize;
        if (hasNext) {
          const last = rows[rows.length - 1];
          await upsertScanPosition(pool, {
            cycleId: input.cycleId,
            jobRunId: input.jobRunId,
            page: input.page,
            expiresAt: last.expires_at,
            id: last.id,
            attempt,
          });
        }
        return { ownerIds: [...new Set(rows.map((r) => r.owner_user_id))], documentCount: rows.length, hasNext };
      } catch (err) {
        throw toActivityFailure(err);
      }
    },

    /**
     * docs/DESIGN.md#owner-transaction for a group of owners in ONE transaction and one statement (`claimOwners`). A transient
     * error rolls the group back and fails the attempt, so Temporal's retry redoes exactly the same
     * work. A permanent error (or the last attempt) isolates the owners: each gets its own transaction
     * and a failing one is reported in `failed`, while the others are committed.
     */
    async remindOwners(input: RemindOwnersInput): Promise<RemindOwnersResult> {
      const ctx = Context.current();
      const { attempt } = ctx.info;
      otel.trace
        .getActiveSpan()
        ?.setAttributes({ correlationId: input.jobRunId, owners: input.ownerUserIds.length, attempt });
      // A liveness signal while the statement runs: the workflow's heartbeat timeout then notices a
      // crashed worker within seconds.
      const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        return summarise(await claimInTransaction(input, input.ownerUserIds), []);
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
        return await isolateOwners(input);
      } finally {
        clearInterval(beat);
      }
    },

    /**
     * docs/DESIGN.md#prune: deletes markers of documents that expired before AsOfDate − RetentionDays, in chunks of
     * their own transactions, heartbeating between them so a retry after a crash just continues.
     */
    async pruneReminders(input: PruneInput): Promise<number> {
      const cutoff = addDays(input.asOfDate, -input.retentionDays);
      const chunk = input.chunkSize ?? 5_000;
      let total = 0;
      try {
        for (;;) {
          const deleted = await deleteExpiredMarkers(pool, cutoff, chunk);
          total += deleted;
          Context.current().heartbeat({ pruned: total });
          if (deleted < chunk) break;
        }
        if (input.cycleId) await deleteScanPositions(pool, input.cycleId, STALE_SCAN_POSITION_DAYS);
        return total;
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  };
}

/** Scan positions of cycles that never finished (cancelled, terminated) are deleted after this many days. */
export const STALE_SCAN_POSITION_DAYS = 2;

/** How often a running group tells Temporal its worker is alive (the workflow's heartbeat timeout is 10 s). */
const HEARTBEAT_EVERY_MS = 2_000;

/** Quick in-process tries per isolated owner, and the first pause between them (×4 each time). */
const ISOLATED_ATTEMPTS = 3;
const ISOLATED_BACKOFF_MS = 200;

function summarise(claims: OwnerClaim[], failed: FailedOwner[]): RemindOwnersResult {
  const result: RemindOwnersResult = {
    ownersProcessed: 0,
    ownersNotified: 0,
    busyOwnerIds: [],
    remindersSent: 0,
    markersInserted: 0,
    skippedAlreadyMarked: 0,
    failed,
  };
  for (const c of claims) {
    if (c.busy) {
      result.busyOwnerIds.push(c.ownerUserId);
      continue;
    }
    result.ownersProcessed += 1;
    if (c.won.length > 0) result.ownersNotified += 1;
    result.remindersSent += c.won.length;
    result.markersInserted += c.markersInserted;
    result.skippedAlreadyMarked += c.skippedAlreadyMarked;
  }
  return result;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The activity interface the workflow proxies (types only cross into workflow code). */
export type Activities = ReturnType<typeof createActivities>;
