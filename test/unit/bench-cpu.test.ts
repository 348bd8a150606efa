import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuSnapshot, scopeCpuToDescendantsOf } from '../../bench/harness/measure';

/**
 * A busy process started from a copy of `yes` at `file`, so its name is the file's (as the stack's binaries are);
 * `title` is its argv[0], as PostgreSQL's processes show theirs (`postgres: walwriter`).
 */
function busy(file: string, title?: string): ChildProcess {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.copyFileSync('/usr/bin/yes', file);
  fs.chmodSync(file, 0o755);
  return spawn(file, [], { stdio: ['ignore', 'ignore', 'ignore'], ...(title ? { argv0: title } : {}) });
}

/** Kills `child` and waits for its exit, unless it has exited already. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describe('the benchmark counts CPU per process group', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cpu-'));
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) await stop(child);
    scopeCpuToDescendantsOf(undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("counts the production profile's Temporal server (the cached `server` binary) as temporalServer, and the UI's `server` as neither", async () => {
    scopeCpuToDescendantsOf(process.pid);
    const before = cpuSnapshot();
    children.push(busy(path.join(dir, 'temporal-server-1.29.1', 'server')));
    children.push(busy(path.join(dir, 'temporal-ui-server-2.54.1', 'server')));
    await sleep(1_500);
    const after = cpuSnapshot();
    const temporal = after.temporalServer - before.temporalServer;
    const other = after.other - before.other;
    expect(temporal).toBeGreaterThan(0.3);
    expect(other).toBeGreaterThan(0.3);
    // The two burn alike on a shared machine; each is counted once, in its own group.
    expect(temporal).toBeLessThan(2 * 1.5 + 0.2);
  });

  it("counts PostgreSQL's own processes as postgresBackground, and a client's backend only as postgres", async () => {
    scopeCpuToDescendantsOf(process.pid);
    const before = cpuSnapshot();
    const started = [
      busy(path.join(dir, 'pg-1', 'postgres'), 'postgres: walwriter '),
      busy(path.join(dir, 'pg-2', 'postgres'), 'postgres: expiry_reminder_worker bench_x 127.0.0.1(51234) idle'),
    ];
    children.push(...started);
    await sleep(1_500);
    const after = cpuSnapshot();
    for (const child of started) await stop(child);
    const postgres = after.postgres - before.postgres;
    const background = after.postgresBackground - before.postgresBackground;
    // Both are PostgreSQL's; only the WAL writer is the server's own work, about half of the two.
    expect(postgres).toBeGreaterThan(0.6);
    expect(background).toBeGreaterThan(0.2);
    expect(background).toBeLessThan(postgres - 0.2);
  });

  it("scoped to this process's descendants, leaves out another stack's processes", async () => {
    // A grandchild counts (a stack's postmaster runs its backends); a process not descended from the scope does not.
    scopeCpuToDescendantsOf(children[0].pid);
    const before = cpuSnapshot();
    await sleep(1_000);
    const after = cpuSnapshot();
    expect(after.temporalServer - before.temporalServer).toBeGreaterThan(0.2);
    expect(after.other - before.other).toBe(0);
  });
});
