/**
 * What a path asked of PostgreSQL besides CPU: commits per database (the benchmark's, and on the production
 * profile Temporal's `temporal` and `temporal_visibility`, in a cluster of their own) and each cluster's WAL
 * fsyncs (`walFsyncs` the job's, `temporalWalFsyncs` Temporal's), and what autovacuum did in the job's
 * database meanwhile (`autovacuum`, and `vacuumsRunningAtEnd`). A durable commit
 * waits for one fsync (the dev stack's PostgreSQL runs with fsync off, the production profile's with it on),
 * so these say where the production profile's extra time waits, not only where its CPU goes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Measurement } from '../../harness/measure';

interface Activity {
  commits: Record<string, number>;
  walFsyncs?: number;
  autovacuum?: Record<string, TableMaintenance>;
}

/**
 * Autovacuum's work on one table of the benchmark's database. Its CPU is PostgreSQL's, counted in the path
 * it ran beside: a table that grows by millions of rows (the ledger on a big day) is vacuumed while the
 * path runs, and a run whose vacuum fell inside it spends more than one whose vacuum did not.
 */
export interface TableMaintenance {
  vacuums: number;
  vacuumMs: number;
  analyzes: number;
  analyzeMs: number;
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
  return {
    commits: Object.fromEntries(rows.map((r) => [r.datname, Number(r.n)])),
    walFsyncs: wal,
    autovacuum: await autovacuumWork(admin),
  };
}

/** Autovacuum's counts and times per table so far (the times from PostgreSQL 18 on; undefined before). */
async function autovacuumWork(admin: pg.Pool): Promise<Record<string, TableMaintenance> | undefined> {
  const rows = await admin
    .query<{ table: string; vacuums: string; vacuum_ms: number; analyzes: string; analyze_ms: number }>(
      `select schemaname || '.' || relname as table, autovacuum_count::text as vacuums,
              total_autovacuum_time as vacuum_ms, autoanalyze_count::text as analyzes,
              total_autoanalyze_time as analyze_ms
         from pg_stat_user_tables`,
    )
    .then((r) => r.rows)
    .catch(() => undefined);
  if (!rows) return undefined;
  return Object.fromEntries(
    rows.map((r) => [
      r.table,
      { vacuums: Number(r.vacuums), vacuumMs: r.vacuum_ms, analyzes: Number(r.analyzes), analyzeMs: r.analyze_ms },
    ]),
  );
}

/** Tables of the benchmark's database an autovacuum worker is vacuuming now: its work not yet in the counts. */
async function vacuumsRunning(admin: pg.Pool): Promise<string[]> {
  const { rows } = await admin
    .query<{ table: string }>(
      `select p.relid::regclass::text as table
         from pg_stat_progress_vacuum p join pg_stat_activity a using (pid)
        where p.datname = current_database() and a.backend_type = 'autovacuum worker'`,
    )
    .catch(() => ({ rows: [] as { table: string }[] }));
  return rows.map((r) => r.table).sort();
}

/** One normalised statement's share of a path's time in the job's database (pg_stat_statements). */
interface StatementCost {
  /** The statement as pg_stat_statements normalised it, white space collapsed, cut at 200 characters. */
  query: string;
  calls: number;
  rows: number;
  /** Execution time, waits for locks and for a core included: on a busy box, not CPU. */
  totalMs: number;
  /** Planning time (with `pg_stat_statements.track_planning`, which `--statements` sets; else 0). */
  planMs: number;
  sharedBlocksHit: number;
  sharedBlocksRead: number;
  sharedBlocksDirtied: number;
  walBytes: number;
}

/** Where a path spent the job's database's time: the sum over every statement, and the costliest. */
export interface StatementCosts {
  totalMs: number;
  calls: number;
  top: StatementCost[];
}

/** How many statements {@link topStatements} lists. */
const TOP_STATEMENTS = 12;

/** Empties pg_stat_statements (the whole server's), creating the extension in the benchmark's database first. */
async function resetStatements(admin: pg.Pool): Promise<void> {
  try {
    await admin.query('create extension if not exists pg_stat_statements');
    await admin.query('select pg_stat_statements_reset()');
  } catch (err) {
    throw new Error(
      `--statements: this PostgreSQL server does not collect statement statistics (${(err as Error).message}); ` +
        'let the benchmark start its own stack (unset STACK_DATABASE_ADMIN_URL), or add pg_stat_statements to ' +
        "the server's shared_preload_libraries",
    );
  }
}

/** The statements of the benchmark's database since {@link resetStatements}, costliest first. */
async function topStatements(admin: pg.Pool): Promise<StatementCosts> {
  const { rows } = await admin.query<{
    query: string;
    calls: string;
    rows: string;
    total_ms: number;
    plan_ms: number;
    hit: string;
    read: string;
    dirtied: string;
    wal: string;
  }>(
    `select left(regexp_replace(query, '\\s+', ' ', 'g'), 200) as query, calls::text, rows::text,
            total_exec_time as total_ms, total_plan_time as plan_ms, shared_blks_hit::text as hit, shared_blks_read::text as read,
            shared_blks_dirtied::text as dirtied, wal_bytes::text as wal
       from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc`,
  );
  const costs = rows.map((r) => ({
    query: r.query,
    calls: Number(r.calls),
    rows: Number(r.rows),
    totalMs: Number(r.total_ms.toFixed(1)),
    planMs: Number(r.plan_ms.toFixed(1)),
    sharedBlocksHit: Number(r.hit),
    sharedBlocksRead: Number(r.read),
    sharedBlocksDirtied: Number(r.dirtied),
    walBytes: Number(r.wal),
  }));
  return {
    totalMs: Number(costs.reduce((sum, c) => sum + c.totalMs, 0).toFixed(1)),
    calls: costs.reduce((sum, c) => sum + c.calls, 0),
    top: costs.slice(0, TOP_STATEMENTS),
  };
}

/** {@link StatementCosts} as lines a person reads: each statement's share of the time, calls, rows and blocks. */
export function describeStatements(costs: StatementCosts): string[] {
  const share = (ms: number) => (costs.totalMs > 0 ? `${((100 * ms) / costs.totalMs).toFixed(0)} %` : '-');
  return [
    `statements: ${(costs.totalMs / 1000).toFixed(2)} s in ${costs.calls} calls`,
    ...costs.top.map(
      (c) =>
        `  ${(c.totalMs / 1000).toFixed(2)} s (${share(c.totalMs)}), planning ${(c.planMs / 1000).toFixed(2)} s, ${c.calls} calls, ${c.rows} rows, ` +
        `blocks hit ${c.sharedBlocksHit} read ${c.sharedBlocksRead} dirtied ${c.sharedBlocksDirtied}, ` +
        `WAL ${(c.walBytes / 1e6).toFixed(1)} MB: ${c.query}`,
    ),
  ];
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
  { temporalAdmin, statements = false }: { temporalAdmin?: pg.Pool; statements?: boolean } = {},
): Promise<Measurement> {
  const read = async () => ({ job: await activity(admin), temporal: temporalAdmin && (await activity(temporalAdmin)) });
  if (statements) await resetStatements(admin);
  const before = await read();
  const m = await path();
  await sleep(STATS_FLUSH_MS);
  const after = await read();
  const top = statements ? await topStatements(admin) : undefined;
  const running = await vacuumsRunning(admin);
  const job = difference(before.job, after.job);
  const temporal = before.temporal && after.temporal ? difference(before.temporal, after.temporal) : undefined;
  const database = {
    commits: { ...job.commits, ...temporal?.commits },
    walFsyncs: job.walFsyncs,
    ...(temporal ? { temporalWalFsyncs: temporal.walFsyncs } : {}),
    ...(job.autovacuum ? { autovacuum: job.autovacuum } : {}),
    ...(running.length > 0 ? { vacuumsRunningAtEnd: running } : {}),
    ...(top ? { statements: top } : {}),
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
  return { commits, walFsyncs, autovacuum: maintenanceBetween(before.autovacuum, after.autovacuum) };
}

/** The tables autovacuum vacuumed or analysed between two readings, with what it spent on each. */
function maintenanceBetween(
  before: Record<string, TableMaintenance> | undefined,
  after: Record<string, TableMaintenance> | undefined,
): Record<string, TableMaintenance> | undefined {
  if (!before || !after) return undefined;
  const work: Record<string, TableMaintenance> = {};
  for (const [table, a] of Object.entries(after)) {
    const b = before[table] ?? { vacuums: 0, vacuumMs: 0, analyzes: 0, analyzeMs: 0 };
    const d = {
      vacuums: a.vacuums - b.vacuums,
      vacuumMs: Number((a.vacuumMs - b.vacuumMs).toFixed(1)),
      analyzes: a.analyzes - b.analyzes,
      analyzeMs: Number((a.analyzeMs - b.analyzeMs).toFixed(1)),
    };
    if (d.vacuums > 0 || d.analyzes > 0) work[table] = d;
  }
  return work;
}
