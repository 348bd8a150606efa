/**
 * `npm run stack` for a shell: `eval "$(npm run -s stack)"` starts it in the background and sets only
 * variables, `npm run -s stack -- stop` stops it. Run here against the suite's PostgreSQL and broker
 * (adopted through DATABASE_URL and KAFKA_BROKERS), so only a Temporal dev server is started.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { processAlive, waitFor } from '../support/wait';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const EXPORT_LINE = /^export [A-Z_]+='[^']*'$/;

let cacheHome: string;

beforeAll(() => {
  // Its own state folder, so the pid file of a stack a developer runs is never touched.
  cacheHome = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-cli-'));
});
afterAll(() => fs.rmSync(cacheHome, { recursive: true, force: true }));

function stackCli(...args: string[]) {
  return run(process.execPath, [require.resolve('tsx/cli'), 'scripts/stack/cli.ts', ...args], {
    cwd: ROOT,
    timeout: 120_000,
    env: {
      ...process.env,
      XDG_CACHE_HOME: cacheHome,
      DATABASE_URL: process.env.STACK_DATABASE_ADMIN_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      STACK_PID: '',
    },
  });
}

const alive = processAlive;

test('in the background it prints only export lines, the exported server answers, and stop ends it', async () => {
  const started = await stackCli();
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

test('a mistyped argument is refused with the usage, and starts nothing', async () => {
  const pidFile = path.join(cacheHome, 'expiry-reminder', 'stack', 'stack.pid');
  const before = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : undefined;
  const failure = await stackCli('--backgrund').then(
    () => undefined,
    (err: Error & { code?: number; stderr?: string }) => err,
  );
  expect(failure?.code).toBe(1);
  expect(failure?.stderr).toContain('unknown argument --backgrund; usage: npm run stack');
  expect(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : undefined).toBe(before);
});
