/**
 * The broker goes away while a cycle writes events: the relay keeps the rows, records its attempts,
 * backs off, and publishes everything once the broker is back. This file runs a broker of its own so
 * stopping it disturbs no other test (on the production profile, one with SASL_SSL, SCRAM and ACLs).
 */
import type { KafkaBroker } from '../../scripts/stack/kafka';
import { insertDocuments, outbox, unpublishedCount } from '../support/data';
import { consumeUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';
import { brokerReader, startOwnBroker, testRelay } from '../support/relay';

const stack = useIntegration('relay-outage', { client: true, relayPoolSize: 4, resetEachTest: false });
/** A broker of this file's own, so the test can stop and restart it. */
let broker: KafkaBroker;

beforeAll(async () => {
  broker = await startOwnBroker();
});
afterAll(async () => {
  await broker?.destroy();
});

const unpublished = () => unpublishedCount(stack.db.admin);

test('with the broker stopped, even at its start, the relay keeps every row, retries with backoff, and publishes all once it is back', async () => {
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: broker.brokers,
    env: { ...broker.clientEnv('relay'), RELAY_SEND_TIMEOUT: '3s', RELAY_MAX_BACKOFF: '2s' },
  });
  // The relay starts while the broker is down (found by the fault suite: it used to exit at start).
  await broker.stop();
  await relay.start();
  try {
    await insertDocuments(
      stack.db.admin,
      '2026-09-02',
      Array.from({ length: 60 }, (_, i) => ({ daysLeft: i % 10 })),
    );
    const w = await stack.startWorker();
    const cycle = await stack.startCycle({ asOf: '2026-09-02' }, { taskQueue: w.taskQueue });
    await cycle.result();
    await w.stop();

    // Failed sends of the cycle's events pile up while the broker is down, each logged with its error; the
    // events stay unpublished (their lanes' cursors do not move), nothing is lost.
    const failedSends = () =>
      relay.logs.messages('publish failed, backing off').filter((l) => (l.rows as number) > 0 && Boolean(l.err));
    await waitFor(async () => failedSends().length >= 2);
    expect(await unpublished()).toBe(60);

    await broker.start();
    await waitFor(async () => (await unpublished()) === 0);
  } finally {
    await relay.stop();
  }

  const rows = await outbox(stack.db.admin);
  const ids = new Set(rows.map((r) => r.id));
  // Until every row is read: a batch sent again after the outage puts some rows twice (at least once), and a
  // count of messages would stop before the last row (CI read 37 distinct of 60 that way).
  const distinct = (ms: ConsumedMessage[]) =>
    new Set(ms.map((m) => m.headers.messageId).filter((id) => ids.has(id))).size;
  const received = await consumeUntil(brokerReader(broker), (ms) => distinct(ms) >= rows.length);
  expect(distinct(received)).toBe(60);
});
