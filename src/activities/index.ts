/**
 * Activities of the cycle, built by the worker from its dependencies. Results carry ids and counts
 * only: they are recorded in workflow history, which every operator can read.
 */
import * as otel from '@opentelemetry/api';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import type { Config } from '../config';
import {
  resolveCycleSettings as resolveSettings,
  type CycleInput,
  type CycleSettings,
  type PageCursor,
} from '../domain/cycle';
import { addDays } from '../domain/thresholds';
import { selectCandidatePage, type CandidateWindow } from '../db/candidates';
import { withTransaction } from '../db/pool';
import { deleteExpiredMarkers, markAndEnqueueOwner, tryLockOwner } from '../db/reminders';
import type { Logger } from '../logger';
import type { WorkerMetrics } from '../metrics';
import { currentTraceparent } from '../tracing';
import { toActivityFailure } from './errors';

export interface ActivityDeps {
  pool: pg.Pool;
  logger: Logger;
  config: Pick<Config, 'cycle'>;
  metrics?: WorkerMetrics;
}

export interface CandidatePage {
  /** Distinct owners of the page's documents, in scan order. */
  ownerIds: string[];
  documentCount: number;
  /** Where the next page starts, or null when this page was not full (the scan is done). */
  next: PageCursor | null;
}

export interface RemindOwnerInput extends CandidateWindow {
  ownerUserId: string;
  asOf: string;
  correlationId: string;
}

export interface RemindOwnerResult {
  remindersSent: number;
  markersInserted: number;
  skippedAlreadyMarked: number;
  /** True when another transaction held the owner and this one left it alone. */
  ownerBusy: boolean;
}

export interface PruneInput {
  asOfDate: string;
  retentionDays: number;
  /** Rows per delete statement (each its own transaction). */
  chunkSize?: number;
}

/** Builds the activity implementations around the worker's pool, logger and configuration. */
export function createActivities({ pool, logger, config, metrics }: ActivityDeps) {
  const log = logger.child({ component: 'activities' });

  return {
    /**
     * Fixes the cycle's settings: the worker's configuration overridden by the run's input, validated.
     * Invalid input fails the cycle at once (non-retryable) with a message naming each bad field.
     */
    async resolveCycleSettings(input: CycleInput & { startedAt: string }): Promise<CycleSettings> {
      const resolved = resolveSettings(config.cycle, input, new Date(input.startedAt));
      if (!resolved.ok) {
        throw ApplicationFailure.nonRetryable(
          `Invalid cycle input: ${resolved.problems.join('; ')}`,
          'InvalidCycleInput',
        );
      }
      return resolved.settings;
    },

    /** One page of the SPEC §3.1 scan, reduced to owner ids and the next cursor. */
    async findCandidatePage(input: {
      window: CandidateWindow;
      cursor: PageCursor | null;
      batchSize: number;
    }): Promise<CandidatePage> {
      try {
        const rows = await selectCandidatePage(pool, input.window, input.cursor, input.batchSize);
        const ownerIds = [...new Set(rows.map((r) => r.owner_user_id))];
        const last = rows[rows.length - 1];
        return {
          ownerIds,
          documentCount: rows.length,
          next: rows.length === input.batchSize ? { expiresAt: last.expires_at, id: last.id } : null,
        };
      } catch (err) {
        throw toActivityFailure(err);
      }
    },

    /** SPEC §3.2 for one owner, in one transaction: markers, and the outbox row when anything was won. */
    async remindOwner(input: RemindOwnerInput): Promise<RemindOwnerResult> {
      otel.trace.getActiveSpan()?.setAttributes({ ownerUserId: input.ownerUserId, correlationId: input.correlationId });
      try {
        const outcome = await withTransaction(pool, async (tx) => {
          if (!(await tryLockOwner(tx, input.ownerUserId))) return undefined;
          return markAndEnqueueOwner(tx, { ...input, traceContext: currentTraceparent() });
        });
        if (!outcome) {
          log.info({ ownerUserId: input.ownerUserId, jobRunId: input.correlationId }, 'owner busy in another transaction, skipped');
          return { remindersSent: 0, markersInserted: 0, skippedAlreadyMarked: 0, ownerBusy: true };
        }
        for (const doc of outcome.won) {
          log.info(
            {
              jobRunId: input.correlationId,
              ownerUserId: input.ownerUserId,
              documentId: doc.documentId,
              type: doc.type,
              thresholdDays: doc.thresholdDays,
              daysLeft: doc.daysLeft,
            },
            'reminder queued',
          );
          metrics?.reminders.inc({ threshold_days: String(doc.thresholdDays) });
        }
        if (outcome.won.length > 0) metrics?.ownersNotified.inc();
        return {
          remindersSent: outcome.won.length,
          markersInserted: outcome.markersInserted,
          skippedAlreadyMarked: outcome.lostToOthers,
          ownerBusy: false,
        };
      } catch (err) {
        throw toActivityFailure(err);
      }
    },

    /**
     * SPEC §3.3: deletes markers of documents that expired before AsOfDate − RetentionDays, in chunks of
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
          if (deleted < chunk) return total;
        }
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  };
}

/** The activity interface the workflow proxies (types only cross into workflow code). */
export type Activities = ReturnType<typeof createActivities>;
