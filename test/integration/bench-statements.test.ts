/**
 * The benchmark's `--statements` (bench/workloads/cycle/database-activity.ts): a PostgreSQL server the stack
 * starts with pg_stat_statements preloaded, a path's statements read from it (that path's, none from before
 * it), and a clear refusal from a server that does not collect them.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { withDatabaseActivity, type StatementCosts } from '../../bench/workloads/cycle/database-activity';
import { measurement } from '../../bench/harness/measure';
import { startPostgres, type PostgresServer } from '../../scripts/stack/postgres';

jest.setTimeout(120_000);

let server: PostgresServer;
let pool: pg.Pool;

beforeAll(async () => {
  // startPostgres adopts a server these name; this file needs one of its own, started with the setting.
  const given = { MIGRATION_DATABASE_URL: process.env.MIGRATION_DATABASE_URL, DATABASE_URL: process.env.DATABASE_URL };
  delete process.env.MIGRATION_DATABASE_URL;
  delete process.env.DATABASE_URL;
  try {
    server = await startPostgres(() => {}, { settings: { shared_preload_libraries: 'pg_stat_statements' } });
  } finally {
    for (const [name, value] of Object.entries(given)) if (value !== undefined) process.env[name] = value;
  }
  pool = new pg.Pool({ connectionString: server.adminUrl, max: 2 });
});

afterAll(async () => {
  await pool?.end();
  await server?.stop();
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
  // What every measurement reports stays: the commits of the path's database.
  expect((m.extra!.database as { commits: Record<string, number> }).commits.postgres).toBeGreaterThanOrEqual(25);
});

test('without --statements nothing is read, and a server that does not preload pg_stat_statements is refused with what to do', async () => {
  const plain = await withDatabaseActivity(pool, insertingPath(pool, 0));
  expect(plain.extra!.database).not.toHaveProperty('statements');

  // The shared stack's server starts without the setting.
  const admin = new pg.Pool({ connectionString: process.env.STACK_DATABASE_ADMIN_URL, max: 1 });
  const name = `bench_statements_${crypto.randomBytes(4).toString('hex')}`;
  await admin.query(`create database ${name}`);
  const url = new URL(process.env.STACK_DATABASE_ADMIN_URL!);
  url.pathname = `/${name}`;
  const db = new pg.Pool({ connectionString: url.toString(), max: 2 });
  try {
    await db.query('create table bench_rows (id int primary key)');
    const run = jest.fn(insertingPath(db, 1));
    await expect(withDatabaseActivity(db, run, { statements: true })).rejects.toThrow(
      /^--statements: this PostgreSQL server does not collect statement statistics \(.*shared_preload_libraries.*\); let the benchmark start its own stack/,
    );
    expect(run).not.toHaveBeenCalled();
  } finally {
    await db.end();
    await admin.query(`drop database ${name} with (force)`);
    await admin.end();
  }
});
