/**
 * The two baselines the Temporal path is compared with, on the same data and settings:
 *   A  what a cron job would do: one transaction per owner (`remindOwnersInTransaction` for that owner) from a plain
 *      Node loop, the page's owners at most `ownerConcurrency` in flight over a pool of the worker's size;
 *   B  what the database alone can do: one set-based statement per page doing the whole claim
 *      (bench/claim-page.ts), one at a time, no locks;
 *   B∥ the same statements over K disjoint id ranges in K sessions at once (K = the cycle's partitions): what
 *      the database alone can do with every core.
 */
import type pg from 'pg';
import { idRanges, selectCandidatePage, type IdRange, type PageCursor } from '../../../src/db/candidates';
import { createPool, withTransaction } from '../../../src/db/pool';
import { claimLockedOwners } from '../../../src/activities/claim/sql/claim-owners';
import { lockFreeOwners } from '../../../src/activities/claim/sql/lock-owners';
import { claimPage, type ClaimPageResult } from '../../claim-page';
import { cpuDelta, cpuSnapshot, measurement, type Measurement } from '../../harness/measure';
import { asOfInstant, type CycleSettings } from './settings';

interface Tally {
  pages: number;
  owners: number;
  reminders: number;
  seen: number;
}

/**
 * Runs a baseline over its own pool, timed, with the CPU of every process group: `claimAll` pages
 * through the window and adds to the tally.
 */
async function timedBaseline(
  name: string,
  workerUrl: string,
  poolSize: number,
  claimAll: (pool: pg.Pool, tally: Tally) => Promise<void>,
): Promise<Measurement> {
  const pool = createPool({
    connectionString: workerUrl,
    max: poolSize,
    applicationName: `bench-baseline-${name.slice(0, 1).toLowerCase()}`,
  });
  const tally: Tally = { pages: 0, owners: 0, reminders: 0, seen: 0 };
  const cpu0 = cpuSnapshot();
  let cpu1 = cpu0;
  const t0 = performance.now();
  try {
    await claimAll(pool, tally);
  } finally {
    cpu1 = cpuSnapshot(); // before the pool ends: an exited backend's CPU time is gone from /proc
    await pool.end();
  }
  const seconds = (performance.now() - t0) / 1000;
  return measurement(name, seconds, tally.owners, tally.seen, tally.reminders, tally.pages, {
    cpu: cpuDelta(cpu0, cpu1, seconds),
  });
}

/** Baseline A: the per-owner transactions from a plain loop, same pool size and concurrency. */
export function baselineA(workerUrl: string, s: CycleSettings): Promise<Measurement> {
  return timedBaseline('A: node loop, per-owner tx', workerUrl, s.poolSize, async (pool, tally) => {
    let cursor: PageCursor | null = null;
    for (;;) {
      const rows = await selectCandidatePage(pool, s.window, cursor, s.batchSize);
      tally.pages += 1;
      tally.seen += rows.length;
      const ownerUserIds = [...new Set(rows.map((r) => r.owner_user_id))];
      const inFlight = new Set<Promise<void>>();
      for (const ownerUserId of ownerUserIds) {
        while (inFlight.size >= s.ownerConcurrency) await Promise.race(inFlight);
        const run: Promise<void> = withTransaction(pool, async (tx) =>
          claimLockedOwners(tx, {
            ...s.window,
            ownerUserIds: await lockFreeOwners(tx, [ownerUserId]),
            asOf: asOfInstant(s),
            jobRunId: 'bench-baseline-a',
          }),
        )
          .then(({ remindersSent }) => {
            tally.owners += 1;
            tally.reminders += remindersSent;
          })
          .finally(() => inFlight.delete(run));
        inFlight.add(run);
      }
      await Promise.all(inFlight);
      if (rows.length < s.batchSize) break;
      const last = rows[rows.length - 1];
      cursor = { expiresAt: last.expires_at, id: last.id };
    }
  });
}

/** Baseline B: one claim statement per page, over a single connection. */
export function baselineB(workerUrl: string, s: CycleSettings): Promise<Measurement> {
  return timedBaseline('B: one SQL statement per page', workerUrl, 1, (pool, tally) =>
    claimRange(pool, s, undefined, tally, 'bench-baseline-b'),
  );
}

/**
 * Baseline B∥: baseline B's statement over `k` disjoint id ranges, one session each, all at once. Without
 * owner locks, two sessions can claim one owner's documents (they lie in both ranges) and meet in the ledger's
 * unique index: the statement inserts its markers in one order, so one waits for the other's commit and finds
 * them there (a deadlock, which PostgreSQL breaks only after a second, would fail the run).
 */
export function baselineParallelB(workerUrl: string, s: CycleSettings, k: number): Promise<Measurement> {
  const name = `B∥: one SQL statement per page in ${k} session${k === 1 ? '' : 's'}`;
  return timedBaseline(name, workerUrl, k, async (pool, tally) => {
    await Promise.all(idRanges(k).map((range) => claimRange(pool, s, range, tally, 'bench-baseline-b-parallel')));
  });
}

/**
 * One session of B's pages, over `range` (B∥) or every id (B), added to `tally`.
 */
async function claimRange(
  pool: pg.Pool,
  s: CycleSettings,
  range: IdRange | undefined,
  tally: Tally,
  jobRunId: string,
): Promise<void> {
  let cursor: PageCursor | null = null;
  for (;;) {
    const r: ClaimPageResult = await claimPage(pool, s.window, cursor, s.batchSize, asOfInstant(s), jobRunId, range);
    tally.pages += 1;
    tally.owners += r.owners;
    tally.reminders += r.remindersSent;
    tally.seen += r.documentCount;
    if (!r.next) break;
    cursor = r.next;
  }
}
