/**
 * The production profile's Temporal: the server (go.temporal.io/server v1.29.1) on PostgreSQL with mTLS on
 * its frontend, and its Web UI. The worker and the client connect through the job's own connection code
 * with the variables the stack prints, each with its own certificate; without one, the job is refused with
 * a message that says what to set. Each certificate may do its own job only (ops/temporal/identities.yaml).
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig } from '../../src/config';
import { UnavailableError } from '../../src/run-main';
import { ConfigError } from '../../src/config/errors';
import {
  connectTemporal,
  temporalConnectionOptions,
  withTemporalPermission,
  type TemporalConnectOptions,
} from '../../src/temporal/connection';
import { prepareStackSecrets, type CertName, type StackSecrets } from '../../scripts/stack/secrets';
import { findOrBuildTemporalCli } from '../../scripts/stack/temporal-cli';
import { startProductionTemporal, type ProductionTemporal } from '../../scripts/stack/temporal-server';
import { eventually } from '../support/wait';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';
import { greet, releaseSignal, stateQuery, waitForRelease } from './support/workflows';
import { errorOf } from '../../src/domain/failures';
import { makeCurrent } from '../../src/operations/deployment';
import { workflowsOfRuns } from '../../src/operations/explain-history';

jest.setTimeout(120_000);

const TASK_QUEUE = 'production-temporal';
let secrets: StackSecrets;
let postgres: ProductionPostgres;
let temporal: ProductionTemporal;
let workerConnection: NativeConnection;
let worker: Worker;
let workerRun: Promise<void>;
let connection: Connection;
let client: Client;
let cliPath: string;

/** The stack's variables with the client certificate of `name`. */
function envAs(name: CertName, change: Record<string, string> = {}): NodeJS.ProcessEnv {
  const pair = secrets.cert(name);
  return {
    ...temporal.env,
    TEMPORAL_TLS_CLIENT_CERT_PATH: pair.cert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: pair.key,
    ...change,
  };
}

/** The `temporal` CLI with `env` only (its own config folder, so a developer's temporal.toml is not read). */
function cli(env: NodeJS.ProcessEnv, ...args: string[]) {
  return spawnSync(cliPath, args, {
    env: { PATH: process.env.PATH, HOME: secrets.dir, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

beforeAll(async () => {
  // The worker's state changes are not this file's subject.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  cliPath = findOrBuildTemporalCli() ?? 'temporal';
  secrets = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-')));
  postgres = await startProductionPostgres(secrets, 'temporal');
  // The first run on a machine builds the server, the SQL tool and the UI server with Go (minutes).
  temporal = await startProductionTemporal({
    adminUrl: postgres.adminUrl,
    secrets,
    // Temporal's own cluster takes its role over TLS only, as the stack passes it.
    dbTls: { caFile: secrets.caPath },
  });
  const workerOptions = temporalConnectionOptions(loadConfig(envAs('worker')));
  workerConnection = await connectTemporal(workerOptions, (o) => NativeConnection.connect(o));
  worker = await Worker.create({
    connection: workerConnection,
    namespace: 'default',
    taskQueue: TASK_QUEUE,
    workflowsPath: require.resolve('./support/workflows'),
  });
  workerRun = worker.run();
  connection = await connectTemporal(temporalConnectionOptions(loadConfig(envAs('client'))), (o) =>
    Connection.connect(o),
  );
  client = new Client({ connection, namespace: 'default' });
}, 900_000);

afterAll(async () => {
  if (worker && worker.getState() === 'RUNNING') worker.shutdown();
  await workerRun?.catch(() => {});
  await workerConnection?.close();
  await connection?.close();
  await temporal?.stop();
  await postgres?.stop();
  if (secrets) fs.rmSync(secrets.dir, { recursive: true, force: true });
});

const workflowId = (label: string) => `${label}-${crypto.randomBytes(4).toString('hex')}`;

describe('the production Temporal server', () => {
  it('a client with the client certificate starts a workflow that a worker with the worker certificate completes', async () => {
    const result = await client.workflow.execute(greet, {
      taskQueue: TASK_QUEUE,
      workflowId: workflowId('greet'),
      args: ['production'],
    });
    expect(result).toBe('hello production');
  });

  it('the temporal CLI, with the variables the stack prints, lists that workflow over mTLS as the cli certificate', async () => {
    const id = workflowId('listed');
    await client.workflow.execute(greet, { taskQueue: TASK_QUEUE, workflowId: id, args: ['cli'] });
    const listed = await eventually(async () => {
      const res = cli(temporal.env, 'workflow', 'list', '--query', `WorkflowId = '${id}'`, '--output', 'json');
      if (res.status !== 0) throw new Error(`temporal workflow list failed: ${res.stderr}`);
      const rows = JSON.parse(res.stdout || '[]') as { execution: { workflowId: string }; status: string }[];
      return rows.length > 0 ? rows : undefined;
    }, `${id} in the visibility store`);
    expect(listed.map((r) => [r.execution.workflowId, r.status])).toEqual([
      [id, 'WORKFLOW_EXECUTION_STATUS_COMPLETED'],
    ]);
  });

  it('has the cycle search attributes registered in namespace default', async () => {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(customAttributes ?? {})).toEqual(
      expect.arrayContaining(['ReminderAsOf', 'ReminderOutcome', 'RemindersSent']),
    );
  });

  it('a client without a certificate is refused, with a message that names the variables to set', async () => {
    const env = envAs('client', { TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' });
    const err = await connectTemporal(temporalConnectionOptions(loadConfig(env)), (o) => Connection.connect(o)).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnavailableError);
    expect(errorOf(err).message).toContain(
      `The Temporal frontend at ${temporal.address} requires a client certificate (mutual TLS) and this process presented none: ` +
        'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH',
    );
    // The CLI is refused too (in its own words, which vary with the moment the server hangs up).
    const res = cli({ ...env, TEMPORAL_TLS_CERT: '', TEMPORAL_TLS_KEY: '' }, 'workflow', 'list', '--limit', '1');
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(/failed reaching server/);
  });

  it('a client certificate of another CA is refused, with a message that says so', async () => {
    const other = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-other-')));
    try {
      const env = envAs('client', {
        TEMPORAL_TLS_CLIENT_CERT_PATH: other.cert('client').cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: other.cert('client').key,
      });
      const err = await connectTemporal(temporalConnectionOptions(loadConfig(env)), (o) =>
        NativeConnection.connect(o),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnavailableError);
      expect(errorOf(err).message).toContain(
        `The Temporal frontend at ${temporal.address} refused the client certificate of TEMPORAL_TLS_CLIENT_CERT_PATH`,
      );
    } finally {
      fs.rmSync(other.dir, { recursive: true, force: true });
    }
  });

  it('the Web UI answers and lists namespace default', async () => {
    const uiUrl = temporal.uiUrl!;
    const index = await fetch(`${uiUrl}/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('<html');
    const res = await fetch(`${uiUrl}/api/v1/namespaces`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { namespaces: { namespaceInfo: { name: string } }[] };
    expect(body.namespaces.map((n) => n.namespaceInfo.name)).toContain('default');
  });

  it('a workflow started before a server restart keeps its state and completes after it', async () => {
    const handle = await client.workflow.start(waitForRelease, {
      taskQueue: TASK_QUEUE,
      workflowId: workflowId('restart'),
    });
    // The worker has run its first task: the workflow is waiting, with that state in PostgreSQL.
    await eventually(async () => ((await handle.query(stateQuery)) === 'waiting' ? true : undefined), 'the first task');
    await temporal.restart(1_000);
    await handle.signal(releaseSignal, 'after the restart');
    expect(await handle.result()).toBe('released: after the restart');
    const { runId } = await handle.describe();
    expect(runId).toBe(handle.firstExecutionRunId);
  });
});

/** A client of the job's connection code holding the certificate `name`. */
async function clientAs(
  name: CertName,
): Promise<{ client: Client; options: TemporalConnectOptions; close(): Promise<void> }> {
  const options = temporalConnectionOptions(loadConfig(envAs(name)));
  const conn = await connectTemporal(options, (o) => Connection.connect(o));
  return { client: new Client({ connection: conn, namespace: 'default' }), options, close: () => conn.close() };
}

/** What `fn` threw, refused as the job's client would report it. */
async function refusedAs(name: CertName, kind: 'client' | 'worker', fn: (c: Client) => Promise<unknown>) {
  const as = await clientAs(name);
  try {
    return await withTemporalPermission(as.options, kind, 'default', () => fn(as.client)).then(
      () => undefined,
      (e: unknown) => e,
    );
  } finally {
    await as.close();
  }
}

/** The message every refusal of the job's processes starts with, for the certificate `cn`. */
const refusal = (kind: 'client' | 'worker', cn: string) =>
  `The Temporal frontend at ${temporal.address} refused this ${kind}'s call (permission denied): it presented ` +
  `the certificate CN=${cn} (TEMPORAL_TLS_CLIENT_CERT_PATH), and a ${kind} needs `;

describe('each certificate does its own job only', () => {
  it('the worker certificate polls and completes, and may not start, list or terminate a workflow', async () => {
    // Polls and completes: the worker of beforeAll runs as `worker`.
    const id = workflowId('worker-only');
    await expect(client.workflow.execute(greet, { taskQueue: TASK_QUEUE, workflowId: id, args: ['w'] })).resolves.toBe(
      'hello w',
    );
    const start = await refusedAs('worker', 'client', (c) =>
      c.workflow.start(greet, { taskQueue: TASK_QUEUE, workflowId: workflowId('by-worker'), args: ['x'] }),
    );
    expect(start).toBeInstanceOf(ConfigError);
    expect((start as Error).message).toContain(refusal('client', 'worker'));
    const list = await refusedAs('worker', 'client', async (c) => {
      for await (const _ of c.workflow.list({ query: `WorkflowId = '${id}'` })) break;
    });
    expect((list as Error).message).toContain(refusal('client', 'worker'));
    const terminate = await refusedAs('worker', 'client', (c) => c.workflow.getHandle(id).terminate('no'));
    expect((terminate as Error).message).toContain(refusal('client', 'worker'));
  });

  it('the worker certificate may not change which version is current; the client certificate does, and a pinned workflow runs on it', async () => {
    const taskQueue = workflowId('versioned');
    const deploymentName = workflowId('deployment');
    const version = { deploymentName, buildId: 'n' };
    const versioned = await Worker.create({
      connection: workerConnection,
      namespace: 'default',
      taskQueue,
      workflowsPath: require.resolve('./support/workflows'),
      workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
    });
    const running = versioned.run();
    try {
      const target = { temporal: { ...loadConfig(envAs('client')).temporal, taskQueue, deploymentName } };
      const byWorker = await refusedAs('worker', 'client', (c) =>
        c.workflowService.setWorkerDeploymentCurrentVersion({ namespace: 'default', deploymentName, buildId: 'n' }),
      );
      expect((byWorker as Error).message).toContain(refusal('client', 'worker'));
      await expect(makeCurrent(client, target, 'n', { waitForPollersMs: 30_000 })).resolves.toEqual(
        expect.objectContaining({ current: 'n' }),
      );
      const handle = await client.workflow.start(greet, { taskQueue, workflowId: workflowId('pinned'), args: ['v'] });
      await expect(handle.result()).resolves.toBe('hello v');
      const { events } = await handle.fetchHistory();
      const builds = (events ?? []).flatMap((e) =>
        e.workflowTaskCompletedEventAttributes
          ? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId]
          : [],
      );
      expect(new Set(builds)).toEqual(new Set(['n']));
    } finally {
      versioned.shutdown();
      await running;
    }
  });

  it('the cli certificate manages a schedule and the search attributes with the temporal CLI, in its namespace only', async () => {
    const scheduleId = workflowId('cli-schedule');
    const create = cli(
      temporal.env,
      'schedule',
      'create',
      '--schedule-id',
      scheduleId,
      '--interval',
      '1h',
      '--paused',
      '--task-queue',
      TASK_QUEUE,
      '--type',
      'greet',
      '--workflow-id',
      `${scheduleId}-run`,
      '--input',
      '"schedule"',
    );
    expect(create.stderr).toBe('');
    expect(create.status).toBe(0);
    const triggered = cli(temporal.env, 'schedule', 'trigger', '--schedule-id', scheduleId);
    expect(triggered.status).toBe(0);
    const described = cli(temporal.env, 'schedule', 'describe', '--schedule-id', scheduleId, '--output', 'json');
    expect(described.status).toBe(0);
    expect(JSON.parse(described.stdout).schedule.state.paused).toBe(true);
    expect(cli(temporal.env, 'schedule', 'delete', '--schedule-id', scheduleId).status).toBe(0);
    const listed = cli(temporal.env, 'operator', 'search-attribute', 'list', '--output', 'json');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain('ReminderAsOf');
    // Its grants end at the job's namespace: it may not make another one.
    const other = cli(temporal.env, 'operator', 'namespace', 'create', '--namespace', workflowId('other'));
    expect(other.status).not.toBe(0);
    expect(other.stderr).toMatch(/Request unauthorized/);
  });

  it('the ui-client certificate reads (lists workflows, the Web UI too) and may not start or terminate one', async () => {
    const id = workflowId('ui-reads');
    await client.workflow.execute(greet, { taskQueue: TASK_QUEUE, workflowId: id, args: ['ui'] });
    const ui = await clientAs('ui-client');
    try {
      const seen = await eventually(async () => {
        const ids: string[] = [];
        for await (const w of ui.client.workflow.list({ query: `WorkflowId = '${id}'` })) ids.push(w.workflowId);
        return ids.length > 0 ? ids : undefined;
      }, `${id} listed as ui-client`);
      expect(seen).toEqual([id]);
    } finally {
      await ui.close();
    }
    const res = await fetch(
      `${temporal.uiUrl}/api/v1/namespaces/default/workflows?query=${encodeURIComponent(`WorkflowId = '${id}'`)}`,
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { executions: { execution: { workflowId: string } }[] };
    expect(body.executions.map((e) => e.execution.workflowId)).toEqual([id]);
    const start = await refusedAs('ui-client', 'client', (c) =>
      c.workflow.start(greet, { taskQueue: TASK_QUEUE, workflowId: workflowId('by-ui'), args: ['x'] }),
    );
    expect((start as Error).message).toContain(refusal('client', 'ui-client'));
    const terminate = await refusedAs('ui-client', 'client', (c) => c.workflow.getHandle(id).terminate('no'));
    expect((terminate as Error).message).toContain(refusal('client', 'ui-client'));
  });

  it("the support certificate reads what explain asks (a run's workflow by its run id, its history) and may not start or terminate one", async () => {
    const id = workflowId('support-reads');
    const handle = await client.workflow.start(greet, { taskQueue: TASK_QUEUE, workflowId: id, args: ['support'] });
    await handle.result();
    const support = await clientAs('support');
    try {
      const found = await eventually(async () => {
        const byRun = await workflowsOfRuns(support.client, [handle.firstExecutionRunId]);
        return byRun.size > 0 ? byRun : undefined;
      }, `${id} found by run id as support`);
      expect([...found]).toEqual([[handle.firstExecutionRunId, id]]);
      const history = await support.client.workflow.getHandle(id, handle.firstExecutionRunId).fetchHistory();
      expect(history.events?.length).toBeGreaterThan(0);
    } finally {
      await support.close();
    }
    const start = await refusedAs('support', 'client', (c) =>
      c.workflow.start(greet, { taskQueue: TASK_QUEUE, workflowId: workflowId('by-support'), args: ['x'] }),
    );
    expect((start as Error).message).toContain(refusal('client', 'support'));
    const terminate = await refusedAs('support', 'client', (c) => c.workflow.getHandle(id).terminate('no'));
    expect((terminate as Error).message).toContain(refusal('client', 'support'));
  });

  it.each(['relay', 'postgres'] as const)(
    'the %s certificate (of the same CA) is refused as a worker and as a client, with a message that says what to set',
    async (name) => {
      const options = temporalConnectionOptions(loadConfig(envAs(name)));
      const conn = await connectTemporal(options, (o) => NativeConnection.connect(o));
      try {
        const err = await withTemporalPermission(options, 'worker', 'default', () =>
          // Activities only: the SDK leaves a refused worker's workflow threads running (the job's worker
          // process exits on the refusal, this test process must not keep them).
          Worker.create({
            connection: conn,
            namespace: 'default',
            taskQueue: `${TASK_QUEUE}-${name}`,
            activities: { noop: async () => undefined },
          }),
        ).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(ConfigError);
        expect(errorOf(err).message).toContain(
          `${refusal('worker', name)}the worker role (poll and complete tasks) in namespace default. Set ` +
            'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (aliases TEMPORAL_TLS_CERT_PATH and ' +
            'TEMPORAL_TLS_KEY_PATH) to a certificate the server grants that (on the production profile: worker.pem',
        );
      } finally {
        await conn.close();
      }
      const asClient = await refusedAs(name, 'client', (c) => c.workflow.count());
      expect((asClient as Error).message).toContain(refusal('client', name));
      // The CLI, in its own words.
      const pair = secrets.cert(name);
      const res = cli(
        { ...temporal.env, TEMPORAL_TLS_CERT: pair.cert, TEMPORAL_TLS_KEY: pair.key },
        'workflow',
        'list',
      );
      expect(res.status).not.toBe(0);
      expect(res.stderr).toMatch(/Request unauthorized/);
    },
  );
});
