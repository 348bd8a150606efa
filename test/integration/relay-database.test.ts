/**
 * The relay's side of PostgreSQL (issue 12, items 5 and 6): the outbox trigger notifies only for statements
 * that wrote rows, the relay's sessions cannot be ended while a batch waits on Kafka, and the relay knows
 * when its migration is missing.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { ConfigError, loadConfig } from '../../src/config';
import { OUTBOX_CHANNEL } from '../../src/db/outbox';
import { createPool, withTransaction } from '../../src/db/pool';
import { claimOwners } from '../support/claims';
import { relaySchemaProblems } from '../../src/db/schema-check';
import { relaySessionLimits } from '../../src/relay/session';
import { insertDocuments } from '../support/data';
import { stackBrokers, testRelay } from '../support/relay';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const AS_OF = '2026-09-02';
const SENTINEL = 'relay_database_test_sentinel';

const stack = useIntegration('relay-database', { resetEachTest: false });

/** The worker's owner statement for one owner, in its own transaction, as the `remindOwners` activity runs it. */
function ownerStatement(ownerUserId: string) {
  return withTransaction(stack.db.worker, (tx) =>
    claimOwners(tx, {
      ownerUserIds: [ownerUserId],
      asOfDate: AS_OF,
      thresholdsDays: [30, 7, 1, 0],
      retentionDays: 90,
      asOf: `${AS_OF}T03:00:00.000Z`,
      jobRunId: `notify-test-${crypto.randomUUID()}`,
    }),
  );
}

describe('the outbox trigger', () => {
  let listener: pg.Client;
  const heard: string[] = [];

  beforeAll(async () => {
    // A real LISTEN session, as the relay's own.
    listener = new pg.Client({ connectionString: stack.db.relayUrl });
    await listener.connect();
    listener.on('notification', (n) => heard.push(n.channel));
    await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
    await listener.query(`LISTEN ${SENTINEL}`);
  });
  afterAll(() => listener?.end());

  /**
   * What the listener heard from `fn`'s transactions. A sentinel notification sent after them from the same
   * role arrives after anything they sent (notifications are delivered in commit order), so its arrival
   * ends the wait without guessing a delay.
   */
  async function heardFrom(fn: () => Promise<unknown>): Promise<string[]> {
    heard.length = 0;
    await fn();
    await stack.db.worker.query(`select pg_notify($1, '')`, [SENTINEL]);
    await waitFor(async () => heard.includes(SENTINEL), 10_000, 20);
    return heard.filter((c) => c !== SENTINEL);
  }

  test('an owner statement that writes no outbox row sends no notification', async () => {
    const owner = crypto.randomUUID();
    await insertDocuments(stack.db.admin, AS_OF, [{ ownerUserId: owner, daysLeft: 200 }]);
    expect(await heardFrom(async () => expect((await ownerStatement(owner)).owners[0].won).toEqual([]))).toEqual([]);
    expect(
      await heardFrom(() =>
        stack.db.admin.query(`insert into profile.outbox_messages select * from profile.outbox_messages where false`),
      ),
    ).toEqual([]);
  });

  test('an owner statement that writes an outbox row sends one notification', async () => {
    const owner = crypto.randomUUID();
    await insertDocuments(stack.db.admin, AS_OF, [
      { ownerUserId: owner, daysLeft: 7 },
      { ownerUserId: owner, daysLeft: 0 },
    ]);
    expect(await heardFrom(async () => expect((await ownerStatement(owner)).owners[0].won).toHaveLength(2))).toEqual([
      OUTBOX_CHANNEL,
    ]);
  });
});

describe("the relay's sessions", () => {
  test('the relay pool sets its own idle-in-transaction limit: the send timeout, 5 s to wind down, 10 s margin', async () => {
    const config = loadConfig({ DATABASE_URL: stack.db.relayUrl, RELAY_SEND_TIMEOUT: '20s' });
    const pool = createPool({ connectionString: stack.db.relayUrl, max: 1, session: relaySessionLimits(config) });
    try {
      const { rows } = await pool.query(
        `select setting from pg_settings where name = 'idle_in_transaction_session_timeout'`,
      );
      expect(rows[0].setting).toBe('35000');
    } finally {
      await pool.end();
    }
  });

  test('a relay whose sessions would be ended while it waits on Kafka refuses to start, naming RELAY_SEND_TIMEOUT', async () => {
    // What a pooler that drops the relay's own setting, with a role setting of 20 s, would leave.
    const pool = createPool({
      connectionString: stack.db.relayUrl,
      max: 1,
      session: { statementTimeoutMs: 0, idleInTransactionTimeoutMs: 20_000, tcpKeepaliveIdleMs: 0 },
    });
    const relay = testRelay({
      pool,
      url: stack.db.relayUrl,
      brokers: stackBrokers(),
      env: { RELAY_SEND_TIMEOUT: '30s' },
    });
    try {
      const refused = await relay.start().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as Error).message).toMatch(
        /RELAY_SEND_TIMEOUT=30000ms: .* idle for 20000ms .* up to 35000ms .* at least 45000ms, or 0/,
      );
    } finally {
      await relay.stop();
      await pool.end();
    }
  });
});

test("the relay's schema check names a missing parking column", async () => {
  const pool = createPool({ connectionString: stack.db.relayUrl, max: 1 });
  try {
    expect(await relaySchemaProblems(pool)).toEqual([]);
    await stack.db.admin.query('alter table profile.outbox_messages rename column parked_at to parked_at_gone');
    try {
      expect(await relaySchemaProblems(pool)).toEqual([expect.stringMatching(/outbox_messages: column .*parked_at/)]);
    } finally {
      await stack.db.admin.query('alter table profile.outbox_messages rename column parked_at_gone to parked_at');
    }
  } finally {
    await pool.end();
  }
});
