/**
 * The relay survives its edge cases (issue 19, item 4): a failed statement outside a batch, a wake-up that
 * comes while every lane is busy, and a stop that races the LISTEN session's reconnection.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { DELETE_PUBLISHED_SQL } from '../../src/db/outbox';
import { insertOutboxRows } from '../support/outbox-rows';
import { stackBrokers, testRelay } from '../support/relay';
import { sleep, waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const stack = useIntegration('relay-resilience', { relayPoolSize: 4 });

async function unpublished(correlationId: string): Promise<number> {
  const { rows } = await stack.db.admin.query<{ n: number }>(
    'select count(*)::int as n from profile.outbox_messages where published_at is null and correlation_id = $1',
    [correlationId],
  );
  return rows[0].n;
}

const seeds = (n: number) => Array.from({ length: n }, (_, seq) => ({ key: crypto.randomUUID(), seq }));

test('a cleanup error does not end the relay; the lane backs off and goes on', async () => {
  // The cleanup's delete fails as it would on a statement timeout or a restart; the claim and mark still work.
  await stack.db.admin.query('revoke delete on profile.outbox_messages from outbox_relay');
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: stackBrokers(),
    env: { RELAY_CONCURRENCY: '1', RELAY_CLEANUP_INTERVAL: '1s' },
  });
  await relay.start();
  try {
    await waitFor(async () => relay.logs.messages('outbox cleanup failed, backing off').length >= 1, 20_000);
    const correlationId = crypto.randomUUID();
    await insertOutboxRows(stack.db.admin, correlationId, seeds(5));
    await waitFor(async () => (await unpublished(correlationId)) === 0, 20_000);
    // The next cleanup fails as well, and the lane still publishes after it.
    await waitFor(async () => relay.logs.messages('outbox cleanup failed, backing off').length >= 2, 20_000);
    const later = crypto.randomUUID();
    await insertOutboxRows(stack.db.admin, later, seeds(5));
    await waitFor(async () => (await unpublished(later)) === 0, 20_000);
  } finally {
    await relay.stop();
    await stack.db.admin.query('grant delete on profile.outbox_messages to outbox_relay');
  }
  expect(relay.logs.messages('outbox cleanup failed, backing off')[0]).toMatchObject({
    level: 40,
    err: expect.stringContaining('permission denied'),
  });
});

test('a notification while every lane is busy is remembered: rows committed during a batch go out without waiting for the poll', async () => {
  const during = crypto.randomUUID();
  let inserted = false;
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: stackBrokers(),
    env: { RELAY_CONCURRENCY: '1', RELAY_POLL_INTERVAL: '60s', RELAY_LINGER: '0ms' },
    deps: {
      // The one lane holds its batch while more rows commit, and their notification has time to arrive.
      onSent: async () => {
        if (inserted) return;
        inserted = true;
        await insertOutboxRows(stack.db.admin, during, seeds(3));
        await sleep(500);
      },
    },
  });
  await relay.start();
  try {
    const first = crypto.randomUUID();
    await insertOutboxRows(stack.db.admin, first, seeds(3));
    await waitFor(async () => (await unpublished(first)) === 0, 20_000);
    expect(inserted).toBe(true);
    const t0 = Date.now();
    await waitFor(async () => (await unpublished(during)) === 0, 20_000, 50);
    expect(Date.now() - t0).toBeLessThan(5_000);
  } finally {
    await relay.stop();
  }
});

/**
 * A TCP path to PostgreSQL that can hold new connections before they reach the server, as a slow network
 * or a server that accepts slowly would: the LISTEN session's reconnection stays in `connect()` meanwhile.
 */
async function holdingPath(upstreamUrl: string) {
  const upstream = new URL(upstreamUrl);
  const held: net.Socket[] = [];
  const open = new Set<net.Socket>();
  const piped: [net.Socket, net.Socket][] = [];
  let holding = false;
  const pipe = (socket: net.Socket) => {
    const server = net.connect(Number(upstream.port), upstream.hostname);
    open.add(socket);
    piped.push([socket, server]);
    for (const [a, b] of [
      [socket, server],
      [server, socket],
    ]) {
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
    socket.on('close', () => open.delete(socket));
  };
  const proxy = net.createServer((socket) => {
    socket.on('error', () => {});
    if (holding) held.push(socket);
    else pipe(socket);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = new URL(upstreamUrl);
  url.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
  return {
    url: url.toString(),
    held,
    hold: () => (holding = true),
    /**
     * The connections through the path go silent, as on a cut cable: no byte passes either way, and
     * neither end hears a close or a reset. New connections still pass.
     */
    silence() {
      for (const [client, server] of piped.splice(0)) {
        client.unpipe(server);
        server.unpipe(client);
        client.pause();
        server.pause();
      }
    },
    /** Lets the held connections through, those still open. */
    release() {
      holding = false;
      for (const socket of held.splice(0)) if (!socket.destroyed) pipe(socket);
    },
    close: async () => {
      for (const socket of [...open, ...held, ...piped.flat()]) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}

async function listenSessions(): Promise<number> {
  const { rows } = await stack.db.admin.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'expiry-reminder-relay-listen'`,
  );
  return rows[0].n;
}

test('a stop while the LISTEN session reconnects ends promptly and leaves no session behind', async () => {
  const path = await holdingPath(stack.db.relayUrl);
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: stackBrokers(),
    deps: { listenUrl: path.url },
  });
  try {
    await relay.start();
    await waitFor(async () => (await listenSessions()) === 1, 10_000);
    path.hold();
    await stack.db.admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where datname = current_database() and application_name = 'expiry-reminder-relay-listen'`,
    );
    // The relay reconnects after a second; its new connection waits on the path.
    await waitFor(async () => path.held.length === 1, 10_000, 20);
    const t0 = Date.now();
    await relay.stop();
    expect(Date.now() - t0).toBeLessThan(5_000);
    path.release();
    await sleep(1_500);
    expect(await listenSessions()).toBe(0);
  } finally {
    await relay.stop();
    await path.close();
  }
});

test('a LISTEN connect that gets no answer is given up after its timeout, and the session comes back once the path does (issue 28)', async () => {
  const path = await holdingPath(stack.db.relayUrl);
  path.hold();
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: stackBrokers(),
    deps: { listenUrl: path.url, listenTimings: { connectTimeoutMs: 500 } },
  });
  try {
    await relay.start();
    await waitFor(async () => relay.logs.messages('LISTEN failed; polling until it works').length >= 1, 5_000, 50);
    path.release();
    await waitFor(async () => (await listenSessions()) === 1, 15_000);
  } finally {
    await relay.stop();
    await path.close();
  }
  expect(relay.logs.messages('LISTEN failed; polling until it works')[0]).toMatchObject({
    level: 40,
    err: expect.stringMatching(/timeout/i),
  });
});

test('a LISTEN session whose path went silent (no reset, no close) is noticed and reopened: notifications wake the relay again, not the poll (issue 28)', async () => {
  const path = await holdingPath(stack.db.relayUrl);
  const relay = testRelay({
    pool: stack.relayPool,
    url: stack.db.relayUrl,
    brokers: stackBrokers(),
    env: { RELAY_POLL_INTERVAL: '60s', RELAY_LINGER: '0ms' },
    deps: { listenUrl: path.url, listenTimings: { connectTimeoutMs: 500, checkIntervalMs: 300 } },
  });
  try {
    await relay.start();
    await waitFor(async () => (await listenSessions()) === 1, 10_000);
    path.silence();
    await waitFor(
      async () => relay.logs.messages('LISTEN connection lost; polling until it is back').length >= 1,
      5_000,
      50,
    );
    // The new session (the old backend lingers until the server's keepalive ends it).
    await waitFor(async () => (await listenSessions()) === 2, 10_000);
    await sleep(300);
    const after = crypto.randomUUID();
    await insertOutboxRows(stack.db.admin, after, seeds(3));
    // Far sooner than the 60 s poll: a notification on the new session woke a lane.
    await waitFor(async () => (await unpublished(after)) === 0, 10_000, 50);
  } finally {
    await relay.stop();
    await path.close();
  }
});

test('a normal start, publish and stop logs nothing at error level, kafkajs included', async () => {
  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, brokers: stackBrokers() });
  await relay.start();
  try {
    const correlationId = crypto.randomUUID();
    await insertOutboxRows(stack.db.admin, correlationId, seeds(20));
    await waitFor(async () => (await unpublished(correlationId)) === 0, 20_000);
  } finally {
    await relay.stop();
  }
  expect(relay.logs.lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  expect(relay.logs.lines.filter((l) => l.component === 'kafkajs' && (l.level as number) >= 40)).toEqual([]);
});

test("the cleanup's delete reads only the rows past retention, through an index of published rows", async () => {
  // A week of published rows, the oldest 1 % past retention, and statistics that know it.
  await stack.db.admin.query(
    `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id, created_at, published_at)
     select gen_random_uuid(), 'Profile', gen_random_uuid(), 't', md5(i::text), 'CleanupTest', 1, '{}', 'c',
            now() - make_interval(secs => i * 6.1), now() - make_interval(secs => i * 6.1)
       from generate_series(1, 100000) i`,
  );
  await stack.db.admin.query('analyze profile.outbox_messages');
  const { rows } = await stack.db.admin.query<{ 'QUERY PLAN': unknown }>(
    `explain (format json) ${DELETE_PUBLISHED_SQL}`,
    [7 * 86_400, 5_000],
  );
  const plan = JSON.stringify(rows[0]['QUERY PLAN']);
  expect(plan).toContain('ix_outbox_messages_published');
  expect(plan).not.toContain('Seq Scan');
});
