/**
 * A workload is the benchmark's pluggable unit: it names the paths it can measure, says what the stack
 * must provide for them, and, given a running harness, seeds its data and measures. The harness
 * (bench/harness) starts and stops everything; the report (bench/report.ts) prints and writes what a
 * workload returns. A new workload is a module in bench/workloads, listed in its index.
 */
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { MigratedDatabase } from '../scripts/stack/database';
import type { Measurement } from './harness/measure';
import type { BenchWorker } from './harness/worker';
import type { BenchOptions, StackProfile } from './options';

/** What the harness must start for the chosen paths, before anything is measured. */
interface WorkloadNeeds {
  /** The worker process: built (`--worker dist`) before the stack starts, so the compiler's CPU is in no measurement. */
  worker: boolean;
  /** A Kafka broker. Without it the stack is pointed at an address where nothing listens and starts none. */
  kafka: boolean;
}

/** What a workload gets: the options, a fresh migrated database, Temporal, and the worker on demand. */
export interface Bench {
  options: BenchOptions;
  /** The stack's profile: dev (plaintext, dev server) or production (TLS, SASL, mTLS, Temporal on PostgreSQL). */
  profile: StackProfile;
  /** The paths to run (`--only`, else all of the workload's). */
  paths: ReadonlySet<string>;
  /** Variables that point a process at the stack. */
  env: Record<string, string>;
  client: Client;
  namespace: string;
  database: MigratedDatabase;
  /** Two owner connections to `database`: seeding, resets, EXPLAIN. */
  admin: pg.Pool;
  /**
   * One admin connection to the production profile's PostgreSQL cluster of Temporal's stores (apart from the
   * job's), for its commits and fsyncs; undefined where Temporal keeps no state in PostgreSQL (dev server).
   */
  temporalAdmin?: pg.Pool;
  /**
   * Starts the worker (when `needs` asked for it) on `taskQueue` and returns once it polls. A worker
   * still running when the benchmark ends is stopped, and its last output goes to stderr.
   */
  startWorker(taskQueue: string): Promise<BenchWorker>;
  /** A line of progress on stdout. */
  say(line: string): void;
}

/** What the report prints and writes (bench/results/<workload>.json) for a workload. */
export interface WorkloadResult {
  /** The data measured on. */
  data: Record<string, unknown>;
  /** The settings every path ran with. */
  settings: Record<string, unknown>;
  results: Measurement[];
  /** Figures across paths (ratios), written after `results`. */
  comparisons: Record<string, number | undefined>;
  /** The line under the table, before the total time. */
  headline: string;
  /** A table of the workload's own, printed instead of the cycle's columns. */
  table?: { header: string[]; rows: (string | number)[][] };
}

export interface Workload {
  /** The `--workload` name. */
  name: string;
  /** The paths `--only` chooses from, in the order they run. */
  paths: readonly string[];
  /** The paths run without `--only` (default: all of them). */
  defaultPaths?: readonly string[];
  /** What the harness must start for these paths. */
  needs(paths: ReadonlySet<string>): WorkloadNeeds;
  /** Seeds the data and measures the chosen paths. */
  run(bench: Bench): Promise<WorkloadResult>;
}
