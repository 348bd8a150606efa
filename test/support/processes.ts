/**
 * What `ps` shows of this machine's processes, read from /proc as an operator's tools read it; and the job's
 * entry points started as processes of their own.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Every process's command line (its NUL-separated arguments joined by spaces), by pid. */
export function commandLines(): Map<number, string> {
  const lines = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      lines.set(Number(entry), fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return lines;
}

/**
 * Calls {@link commandLines} every `everyMs` until the returned function is called, which returns every
 * command line seen, each with the pid that had it: a tool that runs for a second is caught too.
 */
export function watchCommandLines(everyMs = 50): () => Map<string, number> {
  const seen = new Map<string, number>();
  const sample = () => {
    for (const [pid, line] of commandLines()) seen.set(line, pid);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return () => {
    clearInterval(timer);
    sample();
    return seen;
  };
}

/** An entry point running as its own process, with everything it printed. */
export interface EntryProcess {
  child: ChildProcess;
  output: string[];
  /** SIGTERM, then its exit code once it has exited. */
  stop(): Promise<number | null>;
}

/**
 * Starts `<root>/src/<entry>.ts` as its own process, like `npm run <entry>` in `root` (this clone, or an export
 * of another revision), with this process's environment plus `env`, less `unset`; resolves once its output
 * contains `ready`, and fails with that output if it exits first.
 */
export async function startEntryProcess(options: {
  root: string;
  entry: string;
  env: Record<string, string>;
  ready: string;
  unset?: readonly string[];
}): Promise<EntryProcess> {
  const { root, entry, ready } = options;
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  for (const name of options.unset ?? []) delete env[name];
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src', `${entry}.ts`)], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes(ready)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`${entry} exited with ${code} before it was ready:\n${output.join('')}`)),
    );
  });
  return {
    child,
    output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Why `sha` (`what`, for the message) cannot be run here, or undefined: a test that starts an earlier release's
 * entry point needs its commit, which a shallow clone lacks.
 */
export function revisionMissing(sha: string, what: string): string | undefined {
  try {
    execFileSync('git', ['rev-parse', '--verify', '--quiet', `${sha}^{commit}`], {
      cwd: path.resolve(__dirname, '..', '..'),
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    return undefined;
  } catch {
    return `${what} ${sha.slice(0, 12)} is no commit of this clone (shallow, or not fetched: git fetch --unshallow)`;
  }
}
