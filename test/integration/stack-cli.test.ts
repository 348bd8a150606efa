/**
 * `npm run stack` for a shell: `eval "$(npm run -s stack)"` starts it in the background and sets only
 * variables, `npm run -s stack -- stop` stops it. Run here against the suite's PostgreSQL and broker
 * (adopted through DATABASE_URL and KAFKA_BROKERS), so only a Temporal dev server is started.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { EXPORT_LINE, runStackCli, useStateDir } from '../support/stack-cli';
import { processAlive, waitFor } from '../support/wait';

// Its own state folder, so the pid file of a stack a developer runs is never touched.
const cacheHome = useStateDir('stack-cli-');

function stackCli(...args: string[]) {
  return runStackCli(
    args,
    {
      ...process.env,
      XDG_CACHE_HOME: cacheHome(),
      DATABASE_URL: process.env.STACK_DATABASE_ADMIN_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      STACK_PID: '',
    },
    120_000,
  );
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
  const pidFile = path.join(cacheHome(), 'expiry-reminder', 'stack', 'stack.pid');
  const before = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : undefined;
  const failure = await stackCli('--backgrund').then(
    () => undefined,
    (err: Error & { code?: number; stderr?: string }) => err,
  );
  expect(failure?.code).toBe(1);
  expect(failure?.stderr).toContain('unknown argument --backgrund; usage: npm run stack');
  expect(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : undefined).toBe(before);
});
