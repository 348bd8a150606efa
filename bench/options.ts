/** The benchmark's flags (`npm run bench -- …`), parsed once into numbers and names. */
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** `--workload`: which workload of bench/workloads runs. */
  workload: string;
  /** Sizes given on the command line; the workload's own sizes fill in the rest. */
  documents?: number;
  owners?: number;
  due?: number;
  dueOwners?: number;
  /** `--rows`: outbox rows of the relay workload. */
  rows?: number;
  /** The cycle's input and the worker's pool, the same for every path so they measure the same work. */
  batchSize: number;
  ownerConcurrency: number;
  ownerGroupSize: number;
  /** `--partitions`: the cycle's partition count; absent: the cycle plans it from the day's due count. */
  partitions?: number;
  /** `--max-run-minutes`: the cycle's time limit (its `maxRunDurationMs`); absent: its default, 10 minutes. */
  maxRunMinutes?: number;
  poolSize: number;
  /** `--only`: the paths to run; the workload's paths when absent. */
  only?: string[];
  /** The day every path computes as of (default today, UTC). */
  asOf: string;
  /** Leave the benchmark's database on the server when done. */
  keepDb: boolean;
  /** `dist` (the compiled worker, as deployed) or `src` (the sources under tsx). */
  worker: string;
  /** `--workers`: worker processes polling the cycle's task queue (1–8, default 1). */
  workers: number;
  /**
   * `--warm`: run the full cycle once before the measured one (reported as the just-started workers' first
   * cycle), so each worker process has compiled its hot code as a long-running worker has; then end the
   * workers' database sessions, as their pools' idle timeout has by the next day's cycle.
   */
  warm: boolean;
  /** `--compare`: git revisions (comma-separated) to run the same workload for, beside the working tree (bench/compare). */
  compare?: string;
  /** `--rounds`: how many times `--compare` runs each revision, interleaved (default 3). */
  rounds: number;
  /**
   * `--profile dev|production`: the stack the benchmark starts (issue 20). Unset, a started stack is the
   * dev one and an adopted stack is whichever its variables describe; set, an adopted stack must match.
   */
  profile?: StackProfile;
  /**
   * `--statements`: a stack started here preloads `pg_stat_statements`, and each measured path reports
   * the statements that took the most of the database's time (`extra.database.statements`).
   */
  statements: boolean;
  /** `--help`: print {@link BENCH_USAGE} and run nothing. */
  help: boolean;
}

/** The dev stack (plaintext, the Temporal dev server on SQLite) or the production profile (TLS, SASL, mTLS, SQL-backed Temporal). */
export type StackProfile = 'dev' | 'production';

/** What `npm run bench -- --help` prints, and what a refused flag is shown beside. */
export const BENCH_USAGE = `usage: npm run bench -- [flags]

  --workload W          smoke (default), backlog, steady, moonshot, fivemillion, idle, relay
  --only P,P            the paths to run: temporal, a, b, bpar, repeat, e2e, parts (cycle workloads);
                        kafkajs, relay, relay-cold (relay); default the workload's own
  --profile dev|production   the stack to start (default dev); an adopted stack must match
  --documents N --owners M --due K --due-owners O   sizes other than the workload's
  --rows N              outbox rows of the relay workload
  --batch-size B --owner-concurrency C --owner-group-size G --partitions K --pool-size P
  --max-run-minutes M   the cycle's time limit (default its own, 10): a day larger than this box does in 10
  --workers N           worker processes polling the cycle's task queue (1-8, default 1)
  --warm                run the cycle once before the measured one (reported as the worker's first
                        cycle), then close the worker's database sessions (as a day's idle does)
  --worker dist|src     the compiled worker as deployed (default), or the sources under tsx
  --as-of YYYY-MM-DD    the day every path computes as of (default today, UTC)
  --keep-db             leave the benchmark's database on the server
  --statements          start the stack with pg_stat_statements and list each path's costliest statements
  --compare REV[,REV]   run the same for each git revision and the working tree, interleaved
  --rounds N            how many times --compare runs each revision (default 3)
  --help                this text

What the figures mean and the figures so far: bench/REPORT.md.`;

/** Parses the flags; unknown flags are refused (`parseArgs` strict mode). */
export function parseBenchOptions(args: string[] = process.argv.slice(2)): BenchOptions {
  const { values: a } = parseArgs({
    args,
    options: {
      workload: { type: 'string', default: 'smoke' },
      documents: { type: 'string' },
      owners: { type: 'string' },
      due: { type: 'string' },
      'due-owners': { type: 'string' },
      rows: { type: 'string' },
      'batch-size': { type: 'string', default: '500' },
      'owner-concurrency': { type: 'string', default: '500' },
      'owner-group-size': { type: 'string', default: '100' },
      partitions: { type: 'string' },
      'max-run-minutes': { type: 'string' },
      'pool-size': { type: 'string', default: '20' },
      only: { type: 'string' },
      'as-of': { type: 'string', default: new Date().toISOString().slice(0, 10) },
      'keep-db': { type: 'boolean', default: false },
      worker: { type: 'string', default: 'dist' },
      workers: { type: 'string', default: '1' },
      warm: { type: 'boolean', default: false },
      compare: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      profile: { type: 'string' },
      statements: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (a.profile !== undefined && a.profile !== 'dev' && a.profile !== 'production')
    throw new Error(`--profile must be dev or production, got ${a.profile}`);
  if (a.statements && a.compare !== undefined)
    throw new Error(
      "--statements does not go with --compare: it shows where one run spends the database's time, and an older revision does not know the flag",
    );
  const optionalNumber = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const maxRunMinutes = optionalNumber(a['max-run-minutes']);
  if (maxRunMinutes !== undefined && !(maxRunMinutes > 0))
    throw new Error(`--max-run-minutes must be a number of minutes above 0, got ${a['max-run-minutes']}`);
  const workers = Number(a.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 8)
    throw new Error(`--workers must be a whole number from 1 to 8, got ${a.workers}`);
  return {
    workload: a.workload,
    documents: optionalNumber(a.documents),
    owners: optionalNumber(a.owners),
    due: optionalNumber(a.due),
    dueOwners: optionalNumber(a['due-owners']),
    rows: optionalNumber(a.rows),
    batchSize: Number(a['batch-size']),
    ownerConcurrency: Number(a['owner-concurrency']),
    ownerGroupSize: Number(a['owner-group-size']),
    partitions: optionalNumber(a.partitions),
    maxRunMinutes,
    poolSize: Number(a['pool-size']),
    only: a.only?.split(','),
    asOf: a['as-of'],
    keepDb: a['keep-db'],
    worker: a.worker,
    workers,
    warm: a.warm,
    compare: a.compare,
    rounds: Number(a.rounds),
    profile: a.profile,
    statements: a.statements,
    help: a.help,
  };
}
