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
   * `--warm`: run the full cycle once, unmeasured, before the measured one, so each worker process has
   * compiled its hot code as a long-running worker has.
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
}

/** The dev stack (plaintext, the Temporal dev server on SQLite) or the production profile (TLS, SASL, mTLS, SQL-backed Temporal). */
export type StackProfile = 'dev' | 'production';

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
      'owner-concurrency': { type: 'string', default: '400' },
      'owner-group-size': { type: 'string', default: '100' },
      partitions: { type: 'string' },
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
    },
  });
  if (a.profile !== undefined && a.profile !== 'dev' && a.profile !== 'production')
    throw new Error(`--profile must be dev or production, got ${a.profile}`);
  const optionalNumber = (v: string | undefined) => (v === undefined ? undefined : Number(v));
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
  };
}
