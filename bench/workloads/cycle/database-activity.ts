/**
 * What a path asked of PostgreSQL besides CPU: commits per database (the benchmark's, and on the production
 * profile Temporal's `temporal` and `temporal_visibility`, in a cluster of their own) and each cluster's WAL
 * fsyncs (`walFsyncs` the job's, `temporalWalFsyncs` Temporal's). A durable commit
 * waits for one fsync (the dev stack's PostgreSQL runs with fsync off, the production profile's with it on),
 * so these say where the production profile's extra time waits, not only where its CPU goes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Measurement } from '../../harness/measure';

interface Activity {
  commits: Record<string, number>;
  walFsyncs?: number;
}

async function activity(admin: pg.Pool): Promise<Activity> {
  const { rows } = await admin.query<{ datname: string; n: string }>(
    'select datname, xact_commit::text as n from pg_stat_database where datname is not null',
  );
  // pg_stat_io counts WAL I/O from PostgreSQL 18 on; an older server has no such rows.
  const wal = await admin
    .query<{ n: string | null }>("select sum(fsyncs)::text as n from pg_stat_io where object = 'wal'")
    .then((r) => (r.rows[0].n === null ? undefined : Number(r.rows[0].n)))
    .catch(() => undefined);
  return { commits: Object.fromEntries(rows.map((r) => [r.datname, Number(r.n)])), walFsyncs: wal };
}

/** Other backends publish their counters when idle for a second; wait that long before the second reading. */
const STATS_FLUSH_MS = 1_500;

/**
 * Runs a path and adds `extra.database`: the commits of each database that committed anything during it, and
 * the WAL fsyncs. Read before and after the path's own clock, so the readings are in no timing.
 */
export async function withDatabaseActivity(
  admin: pg.Pool,
  path: () => Promise<Measurement>,
  temporalAdmin?: pg.Pool,
): Promise<Measurement> {
  const read = async () => ({ job: await activity(admin), temporal: temporalAdmin && (await activity(temporalAdmin)) });
  const before = await read();
  const m = await path();
  await sleep(STATS_FLUSH_MS);
  const after = await read();
  const job = difference(before.job, after.job);
  const temporal = before.temporal && after.temporal ? difference(before.temporal, after.temporal) : undefined;
  const database = {
    commits: { ...job.commits, ...temporal?.commits },
    walFsyncs: job.walFsyncs,
    ...(temporal ? { temporalWalFsyncs: temporal.walFsyncs } : {}),
  };
  return { ...m, extra: { ...m.extra, database } };
}

/** The commits of each database that committed anything between two readings, and the fsyncs between them. */
function difference(before: Activity, after: Activity): Activity {
  const commits: Record<string, number> = {};
  for (const [db, n] of Object.entries(after.commits)) {
    const d = n - (before.commits[db] ?? 0);
    if (d > 0) commits[db] = d;
  }
  const walFsyncs =
    after.walFsyncs !== undefined && before.walFsyncs !== undefined ? after.walFsyncs - before.walFsyncs : undefined;
  return { commits, walFsyncs };
}
