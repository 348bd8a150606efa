/**
 * docker-compose.yml's Kafka as the file holds it, without a Docker engine: the `kafka` service's start
 * script (storage formatted with the SCRAM users on the first start only, then the broker on
 * ops/kafka/production.properties), its health check and the `kafka-acls` job. The broker's own tools
 * stand in for the image's /opt/kafka/bin, and this machine's host, ports and folders for the containers'.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { TOPIC } from '../../src/domain/names';
import { freePort } from '../../src/observability/ports';
import { ensureKafkaJars, kafkaTool } from '../../scripts/stack/kafka';
import { javaBinary } from '../../scripts/stack/maven';
import { productionFile } from '../../scripts/stack/production-files';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { composeEnv, composeHealthCommand, composeScript } from '../support/compose';
import { watchCommandLines } from '../support/processes';

jest.setTimeout(180_000);

const sh = promisify(execFile);
const LOG4J = path.resolve(__dirname, '../../ops/kafka/log4j2.properties');

let secrets: StackSecrets;
let bin: string;
let port: number;
let logFile: string;
let env: NodeJS.ProcessEnv;
let broker: ChildProcess | undefined;
const passwords = {
  broker: `broker-${crypto.randomBytes(9).toString('base64url')}`,
  admin: `admin-${crypto.randomBytes(9).toString('base64url')}`,
  relay: `relay-${crypto.randomBytes(9).toString('base64url')}`,
};
/** Command lines seen while the service formatted its storage and started, each with a pid that had it. */
let seen = new Map<string, number>();

/** `script` with the image's tools, the mounted files and the broker's address of this machine. */
function onThisMachine(script: string): string {
  return script
    .replaceAll('/opt/kafka/bin', bin)
    .replaceAll('/etc/expiry-reminder/kafka/', `${path.dirname(productionFile('kafkaProperties'))}/`)
    .replaceAll('kafka:9092', `localhost:${port}`);
}

function launcher(name: string, main: string, libs: string): void {
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  fs.writeFileSync(
    path.join(bin, name),
    `#!/bin/sh\nexec ${quote(javaBinary())} -Xmx512m ${quote(`-Dlog4j2.configurationFile=${LOG4J}`)} ` +
      `-cp ${quote(path.join(libs, '*'))} ${main} "$@"\n`,
    { mode: 0o755 },
  );
}

/** Runs the `kafka` service's script (it ends in `exec` of the broker) and waits for its health check. */
async function startBroker(): Promise<void> {
  const out = fs.openSync(logFile, 'a');
  const child = spawn('bash', ['-c', onThisMachine(composeScript('kafka'))], { env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  broker = child;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`the broker exited (${child.exitCode}): ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    try {
      await sh('bash', ['-c', onThisMachine(composeHealthCommand('kafka'))], { env });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(1_000);
  }
}

async function stopBroker(): Promise<void> {
  const child = broker;
  broker = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

function client(username: string, password: string): Kafka {
  return new Kafka({
    clientId: 'compose-kafka-test',
    brokers: [`localhost:${port}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    ssl: { ca: [fs.readFileSync(secrets.caPath)] },
    sasl: { mechanism: 'scram-sha-512', username, password },
  });
}

/** As the relay: creates `topic` and writes one message to it. */
async function relayWrites(topic: string, password = passwords.relay): Promise<void> {
  const kafka = client('relay', password);
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: 'k', value: 'v' }] });
  } finally {
    await producer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
  }
}

beforeAll(async () => {
  secrets = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-')));
  bin = path.join(secrets.dir, 'kafka-bin');
  fs.mkdirSync(bin);
  const libs = await ensureKafkaJars();
  launcher('kafka-storage.sh', 'kafka.tools.StorageTool', libs);
  launcher('kafka-server-start.sh', 'kafka.Kafka', libs);
  fs.symlinkSync(await kafkaTool('kafka-acls'), path.join(bin, 'kafka-acls.sh'));
  fs.symlinkSync(await kafkaTool('kafka-broker-api-versions'), path.join(bin, 'kafka-broker-api-versions.sh'));
  port = await freePort();
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  logFile = path.join(secrets.dir, 'broker.log');
  env = {
    ...composeEnv('kafka'),
    PATH: process.env.PATH,
    BROKER_HOST: '127.0.0.1',
    BROKER_ADVERTISED_HOST: 'localhost',
    BROKER_PORT: String(port),
    BROKER_CONTROLLER_PORT: String(controllerPort),
    BROKER_DATA_DIR: path.join(secrets.dir, 'kafka-data'),
    BROKER_TLS_DIR: path.dirname(secrets.caPath),
    BROKER_SCRAM_PASSWORD: passwords.broker,
    BROKER_ADMIN_PASSWORD: passwords.admin,
    RELAY_SCRAM_PASSWORD: passwords.relay,
  };
  const stopWatching = watchCommandLines();
  try {
    await startBroker();
  } finally {
    seen = stopWatching();
  }
}, 900_000);

afterAll(async () => {
  await stopBroker();
  if (secrets) fs.rmSync(secrets.dir, { recursive: true, force: true });
});

test('the kafka service formats its storage with the SCRAM users and passes its health check as admin over SASL_SSL', async () => {
  expect(composeEnv('kafka')).toMatchObject({ BROKER_DATA_DIR: '/var/lib/kafka/data', BROKER_TLS_DIR: '/certs' });
  expect(fs.existsSync(path.join(env.BROKER_DATA_DIR!, 'meta.properties'))).toBe(true);
  await expect(relayWrites(TOPIC, 'not-the-password')).rejects.toThrow(/SASL|authentication/i);
});

test('no command line holds a SCRAM password while the service formats its storage, and the broker keeps its own only', () => {
  const leaks = [...seen].filter(([line]) => Object.values(passwords).some((password) => line.includes(password)));
  expect(leaks).toEqual([]);
  expect([...seen.keys()].some((line) => line.includes('kafka.tools.StorageTool format'))).toBe(true);
  const environ = fs.readFileSync(`/proc/${broker!.pid}/environ`, 'utf8');
  expect(environ).toContain(`BROKER_SCRAM_PASSWORD=${passwords.broker}`);
  expect(environ).not.toContain(passwords.admin);
  expect(environ).not.toContain(passwords.relay);
});

test('after kafka-acls the relay may create and write the job’s topic and no other', async () => {
  await sh('bash', ['-c', onThisMachine(composeScript('kafka-acls'))], {
    env: {
      PATH: process.env.PATH,
      ...composeEnv('kafka-acls'),
      BROKER_TLS_DIR: env.BROKER_TLS_DIR,
      BROKER_ADMIN_PASSWORD: passwords.admin,
    },
  });
  await relayWrites(TOPIC);
  await expect(relayWrites('pin.profile.not-the-jobs-topic.v1')).rejects.toMatchObject({
    errors: [expect.objectContaining({ type: 'TOPIC_AUTHORIZATION_FAILED' })],
  });
});

test('started again on its data, it does not format again and keeps its users and ACLs', async () => {
  await stopBroker();
  await startBroker();
  expect(fs.readFileSync(logFile, 'utf8').match(/Formatting/g)).toHaveLength(1);
  await relayWrites(TOPIC);
});
