/**
 * The relay against the production profile's broker (issue 20): SASL_SSL with SCRAM-SHA-512, TLS from the
 * stack CA, and the StandardAuthorizer with the ACLs of ops/kafka/acls.sh. What it publishes is read back
 * by the broker's own console consumer, a client this project did not write; what the broker refuses (a
 * topic outside the relay's ACLs, a wrong password, a client without TLS) is refused with an error a
 * person can act on, and only the row naming the refused topic is parked.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from 'kafkajs';
import pg from 'pg';
import schema from '../../docs/contracts/document-expiry-reminder.v1.schema.json';
import { withTransaction } from '../../src/db/pool';
import { claimOwners } from '../support/claims';
import { TOPIC } from '../../src/domain/names';
import { createMigratedDatabase, type MigratedDatabase } from '../../scripts/stack/database';
import {
  ADMIN_CLIENT_PROPERTIES,
  KAFKA_USERS,
  kafkaTool,
  startKafka,
  type KafkaBroker,
} from '../../scripts/stack/kafka';
import { startPostgres, type PostgresServer } from '../../scripts/stack/postgres';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { insertDocuments } from '../support/data';
import { insertOutboxRows } from '../support/outbox-rows';
import { testRelay } from '../support/relay';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

const AS_OF = '2026-09-02';
/** A topic that exists but is outside the relay's ACLs. */
const FOREIGN_TOPIC = 'pin.profile.not-the-relays.v1';
/** A topic the relay may describe (so its metadata reads) but not write: refused at the produce request. */
const DESCRIBE_ONLY_TOPIC = 'pin.profile.describe-only.v1';

const validate = addFormats(new Ajv2020({ allErrors: true, strict: true })).compile(schema);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-'));
let secrets: StackSecrets;
let postgres: PostgresServer;
let broker: KafkaBroker;
let db: MigratedDatabase;
let admin: pg.Pool;
let relayPool: pg.Pool;

beforeAll(async () => {
  secrets = prepareStackSecrets(dir);
  const started = await Promise.allSettled([
    startPostgres(),
    startKafka({ secrets, dataDir: path.join(dir, 'kafka'), log: (line) => process.stderr.write(`${line}\n`) }),
  ]);
  if (started[0].status === 'fulfilled') postgres = started[0].value;
  if (started[1].status === 'fulfilled') broker = started[1].value;
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  db = await createMigratedDatabase(postgres.adminUrl, { prefix: 'prod_kafka' });
  admin = new pg.Pool({ connectionString: db.ownerUrl, max: 2 });
  relayPool = new pg.Pool({ connectionString: db.relayUrl, max: 6 });
});

afterAll(async () => {
  await relayPool?.end();
  await admin?.end();
  await db?.drop();
  await broker?.destroy();
  await postgres?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A kafkajs client as the stack's admin (a super user), over SASL_SSL. */
function adminClient(): Kafka {
  return new Kafka({
    clientId: 'production-test-admin',
    brokers: [broker.brokers],
    ssl: { ca: [fs.readFileSync(secrets.caPath)] },
    sasl: { mechanism: 'scram-sha-512', username: KAFKA_USERS.admin, password: secrets.passwords.kafkaTest },
    logLevel: logLevel.NOTHING,
  });
}

const newRelay = (env: Record<string, string> = {}) =>
  testRelay({
    pool: relayPool,
    url: db.relayUrl,
    brokers: broker.brokers,
    env: { ...broker.clientEnv('relay'), RELAY_MAX_ATTEMPTS: '2', ...env },
  });

interface ConsoleMessage {
  headers: Record<string, string>;
  key: string;
  value: string;
}

/**
 * Reads `count` messages of the job's topic from the beginning with the broker's own console consumer, over
 * SASL_SSL as the admin (ops/kafka/admin-client.properties, the file compose uses too).
 */
async function consoleConsume(count: number): Promise<ConsoleMessage[]> {
  const consumer = await kafkaTool('kafka-console-consumer');
  const { stdout } = await promisify(execFile)(
    consumer,
    [
      '--bootstrap-server',
      broker.brokers,
      '--command-config',
      ADMIN_CLIENT_PROPERTIES,
      '--topic',
      TOPIC,
      '--from-beginning',
      '--max-messages',
      String(count),
      '--timeout-ms',
      '60000',
      '--formatter-property',
      'print.headers=true',
      '--formatter-property',
      'print.key=true',
    ],
    { env: { ...process.env, ...broker.toolEnv() }, maxBuffer: 16 * 1024 * 1024 },
  );
  // One line per message: headers (k:v,k:v), key and value, tab-separated; JSON text holds no raw tab.
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [headers, key, value] = line.split('\t');
      return {
        headers: Object.fromEntries(
          headers.split(',').map((h) => [h.slice(0, h.indexOf(':')), h.slice(h.indexOf(':') + 1)]),
        ),
        key,
        value,
      };
    });
}

/** The job's own owner statement, as the worker's `remindOwners` activity runs it: real events in the outbox. */
async function queueReminders(owners: string[], jobRunId: string): Promise<void> {
  await insertDocuments(
    admin,
    AS_OF,
    owners.flatMap((ownerUserId) => [
      { ownerUserId, daysLeft: 7 },
      { ownerUserId, daysLeft: 0 },
    ]),
  );
  const worker = new pg.Pool({ connectionString: db.workerUrl, max: 1 });
  try {
    await withTransaction(worker, (tx) =>
      claimOwners(tx, {
        ownerUserIds: owners,
        asOfDate: AS_OF,
        thresholdsDays: [30, 7, 1, 0],
        retentionDays: 90,
        asOf: `${AS_OF}T03:00:00.000Z`,
        jobRunId,
      }),
    );
  } finally {
    await worker.end();
  }
}

/**
 * The events of `correlationId` as a person checks them: published once no lane's cursor is behind them and
 * their key is not held at or before them; a held key's refusals, error and parking are on its hold.
 */
async function outboxRows(correlationId: string) {
  const { rows } = await admin.query<{
    id: string;
    topic: string;
    published: boolean;
    parked: boolean;
    rejections: number;
    last_error: string | null;
  }>(
    `select e.id, e.topic, p.id is null as published, h.parked_at is not null as parked,
            coalesce(h.rejections, 0) as rejections, h.last_error
       from profile.outbox_events e
       left join profile.outbox_events_pending p on p.id = e.id
       left join profile.outbox_held h on h.id = e.id
      where e.correlation_id = $1 order by e.xid, e.id`,
    [correlationId],
  );
  return rows;
}

/** Events as a person would see them in the outbox: naming another topic than the job's. */
async function setTopic(ids: string[], topic: string): Promise<void> {
  await admin.query('update profile.outbox_events set topic = $2 where id = any($1::uuid[])', [ids, topic]);
}

test('the relay publishes over SASL_SSL, and the broker’s own console consumer reads schema-valid events', async () => {
  const run = `prod-publish-${crypto.randomUUID()}`;
  const owners = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  await queueReminders(owners, run);
  const relay = newRelay();
  await relay.start();
  try {
    await waitFor(async () => (await outboxRows(run)).every((r) => r.published));
  } finally {
    await relay.stop();
  }
  const messages = (await consoleConsume(owners.length)).filter((m) => m.headers.correlationId === run);
  expect(messages.map((m) => m.key).sort()).toEqual([...owners].sort());
  for (const m of messages) {
    const value = JSON.parse(m.value);
    expect({ ok: validate(value), errors: validate.errors }).toEqual({ ok: true, errors: null });
    expect(value.ownerUserId).toBe(m.key);
    expect(m.headers).toMatchObject({ eventType: 'DocumentExpiryReminderKafkaEvent', contractVersion: '1' });
  }
});

test('rows naming a topic outside the relay’s ACLs are refused by Kafka and parked; every other row flows on', async () => {
  const kafka = adminClient().admin();
  await kafka.connect();
  try {
    await kafka.createTopics({
      waitForLeaders: true,
      topics: [FOREIGN_TOPIC, DESCRIBE_ONLY_TOPIC].map((topic) => ({ topic, numPartitions: 1 })),
    });
    await kafka.createAcls({
      acl: [
        {
          resourceType: AclResourceTypes.TOPIC,
          resourceName: DESCRIBE_ONLY_TOPIC,
          resourcePatternType: ResourcePatternTypes.LITERAL,
          principal: `User:${KAFKA_USERS.relay}`,
          host: '*',
          operation: AclOperationTypes.DESCRIBE,
          permissionType: AclPermissionTypes.ALLOW,
        },
      ],
    });
  } finally {
    await kafka.disconnect();
  }
  const run = `prod-acl-${crypto.randomUUID()}`;
  const keys = Array.from({ length: 12 }, () => crypto.randomUUID());
  const seeded = await insertOutboxRows(
    admin,
    run,
    keys.map((key) => ({ key, seq: 1 })),
    'outbox_events',
  );
  // The first rows of the queue, so every early batch holds them.
  const foreign = seeded[0].id;
  const describeOnly = seeded[1].id;
  await setTopic([foreign], FOREIGN_TOPIC);
  await setTopic([describeOnly], DESCRIBE_ONLY_TOPIC);

  const relay = newRelay({ RELAY_BATCH_SIZE: '100' });
  await relay.start();
  try {
    await waitFor(async () => {
      const rows = await outboxRows(run);
      return rows.every((r) => r.published || r.parked);
    });
  } finally {
    await relay.stop();
  }
  const rows = await outboxRows(run);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const id of [foreign, describeOnly]) {
    const row = byId.get(id)!;
    expect(row).toMatchObject({ published: false, parked: true, rejections: 2 });
    expect(row.last_error).toMatch(/Kafka refused topic pin\.profile\.[a-z-]+\.v1 to the relay's user/);
    expect(row.last_error).toMatch(/ACL/);
  }
  expect(rows.filter((r) => r.published)).toHaveLength(keys.length - 2);
  const kafkaAdmin = adminClient().admin();
  await kafkaAdmin.connect();
  try {
    for (const topic of [FOREIGN_TOPIC, DESCRIBE_ONLY_TOPIC]) {
      expect((await kafkaAdmin.fetchTopicOffsets(topic)).map((p) => p.high)).toEqual(['0']);
    }
  } finally {
    await kafkaAdmin.disconnect();
  }
});

/**
 * Starts a relay, waits until two of its sends failed, stops it, and returns `correlationId`'s events and the
 * failures' errors as logged (a failed send is not written on the events: they are never updated).
 */
async function triedBy(relay: ReturnType<typeof newRelay>, correlationId: string) {
  const failures = () => relay.logs.messages('publish failed, backing off');
  await relay.start();
  try {
    await waitFor(async () => failures().length >= 2);
  } finally {
    await relay.stop();
  }
  return { rows: await outboxRows(correlationId), errors: failures().map((l) => String(l.err)) };
}

test('a wrong SCRAM password is refused: the relay says which variables to check, backs off, and parks nothing', async () => {
  const run = `prod-password-${crypto.randomUUID()}`;
  await insertOutboxRows(admin, run, [{ key: crypto.randomUUID(), seq: 1 }], 'outbox_events');
  const relay = newRelay({ KAFKA_SASL_PASSWORD: 'not-the-password' });
  const { rows, errors } = await triedBy(relay, run);
  expect(rows).toEqual([expect.objectContaining({ published: false, parked: false, rejections: 0 })]);
  for (const error of errors) {
    expect(error).toMatch(
      /Kafka refused the SASL login of "relay" \(SCRAM-SHA-512\): check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD/,
    );
  }
  // Loud: at error level, since nothing gets better until a person fixes the password.
  const failures = relay.logs.messages('publish failed, backing off');
  expect(failures.length).toBeGreaterThan(0);
  expect(failures.every((l) => l.level === 50 && /KAFKA_SASL_PASSWORD/.test(String(l.err)))).toBe(true);
  expect(relay.logs.raw.join('\n')).not.toContain('not-the-password');
});

test('a client without TLS is refused by the SASL_SSL listener, and the relay says to set KAFKA_SSL', async () => {
  const plain = new Kafka({
    clientId: 'production-test-plaintext',
    brokers: [broker.brokers],
    sasl: { mechanism: 'scram-sha-512', username: KAFKA_USERS.admin, password: secrets.passwords.kafkaTest },
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  }).admin();
  await expect(plain.connect()).rejects.toThrow(/Closed connection|ECONNRESET/);
  await plain.disconnect();

  const run = `prod-plaintext-${crypto.randomUUID()}`;
  await insertOutboxRows(admin, run, [{ key: crypto.randomUUID(), seq: 1 }], 'outbox_events');
  const relay = newRelay({ KAFKA_SSL: 'false', KAFKA_SSL_CA_PATH: '' });
  const { rows, errors } = await triedBy(relay, run);
  expect(rows).toEqual([expect.objectContaining({ published: false, parked: false, rejections: 0 })]);
  for (const error of errors) expect(error).toMatch(/KAFKA_SSL=true/);
});
