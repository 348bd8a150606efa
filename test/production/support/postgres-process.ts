/** A throwaway embedded PostgreSQL for one production test file, run in a child process (see postgres-child.ts). */
import { spawn } from 'node:child_process';
import path from 'node:path';

const READY = 'POSTGRES_READY ';

export interface PostgresProcess {
  adminUrl: string;
  /** Stops the server and waits until its process has exited. */
  stop(): Promise<void>;
}

export function startPostgresProcess(): Promise<PostgresProcess> {
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), path.join(__dirname, 'postgres-child.ts')], {
    // This file's environment, not the runner's: a shared stack's DATABASE_URL there would be adopted.
    env: { ...process.env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const line = buffer.split('\n').find((l) => l.startsWith(READY));
      if (!line) return;
      const { adminUrl } = JSON.parse(line.slice(READY.length)) as { adminUrl: string };
      resolve({
        adminUrl,
        stop: async () => {
          child.stdin.end();
          await exited;
        },
      });
    });
    child.once('exit', (code) => reject(new Error(`embedded PostgreSQL exited (code ${code}) before it was ready`)));
  });
}
