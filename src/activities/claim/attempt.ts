/**
 * A running attempt of a claiming activity (`claimPage`, `remindOwners`): its key, its journal, its heartbeat,
 * and how its transactions open. An attempt raises the activity's attempt in the database before anything
 * else (migration 021), reads what the attempts before it committed, and each of its transactions holds that
 * raised attempt until its commit: once a later attempt has started, this one commits nothing more.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import { withTransaction } from '../../db/pool';
import type { Logger } from '../../observability/logger';
import type { WorkerMetrics } from '../../observability/metrics';
import { currentTraceparent } from '../../observability/tracing';
import { Journal } from './journal';
import type { ClaimParams } from './sql/claim-owners';
import { holdAttemptSql, raiseAttempt, type AttemptKey } from './sql/attempts';
import { selectReceipts } from './sql/receipts';

/** What the worker gives the claim: its pool, its log and its metrics. */
export interface ClaimDeps {
  pool: pg.Pool;
  logger: Logger;
  metrics?: WorkerMetrics;
}

/** How often a running attempt tells Temporal its worker is alive (the activities' heartbeat timeout is 10 s). */
const HEARTBEAT_EVERY_MS = 2_000;

/** A running attempt: everything its transactions share. */
export interface Attempt {
  deps: ClaimDeps;
  log: Logger;
  key: AttemptKey;
  journal: Journal;
  /** The claim's values but its owners: the window, AsOf, the correlation id, who queues. */
  claim: Omit<ClaimParams, 'ownerUserIds'>;
  /** The attempt the workflow allows last: on it, a failing group's owners are claimed alone. */
  isLast: boolean;
  /** Tells Temporal the attempt is alive; throws when it has lost its activity (timed out, cancelled). */
  checkpoint(details?: unknown): void;
  /** Runs `fn` in a transaction of this attempt, opened by `begin` and holding the attempt. */
  transaction<T>(fn: (tx: pg.PoolClient) => Promise<T>, begin?: string): Promise<T>;
}

const BEGIN_READ_COMMITTED = 'BEGIN ISOLATION LEVEL READ COMMITTED';

/**
 * Starts attempt `info.attempt` of the current activity: raises it in the database (waiting for a transaction an
 * earlier attempt still has open), reads the receipts of the attempts before it, and heartbeats until `stop`.
 * @param cycleId the partition's first run id, which keys the activity's receipts.
 */
export async function startAttempt(
  deps: ClaimDeps,
  input: Pick<ClaimParams, 'asOfDate' | 'thresholdsDays' | 'retentionDays' | 'asOf' | 'jobRunId'> & {
    cycleId: string;
    lastAttempt: number;
  },
): Promise<Attempt & { stop: () => void }> {
  const ctx = Context.current();
  const { attempt, activityId, workflowExecution, workflowType } = ctx.info;
  const key: AttemptKey = {
    cycleId: input.cycleId,
    queuedBy: `${workflowExecution?.runId ?? workflowType}/${activityId}`,
    attempt,
  };
  const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    if (!(await raiseAttempt(deps.pool, key))) {
      throw ApplicationFailure.nonRetryable(
        `attempt ${attempt} of ${key.queuedBy} started after a later one`,
        'AttemptOver',
      );
    }
    const earlier = attempt > 1 ? await selectReceipts(deps.pool, key) : [];
    const { asOfDate, thresholdsDays, retentionDays, asOf, jobRunId } = input;
    return {
      deps,
      log: deps.logger.child({ component: 'activities' }),
      key,
      journal: new Journal(earlier),
      claim: {
        asOfDate,
        thresholdsDays,
        retentionDays,
        asOf,
        jobRunId,
        queuedBy: key.queuedBy,
        traceContext: currentTraceparent(),
      },
      isLast: attempt >= input.lastAttempt,
      checkpoint(details?: unknown) {
        ctx.heartbeat(details);
        // Timed out (its heartbeat or start-to-close), or its worker is shutting down: a later attempt takes over.
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
      },
      transaction: (fn, begin = BEGIN_READ_COMMITTED) =>
        withTransaction(deps.pool, fn, `${begin}; ${holdAttemptSql(key)}`),
      stop: () => clearInterval(beat),
    };
  } catch (err) {
    clearInterval(beat);
    throw err;
  }
}
