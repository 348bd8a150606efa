/**
 * The deploy that moves the worker from the old outbox (`outbox_messages`) to the insert-only one (migration 025),
 * against the real broker: while an owner has rows in both, this version's relay publishes them in the order they
 * were written, whichever table each is in. An old row first: the owner's later event is held (`legacy`) and
 * follows it. The mirror image, an event first: the owner’s later old row waits for it. Other owners flow meanwhile.
 * Owners whose old rows stay parked do not keep their lane from releasing the others.
 */
import crypto from 'node:crypto';
import { loadConfig } from '../../src/config';
import { LANE_SQL } from '../../src/db/lane-sql';
import { TOPIC } from '../../src/domain/names';
import { consumeUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { runClient } from '../support/cli';
import { useIntegration } from '../support/harness';
import { stackKafka, testRelay } from '../support/relay';
import { sleep, waitFor } from '../support/wait';

const stack = useIntegration('relay-deploy', { relayPoolSize: 6 });

/** `npm run client -- …args` in-process, as the relay's role. */
async function client(...args: string[]): Promise<Record<string, unknown>> {
  return (await runClient(() => loadConfig({ DATABASE_URL: stack.db.relayUrl }), args)).output;
}

/** A row of the old outbox, as a worker of the version before writes it, `ageSeconds` old; parked when asked. */
async function oldRow(key: string, run: string, ageSeconds: number, parked = false): Promise<string> {
  const id = crypto.randomUUID();
  await stack.db.admin.query(
    `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id, created_at, parked_at, rejections, last_error)
     values ($1, 'Profile', $2::uuid, $3, $2::text, 'E', 1, jsonb_build_object('table', 'old'), $4,
             now() - make_interval(secs => $5), case when $6 then now() end, case when $6 then 5 else 0 end,
             case when $6 then 'refused' end)`,
    [id, key, TOPIC, run, ageSeconds, parked],
  );
  return id;
}

/** An event of the insert-only outbox, as this version's worker writes it, `ageSeconds` old. */
async function newEvent(key: string, run: string, ageSeconds: number): Promise<string> {
  const id = crypto.randomUUID();
  await stack.db.admin.query(
    `insert into profile.outbox_events (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id, created_at)
     values ($1, 'Profile', $2::uuid, $3, $2::text, 'E', 1, jsonb_build_object('table', 'new'), $4,
             now() - make_interval(secs => $5))`,
    [id, key, TOPIC, run, ageSeconds],
  );
  return id;
}

const ofRun = (run: string) => (ms: ConsumedMessage[]) => ms.filter((m) => m.headers.correlationId === run);

test('an owner’s old row first: its later event waits, held as legacy, and follows the old row once it is published', async () => {
  const run = `deploy-old-first-${crypto.randomUUID()}`;
  const owner = crypto.randomUUID();
  const other = crypto.randomUUID();
  const old = await oldRow(owner, run, 60, true);
  const event = await newEvent(owner, run, 30);
  const otherEvent = await newEvent(other, run, 30);
  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl });
  await relay.start();
  try {
    await waitFor(async () => {
      const { rows } = await stack.db.admin.query('select reason from profile.outbox_held where message_key = $1', [
        owner,
      ]);
      return rows[0]?.reason === 'legacy';
    });
    const first = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 1));
    expect(first.map((m) => m.headers.messageId)).toEqual([otherEvent]);
    expect(await client('outbox', 'retry', old)).toEqual({ retried: 1, ids: [old] });
    const all = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 3));
    expect(all.filter((m) => m.key === owner).map((m) => m.headers.messageId)).toEqual([old, event]);
    await waitFor(async () => (await stack.db.admin.query('select 1 from profile.outbox_held')).rowCount === 0);
  } finally {
    await relay.stop();
  }
});

test('the mirror image, an owner’s event first: its later old row waits for it and follows once it is published', async () => {
  const run = `deploy-new-first-${crypto.randomUUID()}`;
  const owner = crypto.randomUUID();
  const other = crypto.randomUUID();
  const event = await newEvent(owner, run, 60);
  const old = await oldRow(owner, run, 30);
  const otherOld = await oldRow(other, run, 30);
  // The event is parked (held at it, as after RELAY_MAX_ATTEMPTS refusals), so it stays unpublished.
  await stack.db.admin.query(
    `insert into profile.outbox_held (message_key, lane, reason, xid, id, rejections, attempts, last_error, parked_at)
     select message_key, ${LANE_SQL}, 'refused', xid, id, 5, 5, 'refused', now()
       from profile.outbox_events where id = $1`,
    [event],
  );
  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl });
  await relay.start();
  try {
    const first = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 1));
    expect(first.map((m) => m.headers.messageId)).toEqual([otherOld]);
    // Several of the relay's turns (it polls every 200 ms here): the old row is still waiting.
    await sleep(1_500);
    const { rows } = await stack.db.admin.query('select published_at from profile.outbox_messages where id = $1', [
      old,
    ]);
    expect(rows).toEqual([{ published_at: null }]);
    expect(await client('outbox', 'retry', event)).toEqual({ retried: 1, ids: [event] });
    const all = ofRun(run)(await consumeUntil(stackKafka(), (ms) => ofRun(run)(ms).length >= 3));
    expect(all.filter((m) => m.key === owner).map((m) => m.headers.messageId)).toEqual([event, old]);
  } finally {
    await relay.stop();
  }
});

/** `n` keys that fall in one lane, as the lane index computes it. */
async function keysOfOneLane(n: number): Promise<string[]> {
  const { rows } = await stack.db.admin.query<{ key: string }>(
    `select key from (select gen_random_uuid()::text as key from generate_series(1, 2000)) k
      where ${LANE_SQL.replace('message_key', 'key')} = 0 limit $1`,
    [n],
  );
  return rows.map((r) => r.key);
}

test('investors whose old rows stay parked do not keep their lane from releasing another investor’s legacy hold', async () => {
  const run = `deploy-many-held-${crypto.randomUUID()}`;
  // More stuck investors than a lane pass looks at (10), all in the lane of the investor that gets ready.
  const [ready, ...stuck] = await keysOfOneLane(12);
  for (const key of stuck) {
    await oldRow(key, run, 60, true);
    await newEvent(key, run, 30);
  }
  const heldKeys = async () =>
    (await stack.db.admin.query<{ message_key: string }>('select message_key from profile.outbox_held')).rows.map(
      (r) => r.message_key,
    );
  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl });
  await relay.start();
  try {
    await waitFor(async () => (await heldKeys()).length === stuck.length);
    // Held after the others, so the oldest holds of its lane are all stuck ones.
    const old = await oldRow(ready, run, 20, true);
    const event = await newEvent(ready, run, 10);
    await waitFor(async () => (await heldKeys()).includes(ready));
    expect(await client('outbox', 'retry', old)).toEqual({ retried: 1, ids: [old] });
    const readyOnes = (ms: ConsumedMessage[]) => ofRun(run)(ms).filter((m) => m.key === ready);
    const received = readyOnes(await consumeUntil(stackKafka(), (ms) => readyOnes(ms).length >= 2));
    expect(received.map((m) => m.headers.messageId)).toEqual([old, event]);
    await waitFor(async () => !(await heldKeys()).includes(ready));
    expect((await heldKeys()).sort()).toEqual([...stuck].sort());
  } finally {
    await relay.stop();
  }
});
