/**
 * The production profile's Temporal: the server (go.temporal.io/server v1.29.1) on PostgreSQL with mTLS on
 * its frontend, and its Web UI. The worker and the client connect through the job's own connection code
 * with the variables the stack prints, each with its own certificate; without one, the job is refused with
 * a message that says what to set.
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
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { findOrBuildTemporalCli } from '../../scripts/stack/temporal-cli';
import { startProductionTemporal, type ProductionTemporal } from '../../scripts/stack/temporal-server';
import { eventually } from '../support/wait';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';
import { greet, releaseSignal, stateQuery, waitForRelease } from './support/workflows';

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

/** The stack's variables with the client certificates of `name` instead of the worker's. */
function envAs(name: 'client' | 'worker', change: Record<string, string> = {}): NodeJS.ProcessEnv {
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
  postgres = await startProductionPostgres(secrets);
  // The first run on a machine builds the server, the SQL tool and the UI server with Go (minutes).
  temporal = await startProductionTemporal({
    adminUrl: postgres.adminUrl,
    secrets,
    // The profile's PostgreSQL takes Temporal's role over TLS only, as the stack passes it.
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
    expect((err as Error).message).toContain(
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
      expect((err as Error).message).toContain(
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
