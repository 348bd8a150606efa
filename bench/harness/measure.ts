/**
 * What a path's measurement holds, and how the harness measures CPU and memory: from /proc, per process
 * group, because the worker, the Temporal server and PostgreSQL share the machine with the driver and
 * each one's share is part of the answer.
 */
import fs from 'node:fs';

/** One path's result: the work it did and its rates; `extra` holds what only some paths measure. */
export interface Measurement {
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

/** A measurement from its counts, with the rates computed and the seconds rounded to milliseconds. */
export function measurement(
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

/**
 * The process whose descendants {@link cpuSnapshot} counts, or undefined for every process on the
 * machine. Other agents' stacks share this machine (their PostgreSQL, their Temporal servers of the same
 * binary); a stack this process started is its descendant, so only its own is counted.
 */
let cpuScopeRoot: number | undefined;

/** Counts only the descendants of `pid` (this process, when it started the stack) from now on; undefined: all. */
export function scopeCpuToDescendantsOf(pid: number | undefined): void {
  cpuScopeRoot = pid;
}

/**
 * The postmaster of the production profile's PostgreSQL cluster of Temporal's stores: its processes are
 * counted as `postgresTemporal`, apart from the job's cluster (`postgres`).
 */
let temporalPostmaster: number | undefined;

/**
 * Counts the PostgreSQL cluster that serves the backend `backendPid` (Temporal's) as `postgresTemporal` from
 * now on: its postmaster is the backend's parent.
 */
export function countPostgresClusterApart(backendPid: number): void {
  const parent = procStat(backendPid)?.[1];
  temporalPostmaster = parent ? Number(parent) : undefined;
}

/** Where the stack caches the production Temporal server (`server`) and its Web UI (also `server`). */
const TEMPORAL_SERVER_BINARY = /\/temporal-server-[^/]+\/server(-authz-[0-9a-f]+)?$/;

/** The program a process runs, as it was started (argv[0]); empty once it is gone. */
function argv0(pid: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
  } catch {
    return '';
  }
}

/**
 * The group of a process by its name: the dev server is the `temporal` CLI; the production profile's
 * Temporal server is a binary called `server` in the stack's cache, `server-authz-<hash>` when built with the
 * profile's authorizer (the UI server, `server` too, lives elsewhere and is not counted as Temporal); the broker
 * is a JVM running `kafka.Kafka`.
 */
function processGroup(pid: string, comm: string): string {
  if (comm === 'postgres') return 'postgres';
  if (comm.startsWith('temporal')) return 'temporalServer';
  if (comm.startsWith('server') && TEMPORAL_SERVER_BINARY.test(argv0(pid))) return 'temporalServer';
  if (comm === 'java') {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka')) return 'kafka';
    } catch {
      return 'other';
    }
  }
  return 'other';
}

/** A PostgreSQL backend of the Temporal server's role (its process title is `postgres: <role> <database> …`). */
const TEMPORAL_BACKEND = /^postgres: temporal /;

/** A client's backend (`postgres: <role> <database> <host>(<port>) …`), not one of the server's own processes. */
const CLIENT_BACKEND = /^postgres: \S+ \S+ (\S+\(\d+\)|\[local\])/;

/**
 * CPU seconds (user + system) per process group: the worker (every worker process of `workerPids`), the Temporal server, PostgreSQL, the Kafka
 * broker, this process; only the stack's own processes once {@link scopeCpuToDescendantsOf} was called.
 * `postgresTemporal` is the production profile's cluster of Temporal's stores ({@link countPostgresClusterApart}),
 * `postgres` the job's. `postgresTemporalBackends` is the CPU of the live backends of the Temporal server's
 * role, wherever they run: those connections live an hour (ops/temporal/config.yaml), so a run's own are all in it.
 * `postgresBackground` is the part of `postgres` that the job's cluster's own live processes spent (the WAL
 * writer, the checkpointer, the background writer, autovacuum workers, the I/O workers), no client's backend;
 * `postgresReaped` the part its postmaster reaped from processes that exited during the run: closed
 * connections' backends (a pool closes one idle for 30 s, with every second it ever spent) and autovacuum
 * workers (each exits after its pass), which /proc no longer tells apart.
 */
export function cpuSnapshot(workerPids: number | readonly number[] = []): Record<string, number> {
  const workers = new Set(typeof workerPids === 'number' ? [workerPids] : workerPids);
  const tick = 100; // USER_HZ on Linux
  const out: Record<string, number> = {
    worker: 0,
    temporalServer: 0,
    postgres: 0,
    ...(temporalPostmaster ? { postgresTemporal: 0 } : {}),
    kafka: 0,
    benchDriver: 0,
    other: 0,
    postgresTemporalBackends: 0,
    postgresBackground: 0,
    postgresReaped: 0,
  };
  const processes = new Map<number, { ppid: number; comm: string; cpu: number; reaped: number }>();
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
    // PostgreSQL's backends come and go (a pool closes idle connections); the postmaster reaps them, and
    // their CPU moves into its cutime and cstime. Without those a backend that exits mid-run takes its
    // seconds with it, and the group's delta can even go negative.
    const reaped = comm === 'postgres' ? Number(f[13]) + Number(f[14]) : 0;
    processes.set(Number(entry), {
      ppid: Number(f[1]),
      comm,
      cpu: (Number(f[11]) + Number(f[12]) + reaped) / tick,
      reaped: reaped / tick,
    });
  }
  const inScope = (pid: number): boolean => {
    if (cpuScopeRoot === undefined) return true;
    for (let p: number | undefined = pid, hops = 0; p !== undefined && p > 1 && hops < 64; hops++) {
      if (p === cpuScopeRoot) return true;
      p = processes.get(p)?.ppid;
    }
    return false;
  };
  for (const [pid, { ppid, comm, cpu, reaped }] of processes) {
    if (!inScope(pid)) continue;
    const group = workers.has(pid) ? 'worker' : pid === process.pid ? 'benchDriver' : processGroup(String(pid), comm);
    const ofTemporalCluster =
      group === 'postgres' && temporalPostmaster !== undefined && [pid, ppid].includes(temporalPostmaster);
    out[ofTemporalCluster ? 'postgresTemporal' : group] += cpu;
    if (group !== 'postgres') continue;
    const title = argv0(String(pid));
    if (TEMPORAL_BACKEND.test(title)) out.postgresTemporalBackends += cpu;
    if (ofTemporalCluster) continue;
    out.postgresReaped += reaped;
    if (!CLIENT_BACKEND.test(title)) out.postgresBackground += cpu - reaped;
  }
  return out;
}

/** A process's fields from /proc/<pid>/stat after its name (field 3 onwards), or undefined once it is gone. */
function procStat(pid: number | string): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds of a process and of the children it has reaped (utime + stime + cutime + cstime). */
export function processCpuSeconds(pid: number): number {
  const f = procStat(pid);
  return f ? (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100 : 0;
}

/**
 * CPU seconds of one PostgreSQL cluster: its postmaster (with the backends it has reaped) and its live
 * children. Other clusters on the machine (other agents' stacks) are not in it, unlike {@link cpuSnapshot}.
 */
export function clusterCpuSeconds(postmasterPid: number): number {
  let total = processCpuSeconds(postmasterPid);
  for (const entry of fs.readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && procStat(entry)?.[1] === String(postmasterPid))
      total += processCpuSeconds(Number(entry));
  }
  return total;
}

/** The CPU each group used between two snapshots, in seconds and as a share of one core over `seconds`. */
export function cpuDelta(
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

/** A memory figure of a process from /proc/<pid>/status, in kB; 0 once the process is gone. */
export function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * Samples a process's VmRSS every 100 ms until `stop`, which returns the peak in kB. VmHWM alone would
 * be the peak of the process's whole life, not of this measurement.
 */
export function sampleRss(pid: number): { stop(): number } {
  let peak = procStatusKb(pid, 'VmRSS');
  const sampler = setInterval(() => {
    peak = Math.max(peak, procStatusKb(pid, 'VmRSS'));
  }, 100);
  return {
    stop: () => {
      clearInterval(sampler);
      return Math.max(peak, procStatusKb(pid, 'VmRSS'));
    },
  };
}
