/**
 * The relay publishing the insert-only outbox (migration 025) to the real broker: every event arrives, an owner's
 * events in the order their transactions committed, where the deliveries say; no event row is written by the
 * publish; a crash between Kafka's acknowledgement and the commit sends again and loses nothing; two relays at
 * once share the lanes.
 */
import crypto from 'node:crypto';
import type pg from 'pg';
import { laneSql } from '../../src/db/lane-sql';
import { CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../src/domain/names';
import { consumeUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { useIntegration } from '../support/harness';
import { runClient } from '../support/cli';
import { loadConfig } from '../../src/config';
import { eventsBacklog } from '../../src/db/outbox-backlog';
import { selectOwnerEvents } from '../../src/db/explain';
import { createPool } from '../../src/db/pool';
import { stackKafka, testRelay } from '../support/relay';
import { waitFor } from '../support/wait';

const stack = useIntegration('relay-lanes', { relayPoolSize: 6 });

/** `npm run client -- …args` in-process, as the relay's role; resolves with its JSON, rejects with its error. */
async function client(...args: string[]): Promise<Record<string, unknown>> {
  return (await runClient(() => loadConfig({ DATABASE_URL: stack.db.relayUrl }), args)).output;
}

const newRelay = (deps: Parameters<typeof testRelay>[0]['deps'] = {}) =>
  testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, deps });

/**
 * Writes `perKey` events for each of `keys`, as the worker does: each in a transaction of its own that takes the
 * owner's lock before it writes (migration 024's order), the keys' transactions interleaved.
 * @returns the event ids per key, in the order they committed.
 */
async function writeEvents(
  keys: string[],
  perKey: number,
  correlationId: string,
  payload: (key: string, n: number) => object = (key, n) => ({ ownerUserId: key, n }),
): Promise<Map<string, string[]>> {
  const written = new Map<string, string[]>(keys.map((k) => [k, []]));
  for (let n = 0; n < perKey; n++) {
    await Promise.all(
      keys.map(async (key) => {
        const client: pg.PoolClient = await stack.db.worker.connect();
        try {
          await client.query('begin');
          await client.query('select pg_advisory_xact_lock(hashtextextended($1, 7))', [key]);
          const id = crypto.randomUUID();
          await client.query(
            `insert into profile.outbox_events
               (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id)
             values ($1, 'Profile', $2::uuid, $3, $2::text, $4, $5, $6, $7)`,
            [id, key, TOPIC, EVENT_TYPE, CONTRACT_VERSION, JSON.stringify(payload(key, n)), correlationId],
          );
          await client.query('commit');
          written.get(key)!.push(id);
        } finally {
          client.release();
        }
      }),
    );
  }
  return written;
}

/** Events no lane's cursor has passed yet. */
async function unpublished(): Promise<number> {
  const { rows } = await stack.db.admin.query<{ n: number }>(
    `select count(*)::int as n from profile.outbox_events e
       join profile.outbox_lanes l on l.lane = ${laneSql('e.message_key')}
      where (e.xid, e.id) > (l.xid, l.id)`,
  );
  return rows[0].n;
}

const ofRun = (correlationId: string) => (ms: ConsumedMessage[]) =>
  ms.filter((m) => m.headers.correlationId === correlationId);

test('every event arrives, each owner’s in commit order, where the deliveries say; no event row is written', async () => {
  const run = `lanes-${crypto.randomUUID()}`;
  const keys = Array.from({ length: 20 }, () => crypto.randomUUID());
  const written = await writeEvents(keys, 3, run);
  const { rows: before } = await stack.db.admin.query<{ id: string; xmin: string }>(
    'select id, xmin::text from profile.outbox_events order by id',
  );
  const relay = newRelay();
  await relay.start();
  let received: ConsumedMessage[];
  try {
    received = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 60));
    await waitFor(async () => (await unpublished()) === 0);
  } finally {
    await relay.stop();
  }
  expect(new Set(received.map((m) => m.headers.messageId)).size).toBe(60);
  for (const key of keys) {
    const ofKey = received.filter((m) => m.key === key).map((m) => m.headers.messageId);
    expect(ofKey).toEqual(written.get(key));
  }
  const { rows: after } = await stack.db.admin.query<{ id: string; xmin: string }>(
    'select id, xmin::text from profile.outbox_events order by id',
  );
  expect(after).toEqual(before);
  const { rows: placed } = await stack.db.admin.query<{ id: string; partition: number; offset: string }>(
    `select i.id, d.partition, (d.base_offset + i.n - 1)::text as offset
       from profile.outbox_deliveries d, unnest(d.ids) with ordinality as i(id, n)`,
  );
  expect(Object.fromEntries(placed.map((r) => [r.id, [r.partition, r.offset]]))).toEqual(
    Object.fromEntries(received.map((m) => [m.headers.messageId, [m.partition, m.offset]])),
  );
  // `explain` (as the support role) says where each of an owner's events went, and when.
  const support = createPool({ connectionString: stack.db.supportUrl, max: 1 });
  try {
    const events = await selectOwnerEvents(support, [keys[0]]);
    expect(events.map((e) => e.eventId)).toEqual(written.get(keys[0]));
    for (const e of events) {
      const m = received.find((r) => r.headers.messageId === e.eventId)!;
      expect(e).toMatchObject({ publishedAt: expect.any(String), parkedAt: null, attempts: 1 });
      expect(e.kafka).toEqual({ partition: m.partition, offset: m.offset });
    }
  } finally {
    await support.end();
  }
});

test('a crash between Kafka’s acknowledgement and the commit sends the batch again and loses nothing', async () => {
  const run = `lanes-crash-${crypto.randomUUID()}`;
  const keys = Array.from({ length: 10 }, () => crypto.randomUUID());
  const written = await writeEvents(keys, 2, run);
  let crashed: string[] = [];
  const relay = newRelay({
    onSent: (ids) => {
      if (crashed.length > 0) return;
      crashed = ids;
      throw new Error('crash after the send');
    },
  });
  await relay.start();
  let received: ConsumedMessage[];
  try {
    await waitFor(async () => (await unpublished()) === 0);
    // Every event, and each event of the crashed batch twice.
    received = ofRun(run)(
      await consumeUntil(stackKafka(), (ms) => {
        const ours = ofRun(run)(ms);
        const copies = (id: string) => ours.filter((m) => m.headers.messageId === id).length;
        return new Set(ours.map((m) => m.headers.messageId)).size >= 20 && crashed.every((id) => copies(id) >= 2);
      }),
    );
  } finally {
    await relay.stop();
  }
  expect(crashed.length).toBeGreaterThan(0);
  expect(new Set(received.map((m) => m.headers.messageId))).toEqual(new Set([...written.values()].flat()));
  // The crashed batch went twice: at least once, never lost; each key's last copy still in commit order.
  expect(received.length).toBeGreaterThanOrEqual(20 + crashed.length);
  for (const key of keys) {
    const ofKey = received.filter((m) => m.key === key).map((m) => m.headers.messageId);
    expect([...new Set(ofKey.reverse())].reverse()).toEqual(written.get(key));
  }
});

test('two relays at once publish every event of 200 owners once their lanes are shared, each owner in order', async () => {
  const run = `lanes-two-${crypto.randomUUID()}`;
  const keys = Array.from({ length: 200 }, () => crypto.randomUUID());
  const written = await writeEvents(keys, 3, run);
  const relays = [newRelay(), newRelay()];
  await Promise.all(relays.map((r) => r.start()));
  let received: ConsumedMessage[];
  try {
    await waitFor(async () => (await unpublished()) === 0);
    received = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 600));
  } finally {
    await Promise.all(relays.map((r) => r.stop()));
  }
  expect(received).toHaveLength(600);
  for (const key of keys)
    expect(received.filter((m) => m.key === key).map((m) => m.headers.messageId)).toEqual(written.get(key));
  const published = relays.map((r) => r.publishedTotal);
  expect(published[0] + published[1]).toBe(600);
});

test('a refused event holds its key while the others flow; parked at RELAY_MAX_ATTEMPTS; released, its key follows in order', async () => {
  const run = `lanes-poison-${crypto.randomUUID()}`;
  const poisoned = crypto.randomUUID();
  const good = Array.from({ length: 5 }, () => crypto.randomUUID());
  await writeEvents([poisoned], 1, run, () => ({ blob: 'x'.repeat(2_000_000) }));
  const written = await writeEvents([poisoned, ...good], 1, run);
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    env: { RELAY_MAX_ATTEMPTS: '2', RELAY_MAX_BACKOFF: '300ms' },
  });
  await relay.start();
  try {
    const first = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 5));
    expect(first.map((m) => m.key).sort()).toEqual([...good].sort());
    await waitFor(async () => {
      const { rows } = await stack.db.admin.query(
        'select rejections, parked_at from profile.outbox_held where message_key = $1',
        [poisoned],
      );
      return rows[0]?.parked_at != null;
    });
    const { rows: held } = await stack.db.admin.query(
      'select reason, rejections, attempts, last_error from profile.outbox_held where message_key = $1',
      [poisoned],
    );
    expect(held).toEqual([
      {
        reason: 'refused',
        rejections: 2,
        attempts: 2,
        last_error: expect.stringMatching(/larger than the max message size/),
      },
    ]);
    // The gauges: the parked event, the event of its key waiting behind it, no lag from anything else.
    expect(await eventsBacklog(stack.db.admin)).toEqual({
      count: 1,
      parked: 1,
      waitingBehindParked: 1,
      oldestAgeSeconds: 0,
    });
    const heldId = (await stack.db.admin.query('select id from profile.outbox_held')).rows[0].id as string;
    expect(await client('outbox', 'parked')).toEqual({
      count: 1,
      rows: [
        expect.objectContaining({ id: heldId, messageKey: poisoned, rejections: 2, retries: 0, waitingBehind: 1 }),
      ],
    });
    await expect(client('outbox', 'retry', written.get(poisoned)![0])).rejects.toThrow(/is not parked/);
    // An operator fixes the event (as the table's owner: the relay's role cannot update events) and retries it.
    await stack.db.admin.query(`update profile.outbox_events set payload = '{"fixed":true}' where id = $1`, [heldId]);
    expect(await client('outbox', 'retry', heldId)).toEqual({ retried: 1, ids: [heldId] });
    const all = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 7));
    const ofPoisoned = all.filter((m) => m.key === poisoned);
    expect(ofPoisoned.map((m) => JSON.parse(m.value))).toEqual([{ fixed: true }, { ownerUserId: poisoned, n: 0 }]);
    expect(ofPoisoned[1].headers.messageId).toBe(written.get(poisoned)![0]);
    await waitFor(async () => (await stack.db.admin.query('select 1 from profile.outbox_held')).rowCount === 0);
    await expect(client('outbox', 'retry', heldId)).rejects.toThrow(/already published/);
    const { rows: retried } = await stack.db.admin.query('select count(*)::int as n from profile.outbox_held');
    expect(retried).toEqual([{ n: 0 }]);
    expect(await eventsBacklog(stack.db.admin)).toEqual({
      count: 0,
      parked: 0,
      waitingBehindParked: 0,
      oldestAgeSeconds: 0,
    });
  } finally {
    await relay.stop();
  }
});
