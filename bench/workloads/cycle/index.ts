/**
 * The reminder cycle's workload (issue 7): seeds `profile.person_documents` (bench/seed.ts), then on the
 * same data, emptying the ledger and the outbox before each path:
 *   temporal   the full cycle through Temporal on the worker process (./temporal.ts);
 *   repeat     the cycle again over the claimed data, nothing due: the idle cycle; after a full cycle,
 *              once right after it and once after VACUUM of the ledger;
 *   a, b, bpar the baselines A, B and B∥ (./baselines.ts);
 *   e2e        the full cycle with a relay process beside it, until Kafka acknowledged the last event
 *              (./end-to-end.ts); only when named, since it needs a broker;
 *   parts      a page's statements one by one in one session, the cycle's beside B's (./parts.ts); only
 *              when named.
 * Also writes the candidate page's plan to bench/explain-<workload>.txt (`-after-claim` after the repeat).
 * Its six data shapes are the workloads smoke, backlog, steady, moonshot, fivemillion and idle.
 */
import crypto from 'node:crypto';
import type pg from 'pg';
import { seedDocuments } from '../../seed';
import type { Measurement } from '../../harness/measure';
import { writeBenchFile } from '../../report';
import type { Bench, Workload, WorkloadResult } from '../../workload';
import type { BenchWorker } from '../../harness/worker';
import { baselineA, baselineB, baselineParallelB } from './baselines';
import { partitionCount } from '../../../src/domain/cycle';
import { explainCandidatePage } from './explain';
import { describeStatements, withDatabaseActivity, type StatementCosts } from './database-activity';
import { cycleSettings, type CycleSettings } from './settings';
import { endToEndCycle } from './end-to-end';
import { claimParts } from './parts';
import { temporalCycle } from './temporal';

/** The seeded data: documents over owners, of which `due` (over `dueOwners` owners) are due on AsOf. */
export interface DataShape {
  documents: number;
  owners: number;
  due: number;
  dueOwners: number;
}

/**
 * The worker's partition defaults (`REMINDER_PARTITIONS`, `REMINDER_PARTITION_SIZE`): B∥ runs as many sessions
 * as the cycle plans partitions for the day, unless `--partitions` fixes them.
 */
const DEFAULT_PARTITIONS = 8;
const DEFAULT_PARTITION_SIZE = 5_000;

/** The named shapes; the command line's sizes override each figure. */
export const DATA_SHAPES: Record<string, DataShape> = {
  smoke: { documents: 1_500, owners: 600, due: 500, dueOwners: 200 },
  backlog: { documents: 100_000, owners: 50_000, due: 100_000, dueOwners: 50_000 },
  steady: { documents: 1_000_000, owners: 400_000, due: 10_000, dueOwners: 8_000 },
  moonshot: { documents: 1_000_000, owners: 500_000, due: 1_000_000, dueOwners: 500_000 },
  // Issue 37: the moonshot five times over, a bad day of 5M due over 2.5M owners with 10M documents in the table.
  fivemillion: { documents: 5_000_000, owners: 2_500_000, due: 5_000_000, dueOwners: 2_500_000 },
  idle: { documents: 2_000_000, owners: 600_000, due: 0, dueOwners: 0 },
};

/** The cycle workload over the data shape `name`. */
export function cycleWorkload(name: string, shape: DataShape): Workload {
  return {
    name,
    paths: ['temporal', 'a', 'b', 'bpar', 'repeat', 'e2e', 'parts'],
    // End to end needs a broker and a relay, and parts is a study of one session: each asked for by name.
    defaultPaths: ['temporal', 'a', 'b', 'bpar', 'repeat'],
    needs: (paths) => ({
      worker: paths.has('temporal') || paths.has('repeat') || paths.has('e2e'),
      kafka: paths.has('e2e'),
    }),
    run: (bench) => runCycleWorkload(bench, shape),
  };
}

async function runCycleWorkload(bench: Bench, shape: DataShape): Promise<WorkloadResult> {
  const { options: o, paths, admin, say } = bench;
  const W: DataShape = {
    documents: o.documents ?? shape.documents,
    owners: o.owners ?? shape.owners,
    due: o.due ?? shape.due,
    dueOwners: o.dueOwners ?? shape.dueOwners,
  };
  const s = cycleSettings(o);
  say(
    `workload ${o.workload}: ${JSON.stringify(W)}, batch ${s.batchSize}, concurrency ${s.ownerConcurrency}, group ${s.ownerGroupSize}, worker from ${o.worker}, pool ${s.poolSize}, asOf ${s.asOf}`,
  );
  const seed = await seedDocuments(admin, {
    documents: W.documents,
    owners: W.owners,
    dueDocuments: W.due,
    dueOwners: W.dueOwners,
    asOfDate: s.asOf,
    log: (l) => say(`[seed] ${l}`),
  });
  say(
    `[seed] ${seed.documents} documents (${seed.dueDocuments} due) in ${seed.seconds.toFixed(1)} s, ${seed.rowsPerSecond} rows/s`,
  );
  await admin.query('checkpoint');
  writeBenchFile(`explain-${o.workload}.txt`, await explainCandidatePage(admin, s));

  const results: Measurement[] = [];
  /** Keeps a path's measurement and shows it, with what the ledger and the outbox hold after it. */
  const record = async (m: Measurement, counts = true) => {
    results.push(m);
    say(`${m.path}: ${JSON.stringify(m)}${counts ? ` ${JSON.stringify(await ledgerCounts(admin))}` : ''}`);
    const statements = (m.extra?.database as { statements?: StatementCosts } | undefined)?.statements;
    if (statements) for (const line of describeStatements(statements)) say(line);
  };
  if (paths.has('temporal') || paths.has('repeat') || paths.has('e2e')) await temporalPaths(bench, s, record);
  if (paths.has('parts')) {
    await reset(admin);
    await record(await claimParts(bench.database.workerUrl, s, say), false);
  }
  if (paths.has('a')) {
    await reset(admin);
    await record(await baselineA(bench.database.workerUrl, s));
  }
  if (paths.has('b')) {
    await reset(admin);
    await record(
      await withDatabaseActivity(admin, () => baselineB(bench.database.workerUrl, s), activityOptions(bench)),
    );
  }
  if (paths.has('bpar')) {
    await reset(admin);
    const k = s.partitions ?? partitionCount(W.due, DEFAULT_PARTITIONS, DEFAULT_PARTITION_SIZE);
    await record(
      await withDatabaseActivity(
        admin,
        () => baselineParallelB(bench.database.workerUrl, s, k),
        activityOptions(bench),
      ),
    );
  }

  const t = results.find((r) => r.path.startsWith('Temporal: full'));
  const first = results.find((r) => r.path === FIRST_CYCLE);
  const ratio = (x?: Measurement, cycle = t) =>
    cycle && x && x.seconds > 0 ? Number((x.seconds / cycle.seconds).toFixed(3)) : undefined;
  const bParallel = results.find((r) => r.path.startsWith('B∥'));
  const e2e = results.find((r) => r.path.startsWith('End to end'));
  const comparisons = {
    temporalThroughputVsA: ratio(results.find((r) => r.path.startsWith('A'))),
    temporalThroughputVsB: ratio(results.find((r) => r.path.startsWith('B:'))),
    temporalThroughputVsBParallel: ratio(bParallel),
    firstCycleThroughputVsBParallel: ratio(bParallel, first),
    endToEndVsCycleAlone: t && e2e ? Number((e2e.seconds / t.seconds).toFixed(3)) : undefined,
  };
  return {
    data: { ...W, seeded: seed },
    settings: {
      batchSize: s.batchSize,
      ownerConcurrency: s.ownerConcurrency,
      ownerGroupSize: s.ownerGroupSize,
      poolSize: s.poolSize,
      asOf: s.asOf,
    },
    results,
    comparisons,
    headline:
      `Temporal throughput / A: ${comparisons.temporalThroughputVsA ?? '-'}; / B: ${comparisons.temporalThroughputVsB ?? '-'}; / B∥: ${comparisons.temporalThroughputVsBParallel ?? '-'}` +
      (first ? `; first cycle / B∥: ${comparisons.firstCycleThroughputVsBParallel ?? '-'}` : '') +
      (e2e ? `; end to end / cycle alone: ${comparisons.endToEndVsCycleAlone ?? '-'}` : ''),
  };
}

/** With `--warm`: the cycle the worker processes run first, before the measured one (`Temporal: full cycle`). */
const FIRST_CYCLE = 'Temporal: first cycle of a just-started worker';

/** The full cycle and the repeat cycles, on `--workers` worker processes (default one). */
async function temporalPaths(
  bench: Bench,
  s: CycleSettings,
  record: (m: Measurement, counts?: boolean) => Promise<void>,
): Promise<void> {
  const { paths, admin, client, say } = bench;
  const taskQueue = `bench-${crypto.randomBytes(4).toString('hex')}`;
  // One by one: each compiles nothing (the bundle is prebuilt), but their starts would share 2 cores.
  const workers: BenchWorker[] = [];
  for (let i = 0; i < bench.options.workers; i += 1) workers.push(await bench.startWorker(taskQueue));
  const cycle = (label: string) => temporalCycle(label, client, workers, taskQueue, s);
  if (paths.has('temporal')) {
    if (bench.options.warm) {
      await reset(admin);
      await record(await withDatabaseActivity(admin, () => cycle(FIRST_CYCLE), activityOptions(bench)));
      say(`closed ${await closeWorkerSessions(admin)} of the worker's database sessions`);
    }
    await reset(admin);
    await record(await withDatabaseActivity(admin, () => cycle('Temporal: full cycle'), activityOptions(bench)));
  }
  if (paths.has('repeat')) {
    // Nothing due any more (the ledger holds this cycle's markers): the idle cycle.
    if (!paths.has('temporal')) await reset(admin);
    await record(await cycle('Temporal: repeat cycle (nothing due)'), false);
    if (paths.has('temporal')) {
      // Right after a bulk claim the ledger's visibility map is empty, so every probe of the idle
      // scan visits the heap. Autovacuum's insert threshold fixes that within minutes; measure both.
      await admin.query('vacuum (analyze) profile.document_expiry_reminders');
      await record(await cycle('Temporal: repeat cycle after vacuum (nothing due)'), false);
      writeBenchFile(`explain-${bench.options.workload}-after-claim.txt`, await explainCandidatePage(admin, s));
    }
  }
  if (paths.has('e2e')) {
    await reset(admin);
    await record(await endToEndCycle('End to end: cycle + relay to Kafka', bench, workers, taskQueue, s));
  }
  for (const worker of workers) await worker.stop();
}

/** What {@link withDatabaseActivity} reads besides the job's database: Temporal's, and the statements when asked. */
function activityOptions(bench: Bench): { temporalAdmin?: pg.Pool; statements: boolean } {
  return { temporalAdmin: bench.temporalAdmin, statements: bench.options.statements };
}

/**
 * Ends the worker processes' sessions in the benchmark's database, as their pools' idle timeout (30 s) does
 * between two daily cycles: a worker that ran yesterday's cycle has its code compiled, not its sessions open.
 * The pools drop the ended sessions and open new ones at the next cycle's first statements.
 * @returns how many sessions it ended.
 */
async function closeWorkerSessions(admin: pg.Pool): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `select count(*) filter (where pg_terminate_backend(pid))::int as n
       from pg_stat_activity
      where application_name = 'expiry-reminder-worker' and datname = current_database()`,
  );
  return rows[0].n;
}

/**
 * Empties the ledger and the outbox, vacuums both and checkpoints, so each path starts from the same state:
 * without the checkpoint a path inherited the WAL of the paths before it, and the checkpoint that WAL
 * called for fell in it (B∥ after a warm-up cycle, the cycle and B: 3.8–4.1 s against 3.2–3.4 s).
 */
async function reset(admin: pg.Pool): Promise<void> {
  await admin.query(
    `truncate profile.document_expiry_reminders, profile.outbox_events, profile.outbox_deliveries, profile.outbox_held,
              profile.document_expiry_reminder_prune_cutoff`,
  );
  await admin.query('vacuum analyze profile.document_expiry_reminders');
  await admin.query('vacuum analyze profile.outbox_events');
  await admin.query('checkpoint');
}

/** Rows in the ledger and the outbox: every path must write the same. */
async function ledgerCounts(admin: pg.Pool): Promise<{ markers: number; outbox: number }> {
  const { rows } = await admin.query(
    `select (select count(*)::int from profile.document_expiry_reminders) as markers,
            (select count(*)::int from profile.outbox_events) as outbox`,
  );
  return rows[0];
}
