/**
 * `npm run stack` for a shell: `eval "$(npm run -s stack -- --background)"` starts it in the background and
 * sets only variables, `npm run -s stack -- stop` stops it; without the flag it stays in the foreground, even
 * with its output in a file, and stops when whatever started it is gone. Run here against the suite's PostgreSQL and broker
 * (adopted through DATABASE_URL and KAFKA_BROKERS), so only a Temporal dev server is started.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { EXPORT_LINE, runStackCli, useStateDir } from '../support/stack-cli';
import { processAlive, waitFor } from '../support/wait';

// Its own state folder, so the pid file of a stack a developer runs is never touched.
const cacheHome = useStateDir('stack-cli-');

/** The suite's PostgreSQL and broker, adopted; its own state folder. */
const cliEnv = () => ({
  ...process.env,
  XDG_CACHE_HOME: cacheHome(),
  DATABASE_URL: process.env.STACK_DATABASE_ADMIN_URL,
  KAFKA_BROKERS: process.env.KAFKA_BROKERS,
  STACK_PID: '',
});

function stackCli(...args: string[]) {
  return runStackCli(args, cliEnv(), 120_000);
}

async function temporalAnswers(address: string): Promise<boolean> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: 2_000 });
    await connection.close();
    return true;
  } catch {
    return false;
  }
}

const alive = processAlive;

test('in the background it prints only export lines, the exported server answers, and stop ends it', async () => {
  const started = await stackCli('--background');
  const lines = started.stdout.trimEnd().split('\n');
  expect(lines.filter((l) => !EXPORT_LINE.test(l))).toEqual([]);
  const env = Object.fromEntries(lines.map((l) => /^export ([A-Z_]+)='(.*)'$/.exec(l)!.slice(1, 3)));
  expect(Object.keys(env)).toEqual(
    expect.arrayContaining(['STACK_PID', 'TEMPORAL_ADDRESS', 'STACK_DATABASE_ADMIN_URL']),
  );
  expect(started.stderr).toMatch(/up in the background \(pid \d+, log /);
  const pid = Number(env.STACK_PID);
  expect(alive(pid)).toBe(true);
  try {
    const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
    try {
      const info = await connection.workflowService.getSystemInfo({});
      expect(info.serverVersion).toMatch(/^\d+\.\d+/);
    } finally {
      await connection.close();
    }

    // STACK_PID unset: the pid file names the newest background stack.
    const stopped = await stackCli('stop');
    expect(stopped.stdout).toMatch(/^unset STACK_PID [A-Z_ ]+\n$/);
    expect(stopped.stderr).toContain(`stopped (pid ${pid})`);
    await waitFor(async () => !alive(pid), 10_000);
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGTERM');
  }

  // Stopping again finds nothing, says so, and sets nothing.
  const again = await stackCli('stop');
  expect(again.stdout).toBe('');
  expect(again.stderr).toContain('no background stack is running');
});

test('without --background it stays in the foreground with its output in a file, and stops when the script that ran it is killed', async () => {
  const out = path.join(cacheHome(), 'foreground.out');
  // A script that runs the stack with its output in a file, as a harness does (`npm run stack > log &`).
  const script = spawn(
    'bash',
    [
      '-c',
      `"$0" "$1" scripts/stack/cli.ts > '${out}' 2> '${out}.err' & wait`,
      process.execPath,
      require.resolve('tsx/cli'),
    ],
    { cwd: path.resolve(__dirname, '..', '..'), env: cliEnv(), stdio: 'ignore' },
  );
  let address = '';
  try {
    await waitFor(async () => {
      const printed = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
      address = /^export TEMPORAL_ADDRESS='([^']+)'$/m.exec(printed)?.[1] ?? '';
      return address !== '';
    }, 90_000);
    expect(fs.readFileSync(`${out}.err`, 'utf8')).toContain('up in the foreground');
    expect(fs.readFileSync(out, 'utf8')).not.toContain('STACK_PID');
    expect(await temporalAnswers(address)).toBe(true);
  } finally {
    script.kill('SIGKILL');
  }
  await waitFor(async () => !(await temporalAnswers(address)), 30_000, 500);
  expect(fs.readFileSync(`${out}.err`, 'utf8')).toMatch(
    /the process that started the stack \(pid \d+\) is gone; stopping/,
  );
});

test('a mistyped argument is refused with the usage, and starts nothing', async () => {
  const pidFile = path.join(cacheHome(), 'expiry-reminder', 'stack', 'stack.pid');
  const before = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : undefined;
  const failure = await stackCli('--backgrund').then(
    () => undefined,
    (err: Error & { code?: number; stderr?: string }) => err,
  );
  expect(failure?.code).toBe(1);
  expect(failure?.stderr).toContain('unknown argument --backgrund; usage: npm run stack');
  // --no-job without --production: the dev stack runs no job, and saying so beats ignoring it.
  const misplaced = await stackCli('--no-job').then(
    () => undefined,
    (err: Error & { code?: number; stderr?: string }) => err,
  );
  expect(misplaced?.code).toBe(1);
  expect(misplaced?.stderr).toContain('--no-job applies to the production profile only');
  expect(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : undefined).toBe(before);
});
