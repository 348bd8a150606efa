/** The relay as a separate process, as deployed, so its CPU and memory are its own. */
import { spawn, type ChildProcess } from 'node:child_process';
import { buildEntryCommand } from '../../harness/worker';

export interface RelayProcess {
  child: ChildProcess;
  /** The last lines it wrote, for an error message. */
  tail(): string;
  stop(): Promise<void>;
}

/** Starts `npm run relay`'s program (`dist`, compiled, or `src` under tsx) and waits for `relay started`. */
export async function startRelayProcess(kind: string, env: Record<string, string | undefined>): Promise<RelayProcess> {
  const child = spawn(process.execPath, buildEntryCommand(kind, 'relay'), {
    // At info: its `relay started` line is how this knows it is up (and it logs one line per batch).
    env: { ...process.env, ...env, METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      // Only the end matters for an error; the relay logs a line per batch.
      if (output.length > 200) output.splice(0, output.length - 200);
      if (chunk.toString().includes('relay started')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`the relay exited (${code}) before it started:\n${output.join('')}`)),
    );
    setTimeout(() => reject(new Error(`the relay did not start within 60 s:\n${output.join('')}`)), 60_000).unref();
  });
  return {
    child,
    tail: () => output.join('').slice(-4000),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
