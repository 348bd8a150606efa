/** The relay as a separate process, as deployed, so its CPU and memory are its own. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildEntryCommand } from '../../harness/worker';

const RESULTS = path.resolve(__dirname, '..', '..', 'results');

export interface RelayProcess {
  child: ChildProcess;
  /** The last lines it wrote, for an error message. */
  tail(): string;
  /** Rows it has marked published since it started, from its `published` log lines (written after commit). */
  published(): number;
  /**
   * Resolves once it has published `rows` rows, read from its log: the driver's own polling of the outbox
   * would cost PostgreSQL more than the relay does (bench/REPORT-HISTORY.md#relay-issue-12).
   */
  waitForPublished(rows: number, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The relay's variables on the benchmark's database: the stack's (with its KAFKA_SSL* and KAFKA_SASL_* on
 * the production profile) and the relay role's URL as both names the relay reads, since the production
 * stack's own RELAY_DATABASE_URL names its `expiry_reminder` database, not the benchmark's.
 */
export function relayEnv(env: Record<string, string>, relayUrl: string): Record<string, string> {
  return { ...env, DATABASE_URL: relayUrl, RELAY_DATABASE_URL: relayUrl };
}

/**
 * BENCH_RELAY_NICE=<1..19>: the relay process runs at that lower CPU priority (its database sessions do not). On a
 * small box shared with the cycle, the relay's own CPU (kafkajs' encoding) competes with the cycle's; niced, what
 * is left of the relay's effect on the cycle is its database work, as when the relay runs on a machine of its own.
 */
function relayNice(): number | undefined {
  const nice = process.env.BENCH_RELAY_NICE;
  if (!nice) return undefined;
  const value = Number(nice);
  if (!Number.isInteger(value) || value < 1 || value > 19) {
    throw new Error(`BENCH_RELAY_NICE=${nice}: expected a whole number from 1 to 19`);
  }
  return value;
}

/** Starts `npm run relay`'s program (`dist`, compiled, or `src` under tsx) and waits for `relay started`. */
export async function startRelayProcess(kind: string, env: Record<string, string | undefined>): Promise<RelayProcess> {
  const nice = relayNice();
  const command = [process.execPath, ...buildEntryCommand(kind, 'relay')];
  // Under nice(1), which execs the relay in its place, so every thread it starts has the lower priority.
  const [program, ...args] = nice === undefined ? command : ['nice', '-n', String(nice), ...command];
  const child = spawn(program, args, {
    // At info: its `relay started` line is how this knows it is up, and its `published` lines count rows.
    env: { ...process.env, ...env, METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Its whole log, for reading after the run (each `published` line has the batch's claim, send and commit ms).
  fs.mkdirSync(RESULTS, { recursive: true });
  const log = fs.createWriteStream(path.join(RESULTS, `relay-${new Date().toISOString().replace(/[:.]/g, '')}.log`));
  // Two sources into one file: neither may end it, or the other's last lines would be written after its end.
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  child.once('close', () => log.end());
  const output: string[] = [];
  let partial = '';
  let published = 0;
  const waiters = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"msg":"published"')) continue;
      const total = (JSON.parse(line) as { total?: number }).total;
      if (typeof total === 'number') published = total;
    }
    for (const check of [...waiters]) check();
  });
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
  const tail = () => output.join('').slice(-4000);
  return {
    child,
    tail,
    published: () => published,
    waitForPublished: (rows, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const finish = (err?: Error) => {
          waiters.delete(check);
          clearTimeout(timer);
          child.off('exit', onExit);
          if (err) reject(err);
          else resolve();
        };
        const check = () => {
          if (published >= rows) finish();
        };
        const onExit = (code: number | null) => finish(new Error(`the relay exited (${code}):\n${tail()}`));
        const timer = setTimeout(
          () => finish(new Error(`${published} of ${rows} rows published after ${timeoutMs / 1000} s:\n${tail()}`)),
          timeoutMs,
        );
        waiters.add(check);
        child.once('exit', onExit);
        check();
      }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
