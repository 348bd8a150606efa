/**
 * A child process in a process group of its own, signalled as a group: a shell or wrapper that does not
 * exec its server cannot leave the server behind when it is stopped (a UI server outlived every test run
 * so), and a caller that exits takes the group with it.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface ProcessGroup {
  child: ChildProcess;
  /** Resolves with the leader's exit code (null when a signal ended it). */
  exited: Promise<number | null>;
  /** Sends `signal` to every process of the group; does nothing when the group is gone. */
  signal(signal: NodeJS.Signals): void;
  /**
   * SIGTERM to the group, SIGKILL after `graceMs` if the leader has not exited; resolves once it has,
   * after a last SIGTERM to what the leader left running.
   */
  stop(graceMs?: number): Promise<void>;
}

/** Groups still running, killed when this process exits; one exit listener serves them all. */
const running = new Set<ProcessGroup>();
process.once('exit', () => {
  for (const group of running) group.signal('SIGKILL');
});

/** Spawns `command` with `options` as the leader of a new process group. */
export function spawnGroup(command: string, args: readonly string[], options: SpawnOptions = {}): ProcessGroup {
  const child = spawn(command, args, { ...options, detached: true });
  const signal = (sig: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      // The group is gone already.
    }
  };
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(group);
      resolve(code);
    }),
  );
  const group: ProcessGroup = {
    child,
    exited,
    signal,
    stop: async (graceMs = 20_000) => {
      if (child.exitCode === null && child.signalCode === null) {
        signal('SIGTERM');
        const timer = setTimeout(() => signal('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      signal('SIGTERM');
    },
  };
  running.add(group);
  return group;
}
