/**
 * A partition's page in one activity (docs/DESIGN.md#page-claims): the page read and its owners claimed, so
 * the owner ids stay in the worker and PostgreSQL and the workflow records one activity per page instead of
 * a page activity and one per owner group.
 */
import * as otel from '@opentelemetry/api';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { CycleSettings, PartitionRef } from '../domain/cycle';
import { idRanges, selectCandidatePage, selectPageOwners, type CandidateWindow } from '../db/candidates';
import { selectScanPosition, upsertScanPosition } from '../db/scan-positions';
import { toActivityFailure } from './errors';
import type { ActivityDeps } from './deps';
import { emptyResult, HEARTBEAT_EVERY_MS, type RemindOwnersInput, type RemindOwnersResult } from './owner-groups';

/** Which page of which partition to claim, and how: everything the workflow fixed for its owners. */
export interface ClaimPageInput extends Pick<CycleSettings, 'asOf' | 'ownerConcurrency'> {
  window: CandidateWindow;
  /** The partition's first run id, stable across continue-as-new: it keys the scan positions. */
  cycleId: string;
  jobRunId: string;
  page: number;
  batchSize: number;
  partition: PartitionRef;
  /** The attempt the workflow's retry policy allows last: on it, a failing group's owners are isolated. */
  lastAttempt: number;
}

/** What a page's claim did: the counts of its groups together, and what the scan needs next. */
export interface ClaimPageResult extends RemindOwnersResult {
  /** Documents of the page (on a retry: every in-window document of its range, reminded or not). */
  documentCount: number;
  /** Distinct owners of the page. */
  owners: number;
  /** False when the scan of the partition is done. */
  hasNext: boolean;
  /**
   * Owners another transaction held at the page's first try; each was tried once more in the activity, and
   * those still held are in `busyOwnerIds`.
   */
  ownersFoundBusy: number;
}

/**
 * How long a page's second try waits for the transactions that hold its busy owners; an owner held longer
 * is reported busy, for the partition's own retry.
 */
const BUSY_WAIT_MS = 2_000;

/**
 * The `claimPage` activity around the worker's pool and a group's claim (`claimGroup` of
 * `createOwnerClaims`).
 */
export function createPageClaims(
  { pool }: Pick<ActivityDeps, 'pool'>,
  claimGroup: (
    input: RemindOwnersInput,
    queuedBy: string,
    attempt: number,
    options?: { waitForLocksMs?: number },
  ) => Promise<RemindOwnersResult>,
) {
  /**
   * The owners of page `input.page`. A first attempt reads the page after the previous one's end and records
   * where it ends (every page, the last too); a later attempt that finds that end reads the owners between
   * the two ends again, reminded documents included, so it claims the same owners the earlier attempt did
   * and reads back what that one committed.
   */
  async function readPage(
    input: ClaimPageInput,
    attempt: number,
  ): Promise<{ ownerIds: string[]; documentCount: number; hasNext: boolean }> {
    const { window, cycleId, page, partition } = input;
    const range = idRanges(partition.count)[partition.index];
    const after = page > 1 ? await selectScanPosition(pool, cycleId, page - 1) : null;
    if (page > 1 && !after) {
      throw ApplicationFailure.nonRetryable(
        `no scan position for page ${page - 1} of partition ${partition.index + 1} of ${partition.count} of cycle ` +
          `${input.jobRunId} (${cycleId}): a continuation only continues the partition that wrote it`,
        'ScanPositionMissing',
      );
    }
    const through = attempt > 1 ? await selectScanPosition(pool, cycleId, page) : undefined;
    if (through) {
      const { ownerIds, documents } = await selectPageOwners(pool, window, after ?? null, through, range);
      const rest = await selectCandidatePage(pool, window, through, 1, 1, range);
      return { ownerIds, documentCount: documents, hasNext: rest.length > 0 };
    }
    const rows = await selectCandidatePage(pool, window, after ?? null, input.batchSize, 1, range);
    const last = rows[rows.length - 1];
    if (last) {
      await upsertScanPosition(pool, {
        firstRunId: cycleId,
        jobRunId: input.jobRunId,
        page,
        expiresAt: last.expires_at,
        id: last.id,
        attempt,
      });
    }
    return {
      ownerIds: [...new Set(rows.map((r) => r.owner_user_id))],
      documentCount: rows.length,
      hasNext: rows.length === input.batchSize,
    };
  }

  /**
   * The page's owners in transactions of at most `ownerConcurrency` owners, one after another: a page of the
   * default size is one transaction, as baseline B's one statement per page (groups of 50 owners, several at
   * once, cost PostgreSQL half as much CPU again: bench/REPORT.md). A transaction that fails the attempt
   * stops the page there, and the retry reads back what the ones before it committed.
   */
  async function claimGroups(
    input: ClaimPageInput,
    ownerIds: string[],
    queuedBy: string,
    attempt: number,
    options: { waitForLocksMs?: number } = {},
  ): Promise<RemindOwnersResult[]> {
    const size = Math.max(1, input.ownerConcurrency);
    const results: RemindOwnersResult[] = [];
    for (let i = 0; i < ownerIds.length; i += size) {
      results.push(
        await claimGroup(
          {
            ownerUserIds: ownerIds.slice(i, i + size),
            asOf: input.asOf,
            ...input.window,
            jobRunId: input.jobRunId,
            lastAttempt: input.lastAttempt,
          },
          queuedBy,
          attempt,
          options,
        ),
      );
    }
    return results;
  }

  /**
   * Reads a partition's page and claims its owners (docs/DESIGN.md#page-claims). Owners another transaction
   * held come back by id, for the partition's busy retries; so do owners that failed for good.
   */
  async function claimPage(input: ClaimPageInput): Promise<ClaimPageResult> {
    const ctx = Context.current();
    const { attempt, activityId, workflowExecution } = ctx.info;
    const queuedBy = `${workflowExecution?.runId ?? ctx.info.workflowType}/${activityId}`;
    const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
    try {
      const page = await readPage(input, attempt).catch((err: unknown) => {
        throw toActivityFailure(err);
      });
      otel.trace.getActiveSpan()?.setAttributes({
        correlationId: input.jobRunId,
        page: input.page,
        partition: input.partition.index + 1,
        owners: page.ownerIds.length,
        documentCount: page.documentCount,
        attempt,
      });
      const first = await claimGroups(input, page.ownerIds, queuedBy, attempt);
      const busy = first.flatMap((r) => r.busyOwnerIds);
      // An owner busy here is most often held by another partition claiming the same owner's documents in
      // the other's id range, for the milliseconds of its transaction: a second try that waits for that
      // transaction to end claims it, or finds it done, without a workflow timer and another activity.
      const again =
        busy.length > 0 ? await claimGroups(input, busy, queuedBy, attempt, { waitForLocksMs: BUSY_WAIT_MS }) : [];
      return {
        ...sumResults([...first.map((r) => ({ ...r, busyOwnerIds: [] })), ...again], queuedBy),
        ownersFoundBusy: busy.length,
        documentCount: page.documentCount,
        owners: page.ownerIds.length,
        hasNext: page.hasNext,
      };
    } finally {
      clearInterval(beat);
    }
  }

  return claimPage;
}

/** The groups' results as one; `busyQueuedBy` is this activity's key when any owner was busy. */
function sumResults(results: RemindOwnersResult[], queuedBy: string): RemindOwnersResult {
  const sum = emptyResult();
  for (const r of results) {
    sum.ownersProcessed += r.ownersProcessed;
    sum.ownersNotified += r.ownersNotified;
    sum.remindersSent += r.remindersSent;
    sum.markersInserted += r.markersInserted;
    sum.skippedAlreadyMarked += r.skippedAlreadyMarked;
    sum.busyOwnerIds.push(...r.busyOwnerIds);
    sum.failed.push(...r.failed);
  }
  if (sum.busyOwnerIds.length > 0) sum.busyQueuedBy = queuedBy;
  return sum;
}
