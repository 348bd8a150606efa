/**
 * Activities of the cycle, built by the worker from its dependencies. Results carry ids and counts
 * only: they are recorded in workflow history, which every operator can read.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { partitionCount, pruneCutoffFor, type CycleSettings } from '../domain/cycle';
import { resolveCycleSettings as resolveSettings } from '../domain/cycle-input';
import { countDueDocumentsUpTo, type CandidateWindow } from '../db/candidates';
import { deleteScanPositions } from '../db/scan-positions';
import { deleteExpiredMarkers, raisePruneCutoff } from '../db/reminders';
import { toActivityFailure } from './errors';
import type { ActivityDeps } from './deps';
import { createOwnerClaims } from './owner-groups';
import { createPageClaims } from './page-claims';

export type { ActivityDeps } from './deps';
export type { RemindOwnersInput, RemindOwnersResult } from './owner-groups';
export type { ClaimPageInput, ClaimPageResult } from './page-claims';

/** What {@link PlanPartitionsInput} asks: how to split the day of `window`. */
export interface PlanPartitionsInput {
  window: CandidateWindow;
  jobRunId: string;
}

/** The plan of a cycle's day, recorded in its history. */
export interface PartitionPlan {
  /** Documents due when the plan was made, counted up to `max × size` (the plan needs no more). */
  due: number;
  /** Partitions: one per `size` due documents, at least one, at most `max`. */
  partitions: number;
  /** The worker's `REMINDER_PARTITIONS` and `REMINDER_PARTITION_SIZE` the plan used. */
  max: number;
  size: number;
}

export interface PruneInput {
  asOfDate: string;
  retentionDays: number;
  /**
   * The first run id of the cycle whose scan positions go too (with any older than
   * {@link STALE_SCAN_POSITION_DAYS}); named `cycleId`, as in `ClaimPageInput`, because activity inputs are
   * recorded in history.
   */
  cycleId?: string;
  /** The first run ids of the cycle's partitions, whose scan positions go too. */
  partitionIds?: string[];
  /** Rows per delete statement (each its own transaction). */
  chunkSize?: number;
}

/** Builds the activity implementations around the worker's pool, logger and configuration. */
export function createActivities({ pool, logger, config, metrics }: ActivityDeps) {
  const groupClaims = createOwnerClaims({ pool, logger, metrics });
  const { remindOwners } = groupClaims;
  const claimPage = createPageClaims({ pool, logger }, groupClaims);
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
      /** The workflow's time when it asked; absent from workflows before it was added. */
      workflowTime?: string;
    }): Promise<CycleSettings> {
      const resolved = resolveSettings(config.cycle, request.input, {
        defaultAsOf: new Date(request.defaultAsOf),
        now: new Date(),
        ...(request.workflowTime ? { workflowTime: new Date(request.workflowTime) } : {}),
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

    /**
     * Counts the day's due documents (up to what the plan needs) and splits the day into partitions
     * (docs/DESIGN.md#partitions). Nothing due: one partition, and the cycle skips its scan.
     */
    async planPartitions(input: PlanPartitionsInput): Promise<PartitionPlan> {
      const { max, size } = config.partitions;
      try {
        const due = await countDueDocumentsUpTo(pool, input.window, max * size, config.scanSlices);
        return { due, partitions: partitionCount(due, max, size), max, size };
      } catch (err) {
        throw toActivityFailure(err);
      }
    },

    remindOwners,

    claimPage,

    /**
     * docs/DESIGN.md#prune: deletes markers of documents that expired before AsOfDate − RetentionDays, after
     * raising the ledger's prune cutoff to that date, in chunks of their own transactions, heartbeating between them so a retry after a crash just continues.
     */
    async pruneReminders(input: PruneInput): Promise<number> {
      const { cutoff, heldBackFrom } = pruneCutoffFor(input.asOfDate, input.retentionDays, new Date());
      if (heldBackFrom) {
        logger.warn(
          { asOfDate: input.asOfDate, retentionDays: input.retentionDays, cutoff, heldBackFrom },
          "prune cutoff held back to the worker's today: the cycle's AsOf lies after it (a clock ahead?)",
        );
      }
      const chunk = input.chunkSize ?? 5_000;
      let total = 0;
      try {
        await raisePruneCutoff(pool, cutoff);
        for (;;) {
          const deleted = await deleteExpiredMarkers(pool, cutoff, chunk);
          total += deleted;
          Context.current().heartbeat({ pruned: total });
          if (deleted < chunk) break;
        }
        for (const id of [input.cycleId, ...(input.partitionIds ?? [])]) {
          if (id) await deleteScanPositions(pool, id, STALE_SCAN_POSITION_DAYS);
        }
        return total;
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  };
}

/** Scan positions of cycles that never finished (cancelled, terminated) are deleted after this many days. */
const STALE_SCAN_POSITION_DAYS = 2;

/** The activity interface the workflow proxies (types only cross into workflow code). */
export type Activities = ReturnType<typeof createActivities>;
