/**
 * Issue 12, item 4: a send that times out is over. The relay reaches a broker of this file's own through
 * Toxiproxy; a `timeout` toxic holds every byte both ways (the broker looks alive but never answers), so
 * each send runs into RELAY_SEND_TIMEOUT and its rows are released. Whatever the abandoned producers had
 * in hand must never reach the broker afterwards, when the path is back: the rows are published exactly
 * once, by a later batch.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import type net from 'node:net';
import { Kafka, logLevel, type ISocketFactory } from 'kafkajs';
import { TOPIC } from '../../src/domain/names';
import { plainSocketFactory } from '../../src/relay/producer';
import { consumeUntil } from '../../scripts/stack/consume';
import { createTopic, startKafka, type KafkaBroker } from '../../scripts/stack/kafka';
import { startToxiproxy, type RunningToxiproxy } from '../../scripts/toxiproxy';
import { copiesById, insertOutboxRows } from '../support/outbox-rows';
import { testRelay } from '../support/relay';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const stack = useIntegration('relay-timeout', { relayPoolSize: 4, resetEachTest: false });
/** A broker of this file's own, behind a Toxiproxy the test can hold traffic in. */
let broker: KafkaBroker;
let toxiproxy: RunningToxiproxy;

beforeAll(async () => {
  [broker, toxiproxy] = await Promise.all([startKafka({}), startToxiproxy(() => {})]);
});
afterAll(async () => {
  await Promise.all([toxiproxy?.stop(), broker?.destroy()]);
});

/** Every socket a relay's producers open, sent to `port` instead of the broker's, and counted. */
function throughProxy(brokerPort: number, proxyPort: number) {
  const sockets: net.Socket[] = [];
  const factory: ISocketFactory = (args) => {
    const socket = plainSocketFactory({ ...args, port: args.port === brokerPort ? proxyPort : args.port });
    sockets.push(socket);
    return socket;
  };
  return { factory, opened: () => sockets.length, open: () => sockets.filter((s) => !s.destroyed).length };
}

/** How many of the events `ids` are not published yet (after their lane's cursor, or held). */
async function unpublished(ids: string[]): Promise<number> {
  const { rows } = await stack.db.admin.query<{ n: number }>(
    'select count(*)::int as n from profile.outbox_events_pending where id = any($1::uuid[])',
    [ids],
  );
  return rows[0].n;
}

test('a send that timed out leaves no producer behind and delivers nothing once the broker answers again', async () => {
  await createTopic(broker.brokers, TOPIC, { partitions: 3 });
  const { proxy, port } = await toxiproxy.proxy('kafka', broker.brokers);
  const sockets = throughProxy(Number(broker.brokers.split(':')[1]), port);
  const env = { RELAY_SEND_TIMEOUT: '1500ms', RELAY_MAX_BACKOFF: '1s' };
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: broker.brokers,
    env,
    deps: { kafkaSocketFactory: sockets.factory },
  });
  const batch = crypto.randomUUID();
  await relay.start();
  let rows: { id: string }[];
  try {
    // Connected and publishing through the proxy first, so the timed-out sends are real produce requests.
    const [warm] = await insertOutboxRows(
      stack.db.admin,
      batch,
      [{ key: crypto.randomUUID(), seq: 0 }],
      'outbox_events',
    );
    await waitFor(async () => (await unpublished([warm.id])) === 0);

    for (const stream of ['upstream', 'downstream'] as const) {
      await proxy.addToxic({
        name: `hold-${stream}`,
        type: 'timeout',
        stream,
        toxicity: 1,
        attributes: { timeout: 0 },
      } as Parameters<typeof proxy.addToxic>[0]);
    }
    rows = await insertOutboxRows(
      stack.db.admin,
      batch,
      Array.from({ length: 12 }, (_, i) => ({ key: crypto.randomUUID(), seq: i + 1 })),
      'outbox_events',
    );
    // Two sends ran into the timeout; each time the events were left unpublished (no cursor moved).
    const timedOut = () =>
      relay.logs.messages('publish failed, backing off').map((l) => ({ rows: (l.rows as number) > 0, err: l.err }));
    await waitFor(async () => timedOut().length >= 2, 30_000);
    expect(await unpublished(rows.map((r) => r.id))).toBe(rows.length);
    expect(new Set(timedOut().map((l) => JSON.stringify(l)))).toEqual(
      new Set([JSON.stringify({ rows: true, err: 'Kafka did not acknowledge the batch within 1500 ms' })]),
    );
  } finally {
    await relay.stop();
  }
  // Nothing of the relay is left: every socket its producers opened is closed.
  expect(sockets.open()).toBe(0);
  const openedAtStop = sockets.opened();

  // The path is back. A producer still alive in the background (kafkajs retries an idempotent send without
  // end, reconnecting by itself) would now deliver the rows it was given before the timeout.
  for (const stream of ['upstream', 'downstream']) await (await proxy.getToxic(`hold-${stream}`)).remove();
  await sleep(8_000);
  expect(sockets.opened()).toBe(openedAtStop);
  const marker = await markEveryPartition(broker.brokers);
  const meanwhile = await consumeUntil(
    broker.brokers,
    (ms) => ms.filter((m) => m.headers.marker === marker).length === 3,
  );
  expect(meanwhile.filter((m) => rows.some((r) => r.id === m.headers.messageId))).toEqual([]);

  // A relay publishes them now, each exactly once.
  const next = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, brokers: broker.brokers, env });
  await next.start();
  try {
    await waitFor(async () => (await unpublished(rows.map((r) => r.id))) === 0);
  } finally {
    await next.stop();
  }
  const ours = (
    await consumeUntil(
      broker.brokers,
      (ms) => copiesById(ms.filter((m) => m.headers.correlationId === batch)).size >= 13,
    )
  ).filter((m) => m.headers.correlationId === batch);
  const copies = copiesById(ours);
  for (const r of rows) expect(copies.get(r.id)).toBe(1);
});

/** Writes one marker message to each of the 3 partitions; a reader that saw all three has read everything before them. */
async function markEveryPartition(brokers: string): Promise<string> {
  const marker = crypto.randomUUID();
  const producer = new Kafka({ clientId: 'marker', brokers: [brokers], logLevel: logLevel.NOTHING }).producer();
  await producer.connect();
  try {
    await producer.send({
      topic: TOPIC,
      messages: [0, 1, 2].map((partition) => ({ partition, key: null, value: '{}', headers: { marker } })),
    });
  } finally {
    await producer.disconnect();
  }
  return marker;
}
