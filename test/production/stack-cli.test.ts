/**
 * `npm run stack -- --production` for a shell, as a user runs it: `eval "$(npm run -s stack -- --production --background)"`
 * brings up the whole profile in the background and prints its variables; `npm run -s stack -- stop` ends
 * it and leaves nothing behind: no process, no folder of certificates and passwords.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config';
import { partitionWorkflowId, type CycleResult } from '../../src/domain/cycle';
import { OWNER_ACTIVITIES, TASK_QUEUE } from '../../src/domain/names';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { firstRunIdOf, runHistories } from '../../src/temporal/histories';
import { STACK_DATABASE } from '../../scripts/stack/database';
import { insertDocuments, outbox } from '../support/data';
import { EXPORT_LINE, runStackCli, useStateDir } from '../support/stack-cli';
import { processAlive } from '../support/wait';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const cacheHome = useStateDir('stack-cli-production-');

function stackCli(...args: string[]) {
  // Its own pid file and logs; the built servers and jars stay in the user's cache.
  const env: NodeJS.ProcessEnv = { ...process.env, STACK_STATE_DIR: cacheHome(), STACK_PID: '' };
  // A shell with the dev stack's variables must not make the production profile adopt its servers.
  for (const name of ['DATABASE_URL', 'MIGRATION_DATABASE_URL', 'KAFKA_BROKERS']) delete env[name];
  return runStackCli(args, env, 600_000);
}

const alive = processAlive;

/** Pids of the workers and relays the stack ran, read from their /proc entries while it runs. */
const jobPids: number[] = [];

/** The sum of one counter over the Prometheus pages at `urls` (space-separated), and each page's share. */
async function counterOf(urls: string, name: string): Promise<number[]> {
  return Promise.all(
    urls.split(' ').map(async (url) => {
      const text = await (await fetch(url)).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    }),
  );
}

/**
 * The profile runs the job as a deployment does: two workers poll the task queue (as `temporal task-queue
 * describe` shows an operator), a cycle started with the client queues one reminder per owner, the two
 * relays publish every row once, and the workers' and relays' counters add up to what the outbox holds.
 */
async function twoWorkersAndTwoRelaysShareACycle(env: Record<string, string>): Promise<void> {
  const workerUrls = env.STACK_WORKER_METRICS_URLS.split(' ');
  const relayUrls = env.STACK_RELAY_METRICS_URLS.split(' ');
  expect([workerUrls.length, relayUrls.length]).toEqual([2, 2]);
  for (const url of [...workerUrls, ...relayUrls]) {
    expect((await fetch(url.replace(/metrics$/, 'healthz'))).status).toBe(200);
  }
  // Each worker's scrape reads its deployment for the stranded-cycles gauge with the `worker` certificate,
  // which the profile's authorizer allows those reads (describe, count) and nothing that moves a cycle.
  expect(
    await counterOf(env.STACK_WORKER_METRICS_URLS, 'profile_document_expiry_reminder_stranded_refresh_errors_total'),
  ).toEqual([0, 0]);
  const cliEnv = { ...process.env, ...env };
  // Each worker polls once it is up; the stack is ready when the first has (its version is then current).
  const pollersNow = async () => {
    const described = await run(
      env.TEMPORAL_CLI_PATH,
      ['task-queue', 'describe', '--task-queue', TASK_QUEUE, '--legacy-mode', '--output', 'json'],
      { env: cliEnv },
    );
    return new Set([...described.stdout.matchAll(/"identity":\s*"([^"]+)"/g)].map((m) => m[1]));
  };
  let pollers = await pollersNow();
  for (const until = Date.now() + 30_000; pollers.size < 2 && Date.now() < until; pollers = await pollersNow()) {
    await sleep(500);
  }
  expect(pollers.size).toBe(2);
  for (const identity of pollers) jobPids.push(Number(identity.split('@')[0]));

  const owners = 120;
  const adminUrl = new URL(env.STACK_DATABASE_ADMIN_URL);
  adminUrl.pathname = `/${STACK_DATABASE}`;
  const admin = new pg.Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  try {
    const asOf = new Date().toISOString().slice(0, 10);
    await insertDocuments(
      admin,
      asOf,
      Array.from({ length: owners }, () => ({ daysLeft: 5 })),
    );
    const cycle = await run(
      process.execPath,
      // One page per activity (about 40): the spread is counted in activities, which 8 pages each would make few.
      [
        require.resolve('tsx/cli'),
        'src/client.ts',
        'cycle',
        'run',
        '--as-of',
        asOf,
        '--pages-per-claim',
        '1',
        '--wait',
      ],
      { cwd: ROOT, env: cliEnv, timeout: 300_000 },
    );
    expect(JSON.parse(cycle.stdout)).toMatchObject({ result: { status: 'completed', remindersSent: owners } });
    const deadline = Date.now() + 120_000;
    const unpublished = async () =>
      Number((await admin.query<{ n: string }>('select count(*) as n from profile.outbox_events_pending')).rows[0].n);
    while ((await unpublished()) > 0) {
      if (Date.now() > deadline) throw new Error('the two relays did not publish the outbox within 120 s');
      await sleep(500);
    }
    const rows = await outbox(admin);
    expect(rows).toHaveLength(owners);
    const queued = await counterOf(env.STACK_WORKER_METRICS_URLS, 'profile_document_expiry_reminders_total');
    const published = await counterOf(env.STACK_RELAY_METRICS_URLS, 'profile_outbox_relay_published_total');
    process.stderr.write(
      `reminders queued per worker ${queued.join(', ')}; published per relay ${published.join(', ')}\n`,
    );
    expect(queued.reduce((a, b) => a + b)).toBe(owners);
    expect(published.reduce((a, b) => a + b)).toBe(owners);
    await aBigCycleSpreadsOverBothWorkers(env, admin, asOf, queued);
  } finally {
    await admin.end();
  }
}

/**
 * A big day (20,000 owners) runs in partitions, and both workers take its page claims and owner groups: each ran at least
 * 30 % of them (the identity of each group's ActivityTaskStarted in the partitions' histories), their
 * counters add up to the result, and every owner got one event.
 */
async function aBigCycleSpreadsOverBothWorkers(
  env: Record<string, string>,
  admin: pg.Client,
  asOf: string,
  queuedBefore: number[],
): Promise<void> {
  const owners = 20_000;
  const before = (await outbox(admin)).length;
  await insertDocuments(
    admin,
    asOf,
    Array.from({ length: owners }, (_, i) => ({ daysLeft: i % 8 })),
  );
  const cycle = await run(
    process.execPath,
    [require.resolve('tsx/cli'), 'src/client.ts', 'cycle', 'run', '--as-of', asOf, '--wait'],
    { cwd: ROOT, env: { ...process.env, ...env }, timeout: 600_000 },
  );
  const { workflowId, result } = JSON.parse(cycle.stdout) as { workflowId: string; result: CycleResult };
  expect(result).toMatchObject({ status: 'completed', remindersSent: owners, ownersNotified: owners });
  expect(result.partitions).toBeGreaterThan(1);
  expect((await outbox(admin)).length - before).toBe(owners);

  const config = loadConfig({ ...process.env, ...env });
  const connection = await connectTemporal(temporalConnectionOptions(config), (o) => Connection.connect(o));
  try {
    const client = new Client({ connection, namespace: config.temporal.namespace });
    const groupsBy = new Map<string, number>();
    for (let index = 0; index < result.partitions!; index += 1) {
      const id = partitionWorkflowId(workflowId, { index, count: result.partitions! });
      for (const { history } of await runHistories(client, {
        workflowId: id,
        firstExecutionRunId: await firstRunIdOf(client, id),
      })) {
        const events = history.events ?? [];
        const groups = new Set(
          events
            .filter((e) => OWNER_ACTIVITIES.has(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''))
            .map((e) => String(e.eventId)),
        );
        for (const e of events) {
          const started = e.activityTaskStartedEventAttributes;
          if (started && groups.has(String(started.scheduledEventId))) {
            groupsBy.set(started.identity ?? '', (groupsBy.get(started.identity ?? '') ?? 0) + 1);
          }
        }
      }
    }
    const total = [...groupsBy.values()].reduce((a, b) => a + b, 0);
    const shares = [...groupsBy.entries()].map(([who, n]) => `${who} ${n} (${Math.round((100 * n) / total)} %)`);
    process.stderr.write(`groups of the ${owners}-owner cycle per worker: ${shares.join(', ')}\n`);
    expect(groupsBy.size).toBe(2);
    for (const n of groupsBy.values()) expect(n / total).toBeGreaterThanOrEqual(0.3);
  } finally {
    await connection.close();
  }
  const queued = await counterOf(env.STACK_WORKER_METRICS_URLS, 'profile_document_expiry_reminders_total');
  expect(queued.reduce((a, b) => a + b) - queuedBefore.reduce((a, b) => a + b)).toBe(owners);
}

test('in the background it prints the profile’s variables, they connect over TLS, and stop leaves nothing behind', async () => {
  const started = await stackCli('--production', '--background');
  const lines = started.stdout.trimEnd().split('\n');
  expect(lines.filter((l) => !EXPORT_LINE.test(l))).toEqual([]);
  const env = Object.fromEntries(lines.map((l) => /^export ([A-Z_]+)='(.*)'$/.exec(l)!.slice(1, 3)));
  expect(Object.keys(env)).toEqual(
    expect.arrayContaining([
      'STACK_PID',
      'DATABASE_URL',
      'RELAY_DATABASE_URL',
      'TEMPORAL_ADDRESS',
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      'KAFKA_BROKERS',
      'KAFKA_SSL_CA_PATH',
      'KAFKA_SASL_MECHANISM',
    ]),
  );
  const pid = Number(env.STACK_PID);
  const folder = path.dirname(path.dirname(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH));
  try {
    expect(env.DATABASE_URL).toContain('sslmode=verify-full');
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()');
      expect(rows).toEqual([{ ssl: true }]);
    } finally {
      await client.end();
    }
    expect(fs.existsSync(folder)).toBe(true);

    await twoWorkersAndTwoRelaysShareACycle(env);

    const stopped = await stackCli('stop');
    expect(stopped.stdout).toMatch(/^unset STACK_PID [A-Z_ ]+\n$/);
    expect(stopped.stdout).toContain(' KAFKA_SASL_PASSWORD');
    expect(alive(pid)).toBe(false);
    expect(fs.existsSync(folder)).toBe(false);
    for (const jobPid of jobPids) expect(alive(jobPid)).toBe(false);
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGTERM');
  }
}, 900_000);
