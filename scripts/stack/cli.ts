/**
 * `npm run stack`: the local stack for a shell. stdout carries only `export` lines:
 *
 *   npm run stack                            starts it in the foreground; Ctrl-C (or the end of the shell,
 *                                            the script or the terminal that started it) stops it
 *   eval "$(npm run -s stack -- --background)"  starts it in the background and sets the variables in this
 *                                            shell; `npm run -s stack -- stop` stops it (STACK_PID names it)
 *   npm run stack -- --production            the production profile (TLS, SCRAM, mTLS; docs/DEPLOYMENT.md),
 *                                            with two workers and two relays of the job (`--no-job`: none)
 *
 * The dev stack also makes database `expiry_reminder` on its PostgreSQL, migrated and empty, and prints its
 * MIGRATION_DATABASE_URL, DATABASE_URL, RELAY_DATABASE_URL and SUPPORT_DATABASE_URL, so `npm run worker`,
 * `relay` and `client` run on it as they are (README, "Run the pieces yourself").
 *
 * Every progress and server line goes to stderr (the background stack's to its log file). With `--json`
 * stdout carries one `STACK_READY {…}` line and the stack lives as long as its stdin (the test runner's
 * link); the dev stack then makes no database (each test file migrates its own). The background is never
 * chosen for the caller: a harness that ran `npm run stack > log &` and killed it was left with the stack
 * running.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KAFKA_CLIENT_VARIABLES, startStack } from './index';

/** Pid file and logs of background stacks; STACK_STATE_DIR moves them (a test, beside a developer's stack). */
const STATE_DIR =
  process.env.STACK_STATE_DIR ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'expiry-reminder', 'stack');
/**
 * Makes STATE_DIR the user's alone (0700) and every log and pid file in it 0600, those an older version left
 * readable too: the logs name the stack's folders, users and ports, and the job's logs what it did.
 */
function privateStateDir(): void {
  fs.mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  fs.chmodSync(STATE_DIR, 0o700);
  // Only what the stack writes there: STACK_STATE_DIR may name a folder that holds other things too.
  for (const entry of fs.readdirSync(STATE_DIR, { withFileTypes: true })) {
    const file = path.join(STATE_DIR, entry.name);
    if (entry.isDirectory() && entry.name.startsWith('job-')) {
      fs.chmodSync(file, 0o700);
      for (const log of fs.readdirSync(file)) if (log.endsWith('.log')) fs.chmodSync(path.join(file, log), 0o600);
    } else if (entry.isFile() && /^stack(-.*\.log|\.pid)$/.test(entry.name)) fs.chmodSync(file, 0o600);
  }
}

/** The newest background stack, for `stop` when STACK_PID is not in the environment. */
const PID_FILE = path.join(STATE_DIR, 'stack.pid');
const READY = 'STACK_READY ';

/** Every variable either profile may export, so `stop` can unset them all. */
const STACK_VARIABLES = [
  'STACK_DATABASE_ADMIN_URL',
  'STACK_TEMPORAL_DATABASE_ADMIN_URL',
  'MIGRATION_DATABASE_URL',
  'DATABASE_URL',
  'RELAY_DATABASE_URL',
  'SUPPORT_DATABASE_URL',
  'EXPIRY_REMINDER_WORKER_PASSWORD',
  'OUTBOX_RELAY_PASSWORD',
  'EXPIRY_REMINDER_SUPPORT_PASSWORD',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_CLI_PATH',
  'TEMPORAL_UI_URL',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_CERT',
  'TEMPORAL_TLS_KEY',
  'TEMPORAL_TLS_CA',
  ...KAFKA_CLIENT_VARIABLES,
  'STACK_KAFKA_ADMIN_PASSWORD',
  'STACK_WORKER_METRICS_URLS',
  'STACK_RELAY_METRICS_URLS',
];

/** What the command line asked for. */
interface Profile {
  production: boolean;
  /** Two workers and two relays of the job on the production profile (not with `--json` or `--no-job`). */
  job: boolean;
  /** The dev stack's database for a person (not with `--json`: the harness's tests make their own). */
  database: boolean;
}

/** This process's ancestors up to init, from /proc (empty where there is none): the shell, npm, a script. */
function ancestors(): number[] {
  const pids: number[] = [];
  let pid = process.ppid;
  while (pid > 1 && pids.length < 64) {
    pids.push(pid);
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the command name, which may hold spaces and parentheses: state, then the parent's pid.
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      break;
    }
  }
  return pids;
}

/**
 * Calls `onOrphaned` once any process that started this one is gone: a foreground stack must not outlive
 * the shell, script or test that ran it (killing `npm` does not reach a grandchild; no signal comes).
 */
function watchAncestors(onOrphaned: (pid: number) => void): NodeJS.Timeout {
  const parent = process.ppid;
  const watched = ancestors();
  const timer = setInterval(() => {
    const gone = process.ppid !== parent ? parent : watched.find((pid) => !alive(pid));
    if (gone !== undefined) onOrphaned(gone);
  }, 1_000);
  timer.unref();
  return timer;
}

const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
const exportLines = (env: Record<string, string>) =>
  Object.entries(env)
    .map(([k, v]) => `export ${k}=${shellQuote(v)}\n`)
    .join('');

/** Runs the stack in this process until a signal (or, with `json`, until stdin ends). */
async function serve(mode: 'json' | 'foreground' | 'daemon', profile: Profile): Promise<void> {
  // Watched from the start: a cold start builds the Temporal server for minutes, and its caller may give up.
  let orphaned = false;
  const running: { stop?: () => void } = {};
  if (mode === 'foreground') {
    watchAncestors((pid) => {
      if (orphaned) return;
      orphaned = true;
      process.stderr.write(`[stack] the process that started the stack (pid ${pid}) is gone; stopping\n`);
      running.stop?.();
    });
  }
  if (profile.job) privateStateDir();
  const stack = await startStack({
    production: profile.production,
    database: profile.database,
    ...(profile.job ? { job: { workers: 2, relays: 2 }, jobLogDir: path.join(STATE_DIR, `job-${timestamp()}`) } : {}),
    log: (line) => process.stderr.write(`[stack] ${line}\n`),
  });
  // The dev server's handle does not keep Node alive: with PostgreSQL and Kafka adopted from the
  // environment (no child processes of ours), the stack would exit right after saying it is ready.
  const keepAlive = setInterval(() => {}, 1 << 30);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(keepAlive);
    await stack.stop().catch((err: Error) => process.stderr.write(`[stack] stop failed: ${err.message}\n`));
    if (mode === 'daemon' && readPid(PID_FILE) === process.pid) fs.rmSync(PID_FILE, { force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  running.stop = () => void stop();
  if (orphaned) return stop();
  if (mode === 'json') {
    // The test runner holds our stdin; when it goes away, so does the stack.
    process.stdin.on('end', () => void stop()).resume();
    process.stdout.write(`${READY}${JSON.stringify(stack.env)}\n`);
  } else if (mode === 'daemon') {
    // The launching process reads this one line and exits; a stray write after it must not kill us.
    process.stdout.on('error', () => {});
    process.stdout.write(`${READY}${JSON.stringify({ ...stack.env, STACK_PID: String(process.pid) })}\n`);
  } else {
    process.stdout.write(exportLines(stack.env));
    process.stderr.write(
      process.stdout.isTTY
        ? '[stack] up; Ctrl-C stops it\n'
        : '[stack] up in the foreground; Ctrl-C stops it (for eval "$(…)", start it with --background)\n',
    );
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

const timestamp = () => new Date().toISOString().replace(/[:.]/g, '-');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts the stack as a detached process whose output goes to a log file, copies that log to stderr
 * until the stack is ready, then prints the export lines and returns, leaving the stack running.
 */
async function launchInBackground(profile: Profile): Promise<void> {
  privateStateDir();
  const logFile = path.join(STATE_DIR, `stack-${timestamp()}.log`);
  const logFd = fs.openSync(logFile, 'a', 0o600);
  const child = spawn(
    process.execPath,
    [
      require.resolve('tsx/cli'),
      __filename,
      '--daemon',
      ...(profile.production ? ['--production'] : []),
      ...(profile.production && !profile.job ? ['--no-job'] : []),
    ],
    {
      detached: true,
      stdio: ['ignore', 'pipe', logFd],
      cwd: path.resolve(__dirname, '..', '..'),
    },
  );
  fs.closeSync(logFd);
  const childOut = child.stdout;
  if (!childOut) throw new Error('spawned the stack without a stdout pipe');
  let copied = 0;
  const copyLog = () => {
    const text = fs.readFileSync(logFile, 'utf8');
    process.stderr.write(text.slice(copied));
    copied = text.length;
  };
  const tail = setInterval(copyLog, 250);
  try {
    const env = await new Promise<Record<string, string>>((resolve, reject) => {
      let out = '';
      childOut.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        const line = out.split('\n').find((l) => l.startsWith(READY));
        if (line) resolve(JSON.parse(line.slice(READY.length)) as Record<string, string>);
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`the stack exited before it was ready (${signal ?? `exit ${code}`}); log: ${logFile}`)),
      );
    });
    fs.writeFileSync(PID_FILE, `${env.STACK_PID}\n`, { mode: 0o600 });
    copyLog();
    process.stdout.write(exportLines(env));
    process.stderr.write(
      `[stack] up in the background (pid ${env.STACK_PID}, log ${logFile}); stop it with: npm run -s stack -- stop\n`,
    );
  } finally {
    clearInterval(tail);
    childOut.destroy();
    child.unref();
  }
}

/** Stops the background stack named by STACK_PID, or else the newest one, and waits until it is gone. */
async function stopBackground(): Promise<void> {
  const pid = Number(process.env.STACK_PID) || readPid(PID_FILE);
  if (!pid || !alive(pid)) {
    process.stderr.write('[stack] no background stack is running (STACK_PID unset or gone, no live pid file)\n');
    fs.rmSync(PID_FILE, { force: true });
    return;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 60_000;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`the stack (pid ${pid}) did not stop within 60 s`);
    await sleep(200);
  }
  process.stderr.write(`[stack] stopped (pid ${pid})\n`);
  process.stdout.write(`unset STACK_PID ${STACK_VARIABLES.join(' ')}\n`);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const known = ['--json', '--daemon', '--foreground', '--background', '--production', '--no-job', 'stop'];
  const usage = 'usage: npm run stack [-- [--production [--no-job]] [--background|--json] | stop]';
  const unknown = args.filter((a) => !known.includes(a));
  if (unknown.length > 0) throw new Error(`unknown argument ${unknown.join(' ')}; ${usage}`);
  if (args.includes('--no-job') && !args.includes('--production'))
    throw new Error(`--no-job applies to the production profile only (the dev stack runs no job); ${usage}`);
  if (args.includes('stop')) return stopBackground();
  const production = args.includes('--production');
  const json = args.includes('--json');
  const profile: Profile = { production, job: production && !args.includes('--no-job') && !json, database: !json };
  if (json) return serve('json', profile);
  if (args.includes('--daemon')) return serve('daemon', profile);
  return args.includes('--background') ? launchInBackground(profile) : serve('foreground', profile);
}

main().catch((err: Error) => {
  process.stderr.write(`[stack] ${err.message}\n`);
  process.exit(1);
});
