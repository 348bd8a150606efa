/**
 * The outbox relay against the real broker: what arrives on the topic, what happens when the relay
 * dies between produce and mark, and two relays over thousands of rows.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../src/domain/names';
import schema from '../../docs/contracts/document-expiry-reminder.v1.schema.json';
import { eventPlacements, insertDocuments, outbox, unpublishedCount } from '../support/data';
import { consumeUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';
import { stackBrokers, stackKafka, testRelay } from '../support/relay';

const AS_OF_DATE = '2026-09-02';
const brokers = stackBrokers;

const stack = useIntegration('relay', { client: true, relayPoolSize: 6 });

const validate = addFormats(new Ajv2020({ allErrors: true, strict: true })).compile(schema);

/** A relay (not started) on the file's database, with its log lines kept. */
const newRelay = (env: Record<string, string> = {}) =>
  testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, env });

const unpublished = () => unpublishedCount(stack.db.admin);

test("a cycle's events arrive on the topic with the right key, headers and a schema-valid value, one per owner", async () => {
  const owners = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owners[0], daysLeft: 7 },
    { ownerUserId: owners[0], daysLeft: 30 },
    { ownerUserId: owners[1], daysLeft: 0 },
    { ownerUserId: owners[2], daysLeft: -5 },
  ]);
  const w = await stack.startWorker();
  const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue: w.taskQueue });
  await handle.result();
  await w.stop();
  const rows = await outbox(stack.db.admin);
  expect(rows).toHaveLength(3);
  const versions = () =>
    stack.db.admin.query<{ id: string; xmin: string }>('select id, xmin::text from profile.outbox_events order by id');
  const written = (await versions()).rows;

  const relay = newRelay();
  await relay.start();
  let received: ConsumedMessage[];
  try {
    received = (
      await consumeUntil(
        stackKafka(),
        (ms) => ms.filter((m) => m.headers.correlationId === handle.workflowId).length >= 3,
      )
    ).filter((m) => m.headers.correlationId === handle.workflowId);
    await waitFor(async () => (await unpublished()) === 0);
  } finally {
    await relay.stop();
  }

  expect(received.map((m) => m.key).sort()).toEqual([...owners].sort());
  for (const message of received) {
    const row = rows.find((r) => r.id === message.headers.messageId)!;
    expect(message.headers).toEqual({
      eventType: EVENT_TYPE,
      contractVersion: String(CONTRACT_VERSION),
      correlationId: handle.workflowId,
      aggregateType: 'Profile',
      aggregateId: message.key,
      messageId: row.id,
    });
    const value = JSON.parse(message.value);
    expect(validate(value)).toBe(true);
    expect(validate.errors ?? []).toEqual([]);
    expect(value).toEqual(row.payload);
  }
  // The events are never written again (no row version: each keeps the xmin of the cycle's transaction), and
  // the relay's deliveries say where Kafka appended each: the partition and offset a consumer read it at.
  expect((await versions()).rows).toEqual(written);
  expect(await eventPlacements(stack.db.admin)).toEqual(
    Object.fromEntries(received.map((m) => [m.headers.messageId, [m.partition, m.offset]])),
  );
});

test('the relay killed between produce and mark publishes the event again, with the same messageId', async () => {
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }]);
  const w = await stack.startWorker();
  await (await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue: w.taskQueue })).result();
  await w.stop();
  const [row] = await outbox(stack.db.admin);

  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/relay-process.ts')], {
    env: {
      ...process.env,
      // The relay reads RELAY_DATABASE_URL first; the production profile's environment has its own.
      DATABASE_URL: stack.db.relayUrl,
      RELAY_DATABASE_URL: stack.db.relayUrl,
      KAFKA_BROKERS: brokers(),
      CRASH_AFTER_SEND: '1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('exit', (c, s) => resolve([c, s])),
  );
  expect({ signal, stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });
  // Kafka has the event, the outbox does not know it: still unpublished.
  expect(await unpublished()).toBe(1);

  const relay = newRelay();
  await relay.start();
  try {
    await waitFor(async () => (await unpublished()) === 0);
  } finally {
    await relay.stop();
  }

  const copies = (
    await consumeUntil(stackKafka(), (ms) => ms.filter((m) => m.headers.messageId === row.id).length >= 2)
  ).filter((m) => m.headers.messageId === row.id);
  expect(copies).toHaveLength(2);
  expect(copies[0].value).toBe(copies[1].value);
  expect(copies[0].key).toBe(copies[1].key);
});

test('two relays at once over a few thousand rows publish every row, in order per key', async () => {
  const keys = Array.from({ length: 200 }, () => crypto.randomUUID());
  const batch = crypto.randomUUID();
  // 3,000 rows: 15 per key, each carrying its sequence number within the key.
  await stack.db.admin.query(
    `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id, created_at)
     select gen_random_uuid(), 'Profile', k.key::uuid, $2, k.key, 'RelayTest', 1,
            jsonb_build_object('seq', s.seq, 'key', k.key), $3, now() + make_interval(secs => s.seq * 0.001 + k.n * 0.000001)
       from unnest($1::text[]) with ordinality as k(key, n), generate_series(1, 15) as s(seq)`,
    [keys, TOPIC, batch],
  );
  const a = newRelay({ RELAY_BATCH_SIZE: '50' });
  const b = newRelay({ RELAY_BATCH_SIZE: '50' });
  await Promise.all([a.start(), b.start()]);
  try {
    await waitFor(async () => (await unpublished()) === 0, 120_000);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  expect(a.publishedTotal).toBeGreaterThan(0);
  expect(b.publishedTotal).toBeGreaterThan(0);
  expect(a.publishedTotal + b.publishedTotal).toBe(3_000);

  const ours = (
    await consumeUntil(
      stackKafka(),
      (ms) => ms.filter((m) => m.headers.correlationId === batch).length >= 3_000,
      120_000,
    )
  ).filter((m) => m.headers.correlationId === batch);
  expect(new Set(ours.map((m) => m.headers.messageId)).size).toBe(3_000);
  const seqByKey = new Map<string, number[]>();
  for (const m of ours) seqByKey.set(m.key, [...(seqByKey.get(m.key) ?? []), JSON.parse(m.value).seq]);
  for (const key of keys) expect(seqByKey.get(key)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
});

test('the relay deletes published rows past the retention and keeps the rest', async () => {
  await stack.db.admin.query(
    `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id, published_at)
     select gen_random_uuid(), 'Profile', gen_random_uuid(), $1, 'k' || n, 'RelayTest', 1, '{}'::jsonb, 'cleanup', p
       from (values (1, now() - interval '8 days'), (2, now() - interval '6 days'), (3, null::timestamptz)) as v(n, p)`,
    [TOPIC],
  );
  const relay = newRelay({ OUTBOX_RETENTION: '7d' });
  await relay.start();
  try {
    await waitFor(
      async () =>
        (await stack.db.admin.query(`select 1 from profile.outbox_messages where message_key = 'k1'`)).rowCount === 0,
    );
    await waitFor(async () => (await unpublished()) === 0);
  } finally {
    await relay.stop();
  }
  const { rows } = await stack.db.admin.query(`select message_key from profile.outbox_messages order by message_key`);
  expect(rows.map((r) => r.message_key)).toEqual(['k2', 'k3']);
});

test('a relay process stops cleanly on SIGTERM', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/relay-process.ts')], {
    env: {
      ...process.env,
      DATABASE_URL: stack.db.relayUrl,
      RELAY_DATABASE_URL: stack.db.relayUrl,
      KAFKA_BROKERS: brokers(),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) =>
    child.stdout.on('data', (c: Buffer) => c.toString().includes('RELAY_STARTED') && resolve()),
  );
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  expect(code).toBe(0);
});

describe('RELAY_LINGER', () => {
  /** Commits `commits` transactions of 4 rows each, `gapMs` apart, each with its own NOTIFY. */
  async function commitSeveral(commits: number, gapMs: number): Promise<void> {
    for (let i = 0; i < commits; i++) {
      if (i > 0) await sleep(gapMs);
      await stack.db.admin.query(
        `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type,
                                              contract_version, payload, correlation_id)
         select gen_random_uuid(), 'Profile', gen_random_uuid(), $1, gen_random_uuid()::text, 'RelayTest', 1,
                '{}'::jsonb, 'linger'
           from generate_series(1, 4)`,
        [TOPIC],
      );
    }
  }

  /**
   * Starts a relay of one lane (two could split a claim between them), woken by NOTIFY only, waits until it is
   * idle, lets `work` commit rows, and returns the sizes of its batches.
   */
  async function batchesOf(linger: string, work: () => Promise<void>): Promise<number[]> {
    const relay = newRelay({ RELAY_LINGER: linger, RELAY_POLL_INTERVAL: '1m', RELAY_CONCURRENCY: '1' });
    await relay.start();
    try {
      await sleep(300); // past the first, empty claims
      await work();
      await waitFor(async () => (await unpublished()) === 0, 30_000);
    } finally {
      await relay.stop();
    }
    return relay.logs.messages('published').map((l) => l.published as number);
  }

  test('rows committed within the linger go out in one claim, not one per commit', async () => {
    const batches = await batchesOf('2s', () => commitSeveral(5, 100));
    expect(batches).toEqual([20]);
  });

  test('with RELAY_LINGER=0 each commit is claimed as it comes', async () => {
    const batches = await batchesOf('0', () => commitSeveral(3, 700));
    expect(batches).toEqual([4, 4, 4]);
  });
});
