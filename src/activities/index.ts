/**
 * Activities of the cycle, built by the worker from its dependencies. Results carry ids and counts
 * only: they are recorded in workflow history, which every operator can read.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { partitionCount, pruneCutoffFor, type CycleSettings } from '../domain/cycle';
import { resolveCycleSettings as resolveSettings } from '../domain/cycle-input';
import { countDueDocumentsUpTo, type CandidateWindow } from '../db/candidates';
import { deleteExpiredMarkers, raisePruneCutoff } from '../db/reminders';
import { createClaimActivities } from './claim';
import { deleteClaimRecords } from './claim/sql/pages';
import type { ActivityDeps } from './deps';

export type { ActivityDeps } from './deps';
export type { ClaimPageInput, ClaimPageResult, RemindOwnersInput, RemindOwnersResult } from './claim';
export { activityFailures } from './interceptor';

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
   * The first run id of the cycle whose claims' records (pages, receipts, attempts) go too, with any older than
   * {@link STALE_CLAIM_RECORD_DAYS}; named `cycleId`, as in `ClaimPageInput`, because activity inputs are
   * recorded in history.
   */
  cycleId?: string;
  /** The first run ids of the cycle's partitions, whose claims' records go too. */
  partitionIds?: string[];
  /** Rows per delete statement (each its own transaction). */
  chunkSize?: number;
}

/**
 * Builds the activity implementations around the worker's pool, logger and configuration. What they throw is
 * converted for Temporal by the worker's {@link activityFailures} interceptor.
 */
export function createActivities({ pool, logger, config, metrics }: ActivityDeps) {
  const { claimPage, remindOwners } = createClaimActivities({ pool, logger, metrics });
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
      const due = await countDueDocumentsUpTo(pool, input.window, max * size, config.scanSlices);
      return { due, partitions: partitionCount(due, max, size), max, size };
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
      await raisePruneCutoff(pool, cutoff);
      for (;;) {
        const deleted = await deleteExpiredMarkers(pool, cutoff, chunk);
        total += deleted;
        Context.current().heartbeat({ pruned: total });
        if (deleted < chunk) break;
      }
      const cycles = [input.cycleId, ...(input.partitionIds ?? [])].filter((id): id is string => Boolean(id));
      await deleteClaimRecords(pool, cycles, STALE_CLAIM_RECORD_DAYS);
      return total;
    },
  };
}

/** Claims' records of cycles that never finished (cancelled, terminated) are deleted after this many days. */
const STALE_CLAIM_RECORD_DAYS = 2;

/** The activity interface the workflow proxies (types only cross into workflow code). */
export type Activities = ReturnType<typeof createActivities>;
