/**
 * `npm run bench -- [--workload smoke|backlog|steady|moonshot|idle] [--documents N --owners M --due K --due-owners O]
 *                   [--batch-size B] [--owner-concurrency C] [--owner-group-size G] [--pool-size P]
 *                   [--only temporal,a,b,repeat] [--worker dist|src] [--keep-db]`
 *
 * The benchmark of issue 7. Starts the local stack (PostgreSQL + Temporal dev server, no UI, no Kafka)
 * or uses STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS when set; creates a fresh migrated database, seeds
 * the workload (bench/seed.ts), then on the same data, emptying the ledger and outbox between runs:
 *   temporal   the full cycle: a worker process as deployed (`npm run build`, then `node dist/worker.js`
 *              with the Dockerfile's heap flags; `--worker src` runs it under tsx) and a cycle started
 *              with client.workflow.start (asOf fixed); wall time start → result, history events per run,
 *              the worker's peak RSS (VmRSS sampled during the cycle, and VmHWM of the process);
 *   a          baseline A: what a cron job would do, one transaction per owner (claimOwners for one
 *              owner in withTransaction) from a plain Node loop: page, then the page's owners
 *              ≤ ownerConcurrency in flight over the same pool;
 *   b          baseline B: one set-based statement per page doing the whole claim (bench/claim-page.ts);
 *   repeat     the Temporal cycle again over the claimed data (nothing due: the "idle" cycle); after a
 *              full cycle, once right after it and once after VACUUM of the ledger.
 * Prints a table and writes bench/results/<workload>.json (and bench/explain-<workload>.txt).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import type pg from 'pg';
import { claimPage } from '../bench/claim-page';
import { seedDocuments } from '../bench/seed';
import { selectCandidatePage, type CandidateWindow, type PageCursor } from '../src/db/candidates';
import { runMigrations } from '../src/db/migrate';
import { createPool, withTransaction, type Queryable } from '../src/db/pool';
import { claimOwners } from '../src/db/reminders';
import { WORKER_ROLE, WORKFLOW_TYPE } from '../src/domain/names';
import { LOCAL_ROLE_PASSWORDS, startStack, type Stack } from './stack';
import { createDatabase, databaseUrl } from './stack/postgres';
import type { CycleWorkflow } from '../src/workflows';

const WORKLOADS: Record<string, { documents: number; owners: number; due: number; dueOwners: number }> = {
  smoke: { documents: 1_500, owners: 600, due: 500, dueOwners: 200 },
  backlog: { documents: 100_000, owners: 50_000, due: 100_000, dueOwners: 50_000 },
  steady: { documents: 1_000_000, owners: 400_000, due: 10_000, dueOwners: 8_000 },
  moonshot: { documents: 1_000_000, owners: 500_000, due: 1_000_000, dueOwners: 500_000 },
  idle: { documents: 2_000_000, owners: 600_000, due: 0, dueOwners: 0 },
};

const { values: a } = parseArgs({
  options: {
    workload: { type: 'string', default: 'smoke' },
    documents: { type: 'string' },
    owners: { type: 'string' },
    due: { type: 'string' },
    'due-owners': { type: 'string' },
    'batch-size': { type: 'string', default: '500' },
    'owner-concurrency': { type: 'string', default: '400' },
    'owner-group-size': { type: 'string', default: '100' },
    'pool-size': { type: 'string', default: '20' },
    only: { type: 'string', default: 'temporal,a,b,repeat' },
    'as-of': { type: 'string', default: new Date().toISOString().slice(0, 10) },
    'keep-db': { type: 'boolean', default: false },
    worker: { type: 'string', default: 'dist' },
  },
});

const say = (line: string) => process.stdout.write(`${line}\n`);
const root = path.resolve(__dirname, '..');
const base = WORKLOADS[a.workload!];
if (!base) throw new Error(`unknown workload ${a.workload}; one of ${Object.keys(WORKLOADS).join(', ')}`);
const W = {
  documents: Number(a.documents ?? base.documents),
  owners: Number(a.owners ?? base.owners),
  due: Number(a.due ?? base.due),
  dueOwners: Number(a['due-owners'] ?? base.dueOwners),
};
const BATCH = Number(a['batch-size']);
const CONCURRENCY = Number(a['owner-concurrency']);
const GROUP = Number(a['owner-group-size']);
const POOL = Number(a['pool-size']);
const AS_OF = a['as-of']!;
const THRESHOLDS = [30, 7, 1, 0];
const RETENTION = 90;
const WINDOW: CandidateWindow = { asOfDate: AS_OF, thresholdsDays: THRESHOLDS, retentionDays: RETENTION };
const only = new Set(a.only!.split(','));

interface Measurement {
  path: string;
  seconds: number;
  owners: number;
  documents: number;
  reminders: number;
  pages: number;
  ownersPerSecond: number;
  documentsPerSecond: number;
  extra?: Record<string, unknown>;
}

function measurement(
  p: string,
  seconds: number,
  owners: number,
  documents: number,
  reminders: number,
  pages: number,
  extra?: Record<string, unknown>,
): Measurement {
  return {
    path: p,
    seconds: Number(seconds.toFixed(3)),
    owners,
    documents,
    reminders,
    pages,
    ownersPerSecond: Math.round(owners / seconds),
    documentsPerSecond: Math.round(reminders / seconds),
    extra,
  };
}

async function reset(admin: pg.Pool): Promise<void> {
  await admin.query('truncate profile.document_expiry_reminders, profile.outbox_messages');
  await admin.query('vacuum analyze profile.document_expiry_reminders');
  await admin.query('vacuum analyze profile.outbox_messages');
}

async function ledgerCounts(admin: pg.Pool): Promise<{ markers: number; outbox: number }> {
  const { rows } = await admin.query(
    `select (select count(*)::int from profile.document_expiry_reminders) as markers,
            (select count(*)::int from profile.outbox_messages) as outbox`,
  );
  return rows[0];
}

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
function baselineA(workerUrl: string): Promise<Measurement> {
  return timedBaseline('A: node loop, per-owner tx', workerUrl, POOL, async (pool, tally) => {
    let cursor: PageCursor | null = null;
    for (;;) {
      const rows = await selectCandidatePage(pool, WINDOW, cursor, BATCH);
      tally.pages += 1;
      tally.seen += rows.length;
      const ownerIds = [...new Set(rows.map((r) => r.owner_user_id))];
      const inFlight = new Set<Promise<void>>();
      for (const ownerUserId of ownerIds) {
        while (inFlight.size >= CONCURRENCY) await Promise.race(inFlight);
        const run: Promise<void> = withTransaction(pool, (tx) =>
          claimOwners(tx, {
            ...WINDOW,
            ownerUserIds: [ownerUserId],
            asOf: `${AS_OF}T00:00:00.000Z`,
            jobRunId: 'bench-baseline-a',
          }),
        )
          .then(([o]) => {
            tally.owners += 1;
            tally.reminders += o.won.length;
          })
          .finally(() => inFlight.delete(run));
        inFlight.add(run);
      }
      await Promise.all(inFlight);
      if (rows.length < BATCH) break;
      const last = rows[rows.length - 1];
      cursor = { expiresAt: last.expires_at, id: last.id };
    }
  });
}

/** Baseline B: one claim statement per page. */
function baselineB(workerUrl: string): Promise<Measurement> {
  return timedBaseline('B: one SQL statement per page', workerUrl, 1, async (pool, tally) => {
    let cursor: PageCursor | null = null;
    for (;;) {
      const r = await claimPage(pool, WINDOW, cursor, BATCH, `${AS_OF}T00:00:00.000Z`, 'bench-baseline-b');
      tally.pages += 1;
      tally.owners += r.owners;
      tally.reminders += r.remindersSent;
      tally.seen += r.documentCount;
      if (!r.next) break;
      cursor = r.next;
    }
  });
}

interface Proc {
  child: ChildProcess;
  output: string[];
  stop(): Promise<void>;
}

/**
 * The worker as production runs it (`--worker dist`, the default): compiled, with the workflow bundle
 * prebuilt by `npm run build`. `--worker src` runs the sources under tsx, bundling at start.
 */
function workerCommand(): string[] {
  if (a.worker === 'src') return ['--import', 'tsx', path.join(root, 'src', 'worker.ts')];
  if (a.worker !== 'dist') throw new Error(`--worker must be dist or src, got ${a.worker}`);
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  return [path.join(root, 'dist', 'worker.js')];
}

function startWorker(stack: Pick<Stack, 'env'>, workerUrl: string, taskQueue: string): Proc {
  const child = spawn(process.execPath, WORKER_COMMAND, {
    cwd: root,
    env: {
      ...process.env,
      ...stack.env,
      DATABASE_URL: workerUrl,
      DATABASE_POOL_SIZE: String(POOL),
      TEMPORAL_TASK_QUEUE: taskQueue,
      METRICS_PORT: '0',
      LOG_LEVEL: process.env.BENCH_WORKER_LOG_LEVEL ?? 'warn',
      NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS ?? WORKER_NODE_OPTIONS,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** CPU seconds (user + system) per process group: the worker, the Temporal server, PostgreSQL, this process. */
function cpuSnapshot(workerPid?: number): Record<string, number> {
  const tick = 100; // USER_HZ on Linux
  const out: Record<string, number> = { worker: 0, temporalServer: 0, postgres: 0, benchDriver: 0, other: 0 };
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    const cpu = (Number(f[11]) + Number(f[12])) / tick;
    const pid = Number(entry);
    const key =
      pid === workerPid
        ? 'worker'
        : pid === process.pid
          ? 'benchDriver'
          : comm === 'postgres'
            ? 'postgres'
            : comm.startsWith('temporal')
              ? 'temporalServer'
              : 'other';
    out[key] += cpu;
  }
  return out;
}

function cpuDelta(
  before: Record<string, number>,
  after: Record<string, number>,
  seconds: number,
): Record<string, string> {
  const r: Record<string, string> = {};
  for (const k of Object.keys(after)) {
    if (k === 'other') continue;
    const d = after[k] - (before[k] ?? 0);
    r[k] = `${d.toFixed(1)} s (${Math.round((100 * d) / seconds)}% of one core)`;
  }
  return r;
}

function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function waitForPoller(client: Client, namespace: string, taskQueue: string): Promise<void> {
  const until = Date.now() + 120_000;
  for (;;) {
    const r = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: proto.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    if ((r.pollers ?? []).length > 0) return;
    if (Date.now() > until) throw new Error('the worker did not start polling within 120 s');
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** One cycle through Temporal; returns the measurement with history events per run and the RSS peak. */
async function temporalCycle(label: string, client: Client, worker: Proc, taskQueue: string): Promise<Measurement> {
  const pid = worker.child.pid!;
  let peakRss = procStatusKb(pid, 'VmRSS');
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, procStatusKb(pid, 'VmRSS'));
  }, 100);
  const cpu0 = cpuSnapshot(pid);
  const t0 = performance.now();
  const handle = await client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: `bench-${crypto.randomUUID()}`,
    args: [{ asOf: AS_OF, batchSize: BATCH, ownerConcurrency: CONCURRENCY, ownerGroupSize: GROUP }],
  });
  const result = await handle.result();
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const cpu = cpuDelta(cpu0, cpuSnapshot(pid), seconds);
  peakRss = Math.max(peakRss, procStatusKb(pid, 'VmRSS'));
  const eventsPerRun: number[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    const history: proto.api.history.v1.IHistory = await client.workflow
      .getHandle<CycleWorkflow>(handle.workflowId, runId)
      .fetchHistory();
    const events: proto.api.history.v1.IHistoryEvent[] = history.events ?? [];
    eventsPerRun.push(events.length);
    runId = events[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return measurement(label, seconds, result.ownersProcessed, result.documentsSeen, result.remindersSent, result.pages, {
    status: result.status,
    failedOwners: result.failedOwners,
    workflowDurationMs: result.durationMs,
    runs: result.runs,
    historyEventsPerRun: eventsPerRun,
    workerPeakRssMb: Math.round(peakRss / 1024),
    workerVmHwmMb: Math.round(procStatusKb(pid, 'VmHWM') / 1024),
    cpu,
  });
}

/** EXPLAIN (ANALYZE, BUFFERS) of the first candidate page, with the exact text `selectCandidatePage` sends. */
async function explainCandidatePage(admin: pg.Pool): Promise<string> {
  let captured: { text: string; values: unknown[] } | undefined;
  const spy = {
    query: async (text: string, values: unknown[]) => {
      captured = { text, values };
      return { rows: [] };
    },
  } as unknown as Queryable;
  await selectCandidatePage(spy, WINDOW, null, BATCH);
  const { rows } = await admin.query(`explain (analyze, buffers) ${captured!.text}`, captured!.values);
  const firstParams = captured!.values;
  // The same page with the first cursor at the window's lower bound instead of -infinity: shows whether
  // the row comparison, not the window, decides where the index scan starts.
  const start = new Date(Date.parse(`${AS_OF}T00:00:00Z`) - (RETENTION + 1) * 86_400_000).toISOString().slice(0, 10);
  await selectCandidatePage(spy, WINDOW, { expiresAt: start, id: '00000000-0000-0000-0000-000000000000' }, BATCH);
  const { rows: bounded } = await admin.query(`explain (analyze, buffers) ${captured!.text}`, captured!.values);
  const plan = (r: { 'QUERY PLAN': string }[]) => r.map((x) => x['QUERY PLAN']).join('\n');
  return `-- candidate page, asOf ${AS_OF}, batch ${BATCH}\n${captured!.text}\n-- params (first page, as the cycle sends it) ${JSON.stringify(firstParams)}\n\n${plan(rows)}\n\n-- the same first page with the cursor at the window's lower bound (${start}, nil uuid)\n\n${plan(bounded)}\n`;
}

let WORKER_COMMAND: string[] = [];

/**
 * The worker's heap flags as the Dockerfile sets them (NODE_OPTIONS); BENCH_WORKER_NODE_OPTIONS
 * overrides them. A 2 MB young generation keeps the peak RSS near the live heap (bench/REPORT.md).
 */
const WORKER_NODE_OPTIONS = '--max-semi-space-size=2 --max-old-space-size=256';

async function main(): Promise<void> {
  const wallStart = performance.now();
  // Built before anything is measured, so the compiler's CPU is in no measurement.
  if (only.has('temporal') || only.has('repeat')) WORKER_COMMAND = workerCommand();
  let stack: Stack | undefined;
  let env: Record<string, string>;
  if (process.env.STACK_DATABASE_ADMIN_URL && process.env.TEMPORAL_ADDRESS) {
    env = {
      STACK_DATABASE_ADMIN_URL: process.env.STACK_DATABASE_ADMIN_URL,
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE ?? 'default',
    };
    say('using STACK_DATABASE_ADMIN_URL / TEMPORAL_ADDRESS');
  } else {
    // The worker needs no Kafka: name a broker so the stack does not start one (nothing connects to it).
    process.env.KAFKA_BROKERS ??= '127.0.0.1:9';
    stack = await startStack({ ui: false, log: (l) => say(`[stack] ${l}`) });
    env = stack.env;
  }
  const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
  const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
  const client = new Client({ connection, namespace });
  const name = `bench_${a.workload}_${crypto.randomBytes(3).toString('hex')}`;
  const ownerUrl = await createDatabase(env.STACK_DATABASE_ADMIN_URL, name);
  await runMigrations({ connectionString: ownerUrl, rolePasswords: LOCAL_ROLE_PASSWORDS });
  const workerUrl = databaseUrl(ownerUrl, { user: WORKER_ROLE, password: LOCAL_ROLE_PASSWORDS.worker });
  const admin = createPool({ connectionString: ownerUrl, max: 2 });
  const results: Measurement[] = [];
  let worker: Proc | undefined;
  try {
    say(
      `workload ${a.workload}: ${JSON.stringify(W)}, batch ${BATCH}, concurrency ${CONCURRENCY}, group ${GROUP}, worker from ${a.worker}, pool ${POOL}, asOf ${AS_OF}`,
    );
    const seed = await seedDocuments(admin, {
      documents: W.documents,
      owners: W.owners,
      dueDocuments: W.due,
      dueOwners: W.dueOwners,
      asOfDate: AS_OF,
      log: (l) => say(`[seed] ${l}`),
    });
    say(
      `[seed] ${seed.documents} documents (${seed.dueDocuments} due) in ${seed.seconds.toFixed(1)} s, ${seed.rowsPerSecond} rows/s`,
    );
    await admin.query('checkpoint');

    const explain = await explainCandidatePage(admin);
    fs.mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
    fs.writeFileSync(path.join(root, 'bench', `explain-${a.workload}.txt`), explain);

    if (only.has('temporal') || only.has('repeat')) {
      const taskQueue = `bench-${crypto.randomBytes(4).toString('hex')}`;
      worker = startWorker({ env }, workerUrl, taskQueue);
      await waitForPoller(client, namespace, taskQueue);
      say(`worker ${worker.child.pid} polling (RSS ${Math.round(procStatusKb(worker.child.pid!, 'VmRSS') / 1024)} MB)`);
      if (only.has('temporal')) {
        await reset(admin);
        const m = await temporalCycle('Temporal: full cycle', client, worker, taskQueue);
        results.push(m);
        say(`${m.path}: ${JSON.stringify(m)} ${JSON.stringify(await ledgerCounts(admin))}`);
      }
      if (only.has('repeat')) {
        // Nothing due any more (the ledger holds this cycle's markers): the idle cycle.
        if (!only.has('temporal')) await reset(admin);
        const m = await temporalCycle('Temporal: repeat cycle (nothing due)', client, worker, taskQueue);
        results.push(m);
        say(`${m.path}: ${JSON.stringify(m)}`);
        if (only.has('temporal')) {
          // Right after a bulk claim the ledger's visibility map is empty, so every probe of the idle
          // scan visits the heap. Autovacuum's insert threshold fixes that within minutes; measure both.
          await admin.query('vacuum (analyze) profile.document_expiry_reminders');
          const v = await temporalCycle('Temporal: repeat cycle after vacuum (nothing due)', client, worker, taskQueue);
          results.push(v);
          say(`${v.path}: ${JSON.stringify(v)}`);
          fs.writeFileSync(
            path.join(root, 'bench', `explain-${a.workload}-after-claim.txt`),
            await explainCandidatePage(admin),
          );
        }
      }
      await worker.stop();
      worker = undefined;
    }
    if (only.has('a')) {
      await reset(admin);
      const m = await baselineA(workerUrl);
      results.push(m);
      say(`${m.path}: ${JSON.stringify(m)} ${JSON.stringify(await ledgerCounts(admin))}`);
    }
    if (only.has('b')) {
      await reset(admin);
      const m = await baselineB(workerUrl);
      results.push(m);
      say(`${m.path}: ${JSON.stringify(m)} ${JSON.stringify(await ledgerCounts(admin))}`);
    }

    const t = results.find((r) => r.path.startsWith('Temporal: full'));
    const ratio = (x?: Measurement) =>
      t && x && x.seconds > 0 ? Number((x.seconds / t.seconds).toFixed(3)) : undefined;
    const summary = {
      workload: a.workload,
      data: { ...W, seeded: seed },
      settings: { batchSize: BATCH, ownerConcurrency: CONCURRENCY, ownerGroupSize: GROUP, poolSize: POOL, asOf: AS_OF },
      machine: {
        nproc: os.cpus().length,
        memoryGb: Math.round(os.totalmem() / 2 ** 30),
        cpu: os.cpus()[0]?.model,
        node: process.version,
      },
      results,
      temporalThroughputVsA: ratio(results.find((r) => r.path.startsWith('A'))),
      temporalThroughputVsB: ratio(results.find((r) => r.path.startsWith('B'))),
      totalSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
    };
    fs.writeFileSync(
      path.join(root, 'bench', 'results', `${a.workload}.json`),
      `${JSON.stringify(summary, null, 2)}\n`,
    );
    say('');
    say(
      '| path | wall s | owners | owners/s | documents (reminders) | documents/s | pages | runs | history events/run | worker peak RSS MB |',
    );
    say('|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      const x = r.extra ?? {};
      say(
        `| ${r.path} | ${r.seconds} | ${r.owners} | ${r.ownersPerSecond} | ${r.reminders} | ${r.documentsPerSecond} | ${r.pages} | ${x.runs ?? ''} | ${
          (x.historyEventsPerRun as number[] | undefined)?.join(', ') ?? ''
        } | ${x.workerPeakRssMb ?? ''}${x.workerVmHwmMb ? ` (HWM ${x.workerVmHwmMb})` : ''} |`,
      );
    }
    say(
      `Temporal throughput / A: ${summary.temporalThroughputVsA ?? '-'}; / B: ${summary.temporalThroughputVsB ?? '-'}; total ${summary.totalSeconds} s`,
    );
  } finally {
    if (worker) {
      await worker.stop();
      process.stderr.write(worker.output.join('').slice(-4000));
    }
    await admin.end();
    if (!a['keep-db']) {
      const drop = createPool({ connectionString: env.STACK_DATABASE_ADMIN_URL, max: 1 });
      await drop.query(`drop database if exists "${name}" with (force)`).catch(() => {});
      await drop.end();
    }
    await connection.close();
    await stack?.stop();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
