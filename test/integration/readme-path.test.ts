/**
 * README's "Run the pieces yourself" as a newcomer runs it: its fenced block, read out of README.md, run line by
 * line in one bash shell (`set -e`: a command that fails stops it) with a clean environment and a stack state
 * folder of its own. The block starts a dev stack of its own in the background (its own PostgreSQL, Temporal dev
 * server and Kafka broker, beside the suite's), migrates, seeds, runs the worker, makes its version current, runs
 * a cycle, starts the relay and stops everything. Before the block's last line (the stop) the shell waits while
 * this test checks what a user would: the cycle completed, every reminder it queued is in the outbox, published,
 * and on the topic.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { consumeUntil } from '../../scripts/stack/consume';
import { processAlive, sleep, waitFor } from '../support/wait';

const ROOT = path.resolve(__dirname, '..', '..');
const SECTION = '## Run the pieces yourself';
/** The whole block: a cold stack start, two Temporal round trips, each command's tsx start (seconds each). */
const BLOCK_TIMEOUT_MS = 8 * 60_000;

/** The commands of the section's fenced bash block, comments and blank lines left out. */
function readmeCommands(): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.indexOf(`\n${SECTION}\n`);
  if (section < 0) throw new Error(`README.md has no section "${SECTION}"`);
  const block = /```bash\n([^]*?)```/.exec(readme.slice(section));
  if (!block) throw new Error(`README.md's "${SECTION}" has no bash block`);
  return block[1]
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/**
 * This process's environment without anything that points at a stack (the suite's shared one): a newcomer's
 * shell has none of it, and the block must not lean on it.
 */
function newcomerEnv(stateDir: string, probeDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const stackish = /^(STACK_|TEMPORAL_|KAFKA_|RELAY_|METRICS_|WORKFLOW_BUNDLE_PATH$)|DATABASE_URL$|_PASSWORD$/;
  for (const [name, value] of Object.entries(process.env)) if (!stackish.test(name)) env[name] = value;
  return { ...env, STACK_STATE_DIR: stateDir, README_PROBE: probeDir };
}

/** Whether something listens on loopback port `port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-path-state-'));
const probeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-path-probe-'));

afterAll(() => {
  // The block's stack, if the block did not get to stop it: the pid file of its state folder names it.
  const pidFile = path.join(stateDir, 'stack.pid');
  const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : 0;
  if (pid > 0 && processAlive(pid)) process.kill(pid, 'SIGTERM');
  fs.rmSync(probeDir, { recursive: true, force: true });
  fs.rmSync(stateDir, { recursive: true, force: true });
});

test(
  "README's commands alone run a cycle whose reminders reach the outbox and the Kafka topic",
  async () => {
    const commands = readmeCommands();
    const stop = commands.length - 1;
    expect(commands[stop]).toContain('npm run -s stack -- stop');
    // The shell hands this test its variables (whole, by a rename), then waits until the checks are done.
    const envFile = path.join(probeDir, 'env');
    const go = path.join(probeDir, 'go');
    const probe =
      'jobs -p > "$README_PROBE/jobs"; env > "$README_PROBE/env.part" && mv "$README_PROBE/env.part" "$README_PROBE/env"; ' +
      'until [ -e "$README_PROBE/go" ]; do sleep 0.2; done';
    // As in a terminal: `set -m` gives each background job a process group of its own, which `kill %1` signals
    // whole (npm, its shell, tsx and node), where a script's `kill %1` would reach npm alone and leave the worker
    // running. Jobs still running when the shell exits (a command failed) are stopped the same way.
    const prelude = ['set -em', `trap 'for job in $(jobs -p); do kill -- "-$job" 2>/dev/null || true; done' EXIT`];
    const script = [...prelude, ...commands.slice(0, stop), probe, commands[stop]].join('\n');

    const outputFile = path.join(probeDir, 'output');
    const out = fs.openSync(outputFile, 'a');
    const shell = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: newcomerEnv(stateDir, probeDir),
      stdio: ['ignore', out, out],
      detached: true,
    });
    fs.closeSync(out);
    const exited = new Promise<number | null>((resolve) => shell.once('exit', (code) => resolve(code)));
    const output = () => fs.readFileSync(outputFile, 'utf8');
    const release = () => fs.writeFileSync(go, '');
    try {
      for (const deadline = Date.now() + BLOCK_TIMEOUT_MS; !fs.existsSync(envFile); await sleep(500)) {
        if (shell.exitCode !== null || shell.signalCode !== null) {
          throw new Error(`the block stopped before its last line (exit ${shell.exitCode}):\n${output()}`);
        }
        if (Date.now() > deadline) throw new Error(`the block did not get to its last line in time:\n${output()}`);
      }
      const env = Object.fromEntries(
        fs
          .readFileSync(envFile, 'utf8')
          .split('\n')
          .map((line) => /^([A-Z0-9_]+)=(.*)$/.exec(line)?.slice(1, 3) ?? [])
          .filter((pair) => pair.length === 2),
      ) as Record<string, string>;
      expect(env.DATABASE_URL).toMatch(/^postgres:\/\/expiry_reminder_worker:/);

      // The cycle's result, as `cycle run --wait` printed it.
      const owners = Number(/"status": "completed",[^]*?"ownersNotified": (\d+)/.exec(output())?.[1]);
      expect(owners).toBeGreaterThan(0);

      const admin = new pg.Client({ connectionString: env.MIGRATION_DATABASE_URL });
      await admin.connect();
      try {
        const rows = async () =>
          (
            await admin.query<{ key: string; published: boolean }>(
              `select e.message_key as key, p.id is null as published
                 from profile.outbox_events e left join profile.outbox_events_pending p on p.id = e.id`,
            )
          ).rows;
        await waitFor(async () => (await rows()).every((row) => row.published), 60_000, 500);
        const outbox = await rows();
        expect(outbox).toHaveLength(owners);
        const onTopic = await consumeUntil(env.KAFKA_BROKERS, (messages) => messages.length >= owners, 60_000);
        expect(onTopic.map((m) => m.key).sort()).toEqual(outbox.map((row) => row.key).sort());
      } finally {
        await admin.end();
      }

      release();
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise((resolve) => {
          timer = setTimeout(() => resolve('still running after 2 minutes'), 120_000);
        }),
      ]);
      clearTimeout(timer);
      expect({ code, output: code === 0 ? '' : output() }).toEqual({ code: 0, output: '' });
      // Nothing left running: the stack, and the worker and relay that held the metrics ports the block gave them.
      expect(processAlive(Number(env.STACK_PID))).toBe(false);
      await waitFor(async () => !(await listening(9464)) && !(await listening(9465)), 30_000, 500);
    } finally {
      release();
      // A check that failed or timed out: the shell's exit trap stops its jobs; the ones the probe listed, in case.
      if (shell.exitCode === null && shell.signalCode === null) shell.kill('SIGTERM');
      const jobs = path.join(probeDir, 'jobs');
      for (const job of fs.existsSync(jobs) ? fs.readFileSync(jobs, 'utf8').split('\n').filter(Boolean) : []) {
        if (processAlive(Number(job))) process.kill(-Number(job), 'SIGTERM');
      }
    }
  },
  BLOCK_TIMEOUT_MS + 4 * 60_000,
);
