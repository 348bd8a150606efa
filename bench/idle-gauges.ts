/**
 * `npx tsx bench/idle-gauges.ts [--revision <dir>]… [--minutes 10] [--interval 15] [--due 330000] [--outbox 3000]`
 *
 * Issue 19 item 5: PostgreSQL CPU of an idle worker and relay whose /metrics are scraped every 15 s.
 * Each `--revision` (a checkout with node_modules, e.g. ~/.cache/expiry-reminder/bench-compare/<sha>;
 * default this tree) gets its own PostgreSQL cluster, so its CPU is counted alone, migrated by its own
 * migrations, with the same data: `--due` documents in the window and `--outbox` parked rows (unpublished,
 * so the backlog count reads them, but left alone by an idle relay). Its `src/worker.ts` and `src/relay.ts`
 * run under its own tsx. Revisions run side by side on one Temporal server and Kafka broker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startStack } from '../scripts/stack';
import { startPostgres } from '../scripts/stack/postgres';
import { freePort } from '../src/observability/ports';
import { clusterCpuSeconds, processCpuSeconds } from './harness/measure';
import { waitForPoller } from './harness/worker';
import { seedOutbox } from './workloads/relay/seed';
import { seedDocuments } from './seed';
import { writeBenchFile } from './report';
import { Client, Connection } from '@temporalio/client';

const say = (line: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

type Run = Awaited<ReturnType<typeof prepare>>;

/** The revision's short commit: the exported copies are named after it; this tree is `git rev-parse`d. */
function labelOf(revision: string): string {
  const base = path.basename(revision);
  if (/^[0-9a-f]{40}$/.test(base)) return base.slice(0, 10);
  const r = spawnSync('git', ['-C', revision, 'rev-parse', '--short=10', 'HEAD']);
  return String(r.stdout).trim() || base;
}

/** Starts `entry` of `revision` under that revision's tsx, its /metrics on a free port, its output kept. */
async function startEntry(revision: string, entry: string, env: Record<string, string>, output: string[]) {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(revision, 'src', `${entry}.ts`)], {
    cwd: revision,
    env: { ...process.env, LOG_LEVEL: 'warn', METRICS_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (c: Buffer) => output.push(`[${entry}] ${c.toString()}`);
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return { child, port, stop };
}

async function scrape(port: number): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
  await res?.text();
  return res?.ok === true;
}

async function prepare(
  revision: string,
  adminUrl: string,
  stackEnv: Record<string, string>,
  o: { due: number; outbox: number; asOf: string },
  temporal: { client: Client; namespace: string },
) {
  const label = labelOf(revision);
  // The revision's own migrations, through its own helper: its worker and relay check the schema they expect.
  const { createMigratedDatabase } = (await import(
    path.join(revision, 'scripts', 'stack', 'database.ts')
  )) as typeof import('../scripts/stack/database');
  const database = await createMigratedDatabase(adminUrl, { prefix: 'bench_idle_gauges' });
  const admin = new pg.Pool({ connectionString: database.ownerUrl, max: 2 });
  const { rows } = await admin.query<{ pid: number }>('select pg_backend_pid() as pid');
  const postmasterPid = Number(fs.readFileSync(`/proc/${rows[0].pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
  // A thousand owners' documents outside the window, and the due ones inside it, three to an owner.
  const seed = { documents: 1000, owners: 1000, dueDocuments: o.due, dueOwners: Math.ceil(o.due / 3) };
  await seedDocuments(admin, { ...seed, asOfDate: o.asOf });
  await seedOutbox(admin, o.outbox, 'bench-idle-gauges');
  await admin.query(
    `update profile.outbox_messages set parked_at = now(), rejections = 5, last_error = 'bench: parked' where published_at is null`,
  );
  await admin.query('vacuum analyze');
  await admin.end();
  const taskQueue = `bench-idle-gauges-${label}`;
  const output: string[] = [];
  const workerEnv = { ...stackEnv, DATABASE_URL: database.workerUrl, TEMPORAL_TASK_QUEUE: taskQueue };
  const worker = await startEntry(revision, 'worker', workerEnv, output);
  const relay = await startEntry(revision, 'relay', { ...stackEnv, DATABASE_URL: database.relayUrl }, output);
  const stop = async () => {
    await Promise.all([worker.stop(), relay.stop()]);
    if (process.exitCode) process.stderr.write(output.join('').slice(-4000));
    await database.drop().catch(() => {});
  };
  try {
    await waitForPoller(temporal.client, temporal.namespace, taskQueue);
    for (const port of [worker.port, relay.port]) {
      for (let i = 0; !(await scrape(port)); i++) {
        if (i > 240) throw new Error(`no /metrics on ${port} within 120 s`);
        await sleep(500);
      }
    }
  } catch (err) {
    process.exitCode = 1;
    await stop();
    throw err;
  }
  say(`${label}: seeded; worker ${worker.child.pid} and relay ${relay.child.pid} up`);
  return { label, postmasterPid, worker, relay, scrapes: 0, failures: 0, stop };
}

async function main(): Promise<void> {
  const { values: a } = parseArgs({
    options: {
      revision: { type: 'string', multiple: true },
      minutes: { type: 'string', default: '10' },
      interval: { type: 'string', default: '15' },
      due: { type: 'string', default: '330000' },
      outbox: { type: 'string', default: '3000' },
    },
  });
  const revisions = (a.revision ?? [path.resolve(__dirname, '..')]).map((r) => path.resolve(r));
  const o = { due: Number(a.due), outbox: Number(a.outbox), asOf: new Date().toISOString().slice(0, 10) };
  const windowMs = Number(a.minutes) * 60_000;
  const intervalMs = Number(a.interval) * 1000;
  const stack = await startStack({ ui: false, log: (l) => say(`[stack] ${l}`) });
  const clusters = [stack.postgres];
  const runs: Run[] = [];
  const connection = await Connection.connect({ address: stack.env.TEMPORAL_ADDRESS });
  try {
    while (clusters.length < revisions.length) clusters.push(await startPostgres((l) => say(`[stack] ${l}`)));
    const temporal = { client: new Client({ connection }), namespace: 'default' };
    const { TEMPORAL_ADDRESS, KAFKA_BROKERS } = stack.env;
    const env = { TEMPORAL_ADDRESS, KAFKA_BROKERS };
    for (const [i, rev] of revisions.entries()) runs.push(await prepare(rev, clusters[i].adminUrl, env, o, temporal));
    await sleep(15_000); // start-up work settles before the window opens
    const cpu = () =>
      runs.map((r) => ({
        pg: clusterCpuSeconds(r.postmasterPid),
        worker: processCpuSeconds(r.worker.child.pid!),
        relay: processCpuSeconds(r.relay.child.pid!),
      }));
    say(`window: ${a.minutes} min, both /metrics of each revision every ${a.interval} s`);
    const before = cpu();
    const t0 = performance.now();
    while (performance.now() - t0 < windowMs) {
      const tick = performance.now();
      await Promise.all(
        runs.map(async (r) => {
          const ok = await Promise.all([scrape(r.worker.port), scrape(r.relay.port)]);
          r.scrapes += 1;
          r.failures += ok.filter((x) => !x).length;
        }),
      );
      await sleep(Math.max(0, Math.min(intervalMs - (performance.now() - tick), windowMs - (performance.now() - t0))));
    }
    const after = cpu();
    const seconds = (performance.now() - t0) / 1000;
    const rows = runs.map((r, i) => {
      const d = (k: 'pg' | 'worker' | 'relay') => Number((after[i][k] - before[i][k]).toFixed(2));
      return {
        revision: r.label,
        scrapes: r.scrapes,
        failedScrapes: r.failures,
        postgresCpuSeconds: d('pg'),
        postgresCpuPerScrape: Number((d('pg') / r.scrapes).toFixed(3)),
        workerCpuSeconds: d('worker'),
        relayCpuSeconds: d('relay'),
      };
    });
    console.table(rows);
    const summary = { date: o.asOf, seconds: Math.round(seconds), data: o, revisions, rows };
    writeBenchFile(path.join('results', 'idle-gauges.json'), `${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    for (const r of runs.reverse()) await r.stop();
    await connection.close();
    for (const c of clusters.slice(1)) await c.stop().catch(() => {});
    await stack.stop();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`idle-gauges failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
