/**
 * The operator's read-only views of the job: what a cycle would send (`cycle preview`) and what recent
 * cycles did (`cycle status`); and the one that starts a cycle by hand (`cycle run`).
 */
import crypto from 'node:crypto';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { requireDatabaseUrl, type Config } from '../config';
import { scheduledCycleTimeoutMs, type CycleInput, type CycleResult } from '../domain/cycle';
import { selectCandidatePage, type CandidateWindow, type PageCursor } from '../db/candidates';
import { createPool, withTransaction, type Queryable } from '../db/pool';
import { selectDueDocumentsOfOwners } from '../db/preview';
import type { WonDocument } from '../db/reminders';
import { MANUAL_WORKFLOW_ID_PREFIX, WORKFLOW_TYPE } from '../domain/names';
import { utcDate } from '../domain/dates';
import {
  REMINDER_AS_OF,
  REMINDER_OUTCOME,
  REMINDERS_SENT,
  TEMPORAL_SCHEDULED_START_TIME,
} from '../domain/search-attributes';
import { manualCycleMetadata } from '../temporal/ui-metadata';
import type { CycleWorkflow } from '../workflows';
import { cycleProgress, resultWithProgress } from './progress';

/** One owner's event as a cycle would write it, without the document values (`numberMask`, `expiresAt`). */
interface PreviewOwner {
  ownerUserId: string;
  documents: WonDocument[];
}

/** What `cycle preview` prints. */
export interface CyclePreview extends CandidateWindow {
  owners: PreviewOwner[];
  ownerCount: number;
  documentCount: number;
}

/**
 * What a cycle with this window would send, owner by owner, in scan order: the cycle's
 * own keyset scan page by page, and for each owner met for the first time the owner statement's due
 * documents. A cycle marks an owner's documents before it reads the next page, so an owner whose
 * documents span pages is taken once, on the first; here nothing is marked, so owners already listed
 * are skipped instead. Run it in one read-only snapshot ({@link withReadOnlySnapshot}) so the pages agree.
 */
export async function previewCycle(db: Queryable, window: CandidateWindow, batchSize: number): Promise<CyclePreview> {
  const owners: PreviewOwner[] = [];
  const seen = new Set<string>();
  let cursor: PageCursor | null = null;
  for (;;) {
    const rows = await selectCandidatePage(db, window, cursor, batchSize);
    const fresh = [...new Set(rows.map((r) => r.owner_user_id))].filter((id) => !seen.has(id));
    for (const id of fresh) seen.add(id);
    if (fresh.length > 0) {
      const byOwner = new Map<string, WonDocument[]>();
      for (const { ownerUserId, ...doc } of await selectDueDocumentsOfOwners(db, fresh, window)) {
        byOwner.set(ownerUserId, [...(byOwner.get(ownerUserId) ?? []), doc]);
      }
      for (const id of fresh) {
        const documents = byOwner.get(id);
        if (documents) owners.push({ ownerUserId: id, documents });
      }
    }
    if (rows.length < batchSize) break;
    const last = rows[rows.length - 1];
    cursor = { expiresAt: last.expires_at, id: last.id };
  }
  return {
    ...window,
    owners,
    ownerCount: owners.length,
    documentCount: owners.reduce((n, o) => n + o.documents.length, 0),
  };
}

/**
 * Runs `fn` in a `REPEATABLE READ READ ONLY` transaction: PostgreSQL itself refuses any write, and every
 * statement sees the same snapshot.
 */
export function withReadOnlySnapshot<T>(pool: pg.Pool, fn: (db: pg.PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(pool, fn, 'begin isolation level repeatable read read only');
}

/**
 * `cycle preview`: connects as the support role (SUPPORT_DATABASE_URL), else the worker (DATABASE_URL), with the worker's configured thresholds and
 * retention unless overridden, and previews a cycle as of `asOfDate` without writing anything.
 */
export async function previewCycleCommand(
  config: Config,
  options: { asOfDate: string; thresholdsDays?: number[]; retentionDays?: number },
): Promise<CyclePreview> {
  // Read-only, so the support role's connection serves where it is set (compose's client has no other).
  const pool = createPool({
    connectionString: config.supportDatabaseUrl ?? requireDatabaseUrl(config, 'worker'),
    ...(config.supportDatabaseUrl ? { urlVariable: 'SUPPORT_DATABASE_URL' } : {}),
    max: 1,
    applicationName: 'expiry-reminder-preview',
  });
  try {
    const window: CandidateWindow = {
      asOfDate: options.asOfDate,
      thresholdsDays: options.thresholdsDays ?? config.cycle.thresholdsDays,
      retentionDays: options.retentionDays ?? config.cycle.retentionDays,
    };
    return await withReadOnlySnapshot(pool, (db) => previewCycle(db, window, config.cycle.batchSize));
  } finally {
    await pool.end();
  }
}

/** One row of `cycle status`. */
export interface CycleStatusRow {
  workflowId: string;
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT. */
  status: string;
  startTime: string;
  closeTime?: string;
  /** The schedule's action time, for cycles a schedule started (trigger and backfill included). */
  scheduledFor?: string;
  /** Search attributes the cycle upserts. */
  asOf?: string;
  outcome?: string;
  remindersSent?: number;
  /** A running cycle's progress (a partitioned one's with each running partition's counts). */
  progress?: Awaited<ReturnType<typeof cycleProgress>>;
  /** The counts of the result, for completed cycles. */
  result?: Pick<
    CycleResult,
    | 'status'
    | 'remindersSent'
    | 'ownersNotified'
    | 'skippedAlreadyMarked'
    | 'failedOwners'
    | 'documentsSeen'
    | 'pruned'
    | 'durationMs'
    | 'partitions'
  >;
}

/** A string literal for a visibility query. */
function queryString(value: string): string {
  return JSON.stringify(value);
}

/** The visibility query of `cycle status`: the job's cycles on its task queue, one row per cycle. */
function cyclesQuery(taskQueue: string): string {
  // A cycle that continued as new has one closed run per continuation; its last run stands for it.
  return `WorkflowType = ${queryString(WORKFLOW_TYPE)} AND TaskQueue = ${queryString(taskQueue)} AND ExecutionStatus != "ContinuedAsNew"`;
}

/**
 * The most recent cycles on `taskQueue` (running ones first, then by close time), with the search
 * attributes the cycle upserts and, for completed ones, the counts of their result. Visibility is
 * eventually consistent: a cycle that just started or ended may show up a moment later.
 */
export async function listCycles(
  client: Client,
  options: { taskQueue: string; limit: number },
): Promise<CycleStatusRow[]> {
  const rows: CycleStatusRow[] = [];
  for await (const wf of client.workflow.list({ query: cyclesQuery(options.taskQueue), pageSize: options.limit })) {
    const sa = wf.typedSearchAttributes;
    rows.push({
      workflowId: wf.workflowId,
      runId: wf.runId,
      status: wf.status.name,
      startTime: wf.startTime.toISOString(),
      closeTime: wf.closeTime?.toISOString(),
      scheduledFor: sa.get(TEMPORAL_SCHEDULED_START_TIME)?.toISOString(),
      asOf: sa.get(REMINDER_AS_OF)?.toISOString(),
      outcome: sa.get(REMINDER_OUTCOME),
      remindersSent: sa.get(REMINDERS_SENT),
    });
    if (rows.length >= options.limit) break;
  }
  await Promise.all(
    rows
      .filter((r) => r.status === 'COMPLETED')
      .map(async (r) => {
        const res = await client.workflow.getHandle<CycleWorkflow>(r.workflowId, r.runId).result();
        r.result = {
          status: res.status,
          remindersSent: res.remindersSent,
          ownersNotified: res.ownersNotified,
          skippedAlreadyMarked: res.skippedAlreadyMarked,
          failedOwners: res.failedOwners,
          documentsSeen: res.documentsSeen,
          pruned: res.pruned,
          durationMs: res.durationMs,
          ...(res.partitions ? { partitions: res.partitions } : {}),
        };
      }),
  );
  await Promise.all(
    rows
      .filter((r) => r.status === 'RUNNING')
      .map(async (r) => {
        // No worker polling, or a run handing over to the next: the row keeps its search attributes.
        r.progress = await cycleProgress(client.workflow.getHandle(r.workflowId, r.runId)).catch(() => undefined);
      }),
  );
  return rows;
}

/** Starts a cycle by hand; returns its ids, or its result when `wait`. */
export async function runManualCycle(
  client: Client,
  config: Config,
  options: { asOf?: string; wait?: boolean; partitions?: number; pagesPerClaim?: number },
): Promise<{ workflowId: string; runId: string; result?: CycleResult }> {
  const today = utcDate(new Date());
  if (options.asOf && options.asOf > today) {
    throw new Error(
      `--as-of ${options.asOf} is after today's UTC date (${today}): a cycle as of a later day would send reminders ` +
        'early and prune the markers of documents still in the window; nothing was started',
    );
  }
  const input: CycleInput = {
    ...(options.asOf ? { asOf: options.asOf } : {}),
    ...(options.partitions ? { partitions: options.partitions } : {}),
    ...(options.pagesPerClaim ? { pagesPerClaim: options.pagesPerClaim } : {}),
  };
  const day = options.asOf ?? today;
  const handle = await client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue: config.temporal.taskQueue,
    workflowId: `${MANUAL_WORKFLOW_ID_PREFIX}-${day}-${crypto.randomBytes(3).toString('hex')}`,
    args: [input],
    // As a scheduled cycle's: a cycle that can make no progress (pinned to a version whose workers are gone)
    // ends within a day instead of waiting for good.
    workflowExecutionTimeout: scheduledCycleTimeoutMs(config.schedule.intervalMs),
    ...manualCycleMetadata(options.asOf, config),
  });
  const ids = { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
  if (!options.wait) return ids;
  return { ...ids, result: await resultWithProgress(handle) };
}
