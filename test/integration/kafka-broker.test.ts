/**
 * The local Kafka broker against kafkajs, the client the outbox relay uses: explicit topics, an
 * idempotent producer with acks=all, consumer groups, and data and committed offsets that survive a
 * broker restart. This file runs its own broker, not the shared stack's.
 */
jest.setTimeout(300_000); // the first run resolves the broker's jars from Maven Central

import crypto from 'node:crypto';
import fs from 'node:fs';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { TOPIC } from '../../src/domain/names';
import { readUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { createTopic, KAFKA_VERSION, startKafka, type KafkaBroker } from '../../scripts/stack/kafka';

let broker: KafkaBroker;
let kafka: Kafka;

const sent = [
  { key: 'owner-1', value: '{"ownerUserId":"owner-1","documents":1}', headers: { 'event-type': 'reminder', seq: '1' } },
  { key: 'owner-2', value: '{"ownerUserId":"owner-2","documents":2}', headers: { 'event-type': 'reminder', seq: '2' } },
  { key: 'owner-3', value: '{"ownerUserId":"owner-3","documents":3}', headers: { 'event-type': 'reminder', seq: '3' } },
];

async function idempotentProducer(): Promise<Producer> {
  const producer = kafka.producer({ idempotent: true, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  return producer;
}

/**
 * Reads with consumer group `groupId` (from its committed offsets, else from the beginning) until
 * `count` messages arrived, then leaves the group.
 */
async function consume(groupId: string, count: number): Promise<ConsumedMessage[]> {
  const received = await readUntil(kafka.consumer({ groupId }), TOPIC, (m) => m.length >= count, 60_000);
  return received.sort((a, b) => a.key.localeCompare(b.key));
}

beforeAll(async () => {
  broker = await startKafka();
  kafka = new Kafka({ clientId: 'kafka-broker-test', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
});

afterAll(async () => {
  const dataDir = broker?.dataDir;
  await broker?.destroy();
  if (dataDir) expect(fs.existsSync(dataDir)).toBe(false);
});

const firstGroup = `reader-${crypto.randomUUID()}`;

test(`a Kafka ${KAFKA_VERSION} broker answers kafkajs admin requests on loopback`, async () => {
  expect(broker.brokers).toMatch(/^127\.0\.0\.1:\d+$/);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const cluster = await admin.describeCluster();
    expect(cluster.brokers).toEqual([expect.objectContaining({ nodeId: 1, host: '127.0.0.1' })]);
  } finally {
    await admin.disconnect();
  }
});

test('a topic is created explicitly with three partitions, and creating it again is harmless', async () => {
  await createTopic(broker.brokers, TOPIC, { partitions: 3 });
  await createTopic(broker.brokers, TOPIC, { partitions: 3 });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [TOPIC] });
    expect(topics[0].partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2]);
    expect(topics[0].partitions.every((p) => p.leader === 1)).toBe(true);
  } finally {
    await admin.disconnect();
  }
});

test('the broker does not invent topics that nobody created', async () => {
  const name = `not-created-${crypto.randomUUID()}`;
  // Not idempotent: that producer retries an unknown topic forever.
  const producer = kafka.producer({ retry: { retries: 1 }, createPartitioner: Partitioners.DefaultPartitioner });
  const admin = kafka.admin();
  await Promise.all([producer.connect(), admin.connect()]);
  try {
    await expect(producer.send({ topic: name, messages: [{ key: 'k', value: 'v' }] })).rejects.toThrow(
      /does not host this topic-partition/,
    );
    expect(await admin.listTopics()).not.toContain(name);
  } finally {
    await Promise.all([producer.disconnect(), admin.disconnect()]);
  }
});

test('keyed messages with headers from an idempotent producer come back to a consumer group intact', async () => {
  const producer = await idempotentProducer();
  try {
    const results = await producer.send({ topic: TOPIC, acks: -1, messages: sent });
    expect(results.every((r) => r.errorCode === 0)).toBe(true);
  } finally {
    await producer.disconnect();
  }

  const received = await consume(firstGroup, sent.length);
  expect(received.map(({ key, value, headers }) => ({ key, value, headers }))).toEqual(sent);
});

test('after a restart the messages and the group offsets are still there, and producing works again', async () => {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(TOPIC);
  await admin.disconnect();

  await broker.stop();
  await broker.start();

  const again = await consume(`late-reader-${crypto.randomUUID()}`, sent.length);
  expect(again.map(({ key, value, headers }) => ({ key, value, headers }))).toEqual(sent);

  await admin.connect();
  try {
    const [committed] = await admin.fetchOffsets({ groupId: firstGroup, topics: [TOPIC] });
    // A partition none of the three keys hashed to has nothing to commit (offset -1).
    const byPartition = (list: { partition: number; offset: string }[]) =>
      list
        .filter(({ offset }) => Number(offset) > 0)
        .map(({ partition, offset }) => ({ partition, offset }))
        .sort((a, b) => a.partition - b.partition);
    expect(byPartition(committed.partitions)).toEqual(byPartition(ends));
  } finally {
    await admin.disconnect();
  }

  const producer = await idempotentProducer();
  const extra = { key: 'owner-4', value: '{"ownerUserId":"owner-4","documents":1}', headers: { seq: '4' } };
  try {
    await producer.send({ topic: TOPIC, acks: -1, messages: [extra] });
  } finally {
    await producer.disconnect();
  }

  // The first group resumes where it committed before the restart, so it reads only the new message.
  const resumed = await consume(firstGroup, 1);
  expect(resumed.map(({ key, value, headers }) => ({ key, value, headers }))).toEqual([extra]);
});
