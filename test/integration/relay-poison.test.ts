/**
 * Issue 12: a row Kafka refuses (a payload above the broker's message.max.bytes) against the real broker.
 * It is found, parked after RELAY_MAX_ATTEMPTS, and every other key flows on meanwhile; its key's later
 * rows wait, and follow it once an operator fixed it and ran `outbox retry`. Nothing is published twice.
 */
import crypto from 'node:crypto';
import type { Message } from 'kafkajs';
import { loadConfig } from '../../src/config';
import { outboxBacklog } from '../../src/db/outbox';
import { TOPIC } from '../../src/domain/names';
import { consumeUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { copiesById, insertOutboxRows, keysOn, type SeededRow } from '../support/outbox-rows';
import { ensureStackTopic, stackKafka, testRelay } from '../support/relay';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';
import { runClient } from '../support/cli';

const TOO_LARGE = 2_000_000;

const stack = useIntegration('relay-poison', { relayPoolSize: 6 });

const newRelay = (env: Record<string, string> = {}) =>
  testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, env });

/** `npm run client -- …args` in-process, as the relay's role; resolves with its JSON, rejects with its error. */
async function client(...args: string[]): Promise<Record<string, unknown>> {
  return clientAs(stack.db.relayUrl, ...args);
}

/** The client in-process with `url` as its database connection. */
async function clientAs(url: string, ...args: string[]): Promise<Record<string, unknown>> {
  return (await runClient(() => loadConfig({ DATABASE_URL: url }), args)).output;
}

async function row(id: string) {
  const { rows } = await stack.db.admin.query(
    `select published_at, parked_at, attempts, rejections, last_error from profile.outbox_messages where id = $1`,
    [id],
  );
  return rows[0];
}

async function unpublishedExcept(ids: string[]): Promise<number> {
  const { rows } = await stack.db.admin.query(
    `select count(*)::int as n from profile.outbox_messages where published_at is null and not (id = any($1::uuid[]))`,
    [ids],
  );
  return rows[0].n;
}

/** What reached the topic for `correlationId`, once `until` holds for those messages. */
async function topicCopies(
  correlationId: string,
  until: (ours: ConsumedMessage[]) => boolean,
): Promise<ConsumedMessage[]> {
  const mine = (ms: ConsumedMessage[]) => ms.filter((m) => m.headers.correlationId === correlationId);
  return mine(await consumeUntil(stackKafka(), (ms) => until(mine(ms))));
}

/** Sequence numbers per key, in topic order (a key lives on one partition, whose order the consumer keeps). */
function seqsByKey(messages: ConsumedMessage[]): Map<string, number[]> {
  const byKey = new Map<string, number[]>();
  for (const m of messages) byKey.set(m.key, [...(byKey.get(m.key) ?? []), JSON.parse(m.value).seq]);
  return byKey;
}

test('the broker answers a produce request per partition: a too-large message fails its partition, the others are appended', async () => {
  // The fact the relay's design rests on, checked on this broker: kafkajs throws
  // for the whole request, yet Kafka appended the other partitions, so retrying the request whole would
  // publish them twice; the relay sends each partition again on its own instead, which the broker
  // recognises (next tests).
  const run = crypto.randomUUID();
  const kafka = stackKafka('relay', 'poison-test');
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await ensureStackTopic(TOPIC, 3);
  await producer.connect();
  const messages: Message[] = [
    { partition: 0, key: 'poison', value: 'x'.repeat(TOO_LARGE), headers: { correlationId: run, messageId: 'p0-big' } },
    { partition: 0, key: 'a', value: '{}', headers: { correlationId: run, messageId: 'p0-small' } },
    { partition: 1, key: 'b', value: '{}', headers: { correlationId: run, messageId: 'p1' } },
    { partition: 2, key: 'c', value: '{}', headers: { correlationId: run, messageId: 'p2' } },
  ];
  try {
    await expect(producer.sendBatch({ acks: -1, topicMessages: [{ topic: TOPIC, messages }] })).rejects.toMatchObject({
      type: 'MESSAGE_TOO_LARGE',
    });
  } finally {
    await producer.disconnect();
  }
  const ours = await topicCopies(run, (ms) => ms.length >= 2);
  // The whole record batch of partition 0 was refused; partitions 1 and 2 were appended.
  expect(ours.map((m) => m.headers.messageId).sort()).toEqual(['p1', 'p2']);
});

test('a too-large row is parked after RELAY_MAX_ATTEMPTS while every other key is published; its key waits, then follows after outbox retry', async () => {
  const batch = crypto.randomUUID();
  const parkedKey = crypto.randomUUID();
  const [poison, behind] = await insertOutboxRows(stack.db.admin, batch, [
    { key: parkedKey, seq: 1, padBytes: TOO_LARGE },
    { key: parkedKey, seq: 2 },
  ]);
  const others = await insertOutboxRows(
    stack.db.admin,
    batch,
    Array.from({ length: 200 }, () => ({ key: crypto.randomUUID(), seq: 1 })),
  );
  const relay = newRelay({ RELAY_MAX_ATTEMPTS: '3', RELAY_BATCH_SIZE: '50' });
  await relay.start();
  try {
    await waitFor(
      async () => (await row(poison.id)).parked_at !== null && (await unpublishedExcept([poison.id, behind.id])) === 0,
    );
    expect(await row(poison.id)).toEqual({
      published_at: null,
      parked_at: expect.any(Date),
      attempts: 3,
      rejections: 3,
      last_error: expect.stringContaining('larger than the max message size'),
    });
    // The later row of the parked key was never tried: it waits behind the parked one.
    expect(await row(behind.id)).toMatchObject({ published_at: null, parked_at: null, attempts: 0 });
    expect(await outboxBacklog(stack.relayPool)).toEqual({
      count: 1,
      parked: 1,
      waitingBehindParked: 1,
      oldestAgeSeconds: 0,
    });
    expect(relay.logs.messages('row refused by Kafka again and parked')).toEqual([
      expect.objectContaining({ id: poison.id, parked: true }),
    ]);

    const listed = await client('outbox', 'parked');
    expect(listed).toEqual({
      count: 1,
      rows: [
        {
          id: poison.id,
          messageKey: parkedKey,
          correlationId: batch,
          createdAt: expect.any(String),
          parkedAt: expect.any(String),
          attempts: 3,
          rejections: 3,
          lastError: expect.stringContaining('larger than the max message size'),
          retries: 0,
          lastRetriedAt: null,
          waitingBehind: 1,
        },
      ],
    });
    expect(JSON.stringify(listed)).not.toContain('xxxxxxxx');

    // Retrying before the cause is fixed is allowed; here the operator fixes the payload first.
    await expect(client('outbox', 'retry', behind.id)).rejects.toThrow(`outbox row ${behind.id} is not parked`);
    await expect(client('outbox', 'retry', crypto.randomUUID())).rejects.toThrow(/no outbox row has id/);
    await stack.db.admin.query(`update profile.outbox_messages set payload = payload - 'pad' where id = $1`, [
      poison.id,
    ]);
    expect(await client('outbox', 'retry', poison.id)).toEqual({ retried: 1, ids: [poison.id] });
    await waitFor(async () => (await row(behind.id)).published_at !== null);
  } finally {
    await relay.stop();
  }
  await expect(client('outbox', 'retry', poison.id)).rejects.toThrow(/already published/);
  expect(await client('outbox', 'retry', '--all')).toEqual({ retried: 0, ids: [] });

  const ours = await topicCopies(batch, (ms) => copiesById(ms).size >= 202);
  const copies = copiesById(ours);
  expect(copies.size).toBe(202);
  expect([...copies.values()].every((n) => n === 1)).toBe(true);
  for (const r of [...others, poison, behind] as SeededRow[]) expect(copies.get(r.id)).toBe(1);
  expect(seqsByKey(ours).get(parkedKey)).toEqual([1, 2]);
});

test('a partly failed batch publishes nothing twice: the other partitions, sent again on their own, are not appended again, the refused one is split', async () => {
  const batch = crypto.randomUUID();
  // One batch across all three partitions; the refused row sits in the middle of partition 0's rows.
  const [p0a, p0poison, p0b, p0c] = keysOn(0, 4);
  const p1 = keysOn(1, 3);
  const p2 = keysOn(2, 3);
  const rows = await insertOutboxRows(stack.db.admin, batch, [
    { key: p1[0], seq: 1 },
    { key: p0a, seq: 1 },
    { key: p2[0], seq: 1 },
    { key: p0poison, seq: 1, padBytes: TOO_LARGE },
    { key: p1[1], seq: 1 },
    { key: p0b, seq: 1 },
    { key: p2[1], seq: 1 },
    { key: p0c, seq: 1 },
    { key: p1[2], seq: 1 },
    { key: p2[2], seq: 1 },
  ]);
  const poison = rows[3];
  const good = rows.filter((r) => r !== poison);
  const relay = newRelay({ RELAY_MAX_ATTEMPTS: '2' });
  await relay.start();
  try {
    await waitFor(
      async () => (await row(poison.id)).parked_at !== null && (await unpublishedExcept([poison.id])) === 0,
    );
  } finally {
    await relay.stop();
  }
  // Every acknowledged row was marked on its first try: none was failed and sent again.
  const { rows: marks } = await stack.db.admin.query(
    `select id, attempts, last_error from profile.outbox_messages where id = any($1::uuid[])`,
    [good.map((r) => r.id)],
  );
  for (const mark of marks) expect(mark).toMatchObject({ attempts: 1, last_error: null });

  const ours = await topicCopies(batch, (ms) => copiesById(ms).size >= good.length);
  expect(Object.fromEntries(copiesById(ours))).toEqual(Object.fromEntries(good.map((r) => [r.id, 1])));
});

test('two relays and a refused row keep order per key: the parked key stops at the refused row and resumes after retry', async () => {
  const batch = crypto.randomUUID();
  const keys = Array.from({ length: 40 }, () => crypto.randomUUID());
  const seeds = keys.flatMap((key, k) =>
    Array.from({ length: 8 }, (_, i) => ({ key, seq: i + 1, padBytes: k === 0 && i === 3 ? TOO_LARGE : 0 })),
  );
  // Interleaved by sequence number, as cycles on several days would write them.
  seeds.sort((a, b) => a.seq - b.seq);
  const rows = await insertOutboxRows(stack.db.admin, batch, seeds);
  const poison = rows.find((r) => r.padBytes === TOO_LARGE)!;
  const a = newRelay({ RELAY_MAX_ATTEMPTS: '3', RELAY_BATCH_SIZE: '15' });
  const b = newRelay({ RELAY_MAX_ATTEMPTS: '3', RELAY_BATCH_SIZE: '15' });
  await Promise.all([a.start(), b.start()]);
  try {
    // Everything but the refused row and the four behind it.
    await waitFor(async () => (await row(poison.id)).parked_at !== null && (await unpublishedExcept([])) === 5);
    const { rows: waiting } = await stack.db.admin.query(
      `select (payload->>'seq')::int as seq from profile.outbox_messages where published_at is null and message_key = $1 order by 1`,
      [keys[0]],
    );
    expect(waiting.map((w) => w.seq)).toEqual([4, 5, 6, 7, 8]);
    await stack.db.admin.query(`update profile.outbox_messages set payload = payload - 'pad' where id = $1`, [
      poison.id,
    ]);
    expect(await client('outbox', 'retry', '--all')).toEqual({ retried: 1, ids: [poison.id] });
    await waitFor(async () => (await unpublishedExcept([])) === 0);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  expect(a.publishedTotal + b.publishedTotal).toBe(rows.length);

  // An independent consumer: each key's events once each, in the order they were written.
  const ours = await topicCopies(batch, (ms) => copiesById(ms).size >= rows.length);
  expect(ours).toHaveLength(rows.length);
  const byKey = seqsByKey(ours);
  for (const key of keys) expect(byKey.get(key)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
});

test("outbox retry keeps the row's attempts and counts the retry; outbox parked shows both", async () => {
  const [parked] = await insertOutboxRows(stack.db.admin, `retry-history-${crypto.randomUUID()}`, [
    { key: crypto.randomUUID(), seq: 1 },
  ]);
  const park = () =>
    stack.db.admin.query(
      `update profile.outbox_messages
          set parked_at = now(), attempts = attempts + 3, rejections = 3, last_error = 'refused' where id = $1`,
      [parked.id],
    );
  const history = async () =>
    (
      await stack.db.admin.query(
        `select attempts, rejections, parked_at, retries, last_retried_at from profile.outbox_messages where id = $1`,
        [parked.id],
      )
    ).rows[0];
  await park();

  expect(await client('outbox', 'retry', parked.id)).toEqual({ retried: 1, ids: [parked.id] });
  const once = await history();
  expect(once).toEqual({ attempts: 3, rejections: 0, parked_at: null, retries: 1, last_retried_at: expect.any(Date) });

  await park();
  expect(await client('outbox', 'parked')).toEqual({
    count: 1,
    rows: [
      expect.objectContaining({
        id: parked.id,
        attempts: 6,
        rejections: 3,
        retries: 1,
        lastRetriedAt: expect.any(String),
      }),
    ],
  });
  expect(await client('outbox', 'retry', '--all')).toEqual({ retried: 1, ids: [parked.id] });
  expect(await history()).toEqual({
    attempts: 6,
    rejections: 0,
    parked_at: null,
    retries: 2,
    last_retried_at: expect.any(Date),
  });
  await stack.db.admin.query('delete from profile.outbox_messages where id = $1', [parked.id]);
});

test("outbox commands say which role they need when run with the worker's connection", async () => {
  await expect(clientAs(stack.db.workerUrl, 'outbox', 'parked')).rejects.toThrow(
    /permission denied .*outbox commands connect as the relay; set RELAY_DATABASE_URL \(or DATABASE_URL\) to the outbox_relay role's connection/,
  );
  await expect(clientAs(stack.db.workerUrl, 'outbox', 'retry', '--all')).rejects.toThrow(
    /outbox_relay role's connection/,
  );
});
