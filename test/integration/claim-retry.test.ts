/**
 * A claim's retry (docs/DESIGN.md#a-retry) on a real PostgreSQL, run in the SDK's activity context: it counts
 * what its earlier attempts committed from their receipts and claims only what they left, whatever lies in its
 * pages' span; an attempt that lost its activity stops between pages, and once a later attempt has started
 * an earlier one commits nothing.
 */
import crypto from 'node:crypto';
import { CancelledFailure } from '@temporalio/activity';
import type pg from 'pg';
import pino from 'pino';
import { createActivities, type ClaimPageInput, type ClaimPageResult } from '../../src/activities';
import { selectPageEnd } from '../../src/activities/claim/sql/pages';
import { activityEnvironment, claimBeginOf, observedPool, runActivity } from '../support/claims';
import { outbox, seedStragglerDay, forgetCycles } from '../support/data';
import { testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';
const WINDOW = { asOfDate: AS_OF_DATE, thresholdsDays: [30, 7, 1, 0], retentionDays: 90 };
const BATCH = 4;

const stack = useIntegration('claim-retry');

function input(cycleId: string, page: number): ClaimPageInput {
  return {
    window: WINDOW,
    cycleId,
    jobRunId: 'claim-retry-test',
    page,
    batchSize: BATCH,
    partition: { index: 0, count: 1 },
    asOf: `${AS_OF_DATE}T03:00:00.000Z`,
    ownerConcurrency: 500,
    lastAttempt: 10,
    pages: 8,
  };
}

const activitiesOn = (pool: pg.Pool) =>
  createActivities({ pool, logger: pino({ level: 'silent' }), config: testConfig() });

/** Attempt `attempt` of activity `claim-<page>` of run `run-1` on `pool`. */
const claimPage = (pool: pg.Pool, request: ClaimPageInput, attempt: number) =>
  runActivity(activitiesOn(pool).claimPage, request, {
    attempt,
    activityId: `claim-${request.page}`,
    workflowExecution: { workflowId: 'claim-retry', runId: 'run-1' },
  });

/** What a partition's claims add to a cycle's counts, as the workflow adds them. */
interface PartitionCounts {
  pages: number;
  documentsSeen: number;
  owners: number;
  ownersProcessed: number;
  ownersNotified: number;
  remindersSent: number;
  markersInserted: number;
  skippedAlreadyMarked: number;
  ownersBusy: number;
  failedOwners: number;
}

/**
 * A partition's claims one after another, as the workflow runs them: each activity retried (attempt + 1, same
 * activity) while it fails, on `poolOf(attempt)`; the counts of the attempts that returned.
 */
async function claimPartition(cycleId: string, poolOf: (attempt: number) => pg.Pool): Promise<PartitionCounts> {
  const counts: PartitionCounts = {
    pages: 0,
    documentsSeen: 0,
    owners: 0,
    ownersProcessed: 0,
    ownersNotified: 0,
    remindersSent: 0,
    markersInserted: 0,
    skippedAlreadyMarked: 0,
    ownersBusy: 0,
    failedOwners: 0,
  };
  for (let page = 1; ;) {
    let r: ClaimPageResult | undefined;
    for (let attempt = 1; !r; attempt += 1) {
      if (attempt > 3) throw new Error(`page ${page}: three attempts failed`);
      r = await claimPage(poolOf(attempt), input(cycleId, page), attempt).catch(() => undefined);
    }
    counts.pages += r.pagesClaimed;
    counts.documentsSeen += r.documentCount;
    counts.owners += r.owners;
    counts.ownersProcessed += r.ownersProcessed;
    counts.ownersNotified += r.ownersNotified;
    counts.remindersSent += r.remindersSent;
    counts.markersInserted += r.markersInserted;
    counts.skippedAlreadyMarked += r.skippedAlreadyMarked;
    counts.ownersBusy += r.ownersFoundBusy;
    counts.failedOwners += r.failed.length;
    if (!r.hasNext) return counts;
    page += r.pagesClaimed;
  }
}

/** Owners a statement's result says its transaction locked: the page statement's, or a lock statement's. */
function ownersLocked(text: string, result: pg.QueryResult): number {
  if (/^\s*with page as materialized/.test(text))
    return result.rows.filter((r: { locked?: boolean }) => r.locked).length;
  if (/pg_try_advisory_xact_lock|wait_for_xact_locks/.test(text)) return result.rows.length;
  return 0;
}

/** The worker's pool, throwing at the BEGIN of attempt 1's `n`-th claim transaction: its worker dies there. */
function dyingAtClaim(n: number): pg.Pool {
  let claims = 0;
  return observedPool(stack.db.worker, (text) => {
    if (claimBeginOf(text)?.attempt !== 1) return;
    claims += 1;
    if (claims === n) throw new Error(`attempt 1 died before its claim transaction ${n}`);
  });
}

test.each([
  ['after page 1 committed', 2],
  ['after page 3 committed', 4],
])(
  'a straggler below a reminded window, the worker dying %s: the retry locks only the owners of the pages left, and the counts equal the day without the fault',
  async (_, dieAt) => {
    // 400 owners' documents expired 10 to 80 days ago, reminded at every threshold; one straggler expired 85 days
    // ago with no marker (due at 0: page 1's first row); 20 documents due in 5 days. Pages of 4: 6 pages.
    await seedStragglerDay(stack.db.admin, AS_OF_DATE, { reminded: 400, due: 20 });
    const clean = await claimPartition(crypto.randomUUID(), () => stack.db.worker);
    expect(clean).toEqual(
      expect.objectContaining({ pages: 6, documentsSeen: 21, owners: 21, ownersProcessed: 21, remindersSent: 21 }),
    );
    await forgetCycles(stack.db.admin);

    let lockedByRetries = 0;
    const retries = observedPool(
      stack.db.worker,
      () => undefined,
      (text, _values, result) => {
        lockedByRetries += ownersLocked(text, result);
      },
    );
    const cycleId = crypto.randomUUID();
    const faulty = await claimPartition(cycleId, (attempt) => (attempt === 1 ? dyingAtClaim(dieAt) : retries));

    expect(faulty).toEqual(clean);
    // Pages 1 to dieAt - 1 came from their receipts; the retry locked the owners of the pages after them, one each.
    expect(lockedByRetries).toBe(21 - 4 * (dieAt - 1));
    const events = await outbox(stack.db.admin);
    expect(events).toHaveLength(21);
    expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(21);
    const { rows } = await stack.db.admin.query<{ attempt: number; parts: number }>(
      `select attempt, count(*)::int as parts from profile.document_expiry_reminder_claim_receipts
        where cycle_id = $1 group by attempt order by attempt`,
      [cycleId],
    );
    expect(rows).toEqual([
      { attempt: 1, parts: dieAt - 1 },
      { attempt: 2, parts: 6 - (dieAt - 1) },
    ]);
  },
  60_000,
);

test('an attempt cancelled (its activity timed out) stops before its next page: the page in flight commits, the next is never read', async () => {
  await seedStragglerDay(stack.db.admin, AS_OF_DATE, { reminded: 0, due: 20 });
  const cycleId = crypto.randomUUID();
  const env = activityEnvironment({
    attempt: 1,
    activityId: 'claim-1',
    workflowExecution: { workflowId: 'w', runId: 'run-1' },
  });
  const heartbeats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => heartbeats.push(d));
  let claims = 0;
  const pool = observedPool(stack.db.worker, (text) => {
    if (!claimBeginOf(text)) return;
    claims += 1;
    // As the server's answer to a heartbeat says once the attempt timed out.
    if (claims === 2) env.cancel('TIMED_OUT');
  });

  const err = await env.run(activitiesOn(pool).claimPage, input(cycleId, 1)).catch((e: unknown) => e);

  expect(err).toBeInstanceOf(CancelledFailure);
  expect(claims).toBe(2);
  expect(await selectPageEnd(stack.db.admin, cycleId, 2)).toBeDefined();
  expect(await selectPageEnd(stack.db.admin, cycleId, 3)).toBeUndefined();
  expect(heartbeats).toEqual(expect.arrayContaining([{ page: 1 }, { page: 2 }]));
  expect(await outbox(stack.db.admin)).toHaveLength(8);
});

test('once a later attempt has started, an earlier one still running commits nothing: its next transaction fails, and the later one reports the day', async () => {
  await seedStragglerDay(stack.db.admin, AS_OF_DATE, { reminded: 50, due: 20 });
  const cycleId = crypto.randomUUID();
  // Attempt 1 commits page 1, then stalls before page 2 (its heartbeat times out: Temporal starts attempt 2).
  let wake!: () => void;
  const stalled = new Promise<void>((resolve) => (wake = resolve));
  let stalling!: () => void;
  const atPage2 = new Promise<void>((resolve) => (stalling = resolve));
  let claims = 0;
  const slow = observedPool(stack.db.worker, async (text) => {
    if (!claimBeginOf(text)) return;
    claims += 1;
    if (claims !== 2) return;
    stalling();
    await stalled;
  });
  const first = claimPage(slow, input(cycleId, 1), 1).then(
    () => 'returned',
    (e: { type?: string }) => e.type,
  );
  await atPage2;

  const second = await claimPage(stack.db.worker, input(cycleId, 1), 2);
  wake();

  expect(await first).toBe('AttemptOver');
  expect(second).toEqual(
    expect.objectContaining({
      pagesClaimed: 6,
      documentCount: 21,
      ownersProcessed: 21,
      remindersSent: 21,
      hasNext: false,
    }),
  );
  const { rows } = await stack.db.admin.query<{ attempt: number; parts: string[] }>(
    `select attempt, array_agg(part order by part) as parts from profile.document_expiry_reminder_claim_receipts
      where cycle_id = $1 group by attempt order by attempt`,
    [cycleId],
  );
  expect(rows).toEqual([
    { attempt: 1, parts: ['p1'] },
    { attempt: 2, parts: ['p2', 'p3', 'p4', 'p5', 'p6'] },
  ]);
  expect(await outbox(stack.db.admin)).toHaveLength(21);
});
