/**
 * The relay's database sessions (docs/DESIGN.md#relay-row-locks-held-while-kafka-is-awaited). A batch keeps
 * its rows locked in an open transaction while it waits for Kafka, at most RELAY_SEND_TIMEOUT plus the time
 * an abandoned producer gets to wind down. If PostgreSQL ended the session meanwhile
 * (`idle_in_transaction_session_timeout`), the rows would be released while the send is still running, and
 * another relay would publish them a second time, maybe ahead of this one. So the relay sets its sessions'
 * limit itself, above that bound, and refuses to start where the effective limit is lower.
 */
import { ConfigError, type Config } from '../config';
import type { Queryable, SessionLimits } from '../db/pool';
import { WIND_DOWN_MS } from './producer';

/** Margin between the longest wait on Kafka and the moment PostgreSQL would end the session. */
const MARGIN_MS = 10_000;

/**
 * How long a relay session may stay idle in its transaction: the send timeout, the wind-down of an abandoned
 * producer, and a margin. It also bounds how long an orphaned relay transaction (its relay gone, its network
 * cut) keeps rows locked.
 */
function relayIdleInTransactionTimeoutMs(sendTimeoutMs: number): number {
  return sendTimeoutMs + WIND_DOWN_MS + MARGIN_MS;
}

/** The relay pool's session limits: the worker's statement and keepalive settings, its own idle limit. */
export function relaySessionLimits(config: Pick<Config, 'relay' | 'databaseSession'>): SessionLimits {
  return {
    statementTimeoutMs: config.databaseSession.statementTimeoutMs,
    idleInTransactionTimeoutMs: relayIdleInTransactionTimeoutMs(config.relay.sendTimeoutMs),
    tcpKeepaliveIdleMs: config.databaseSession.tcpKeepaliveIdleMs,
  };
}

/**
 * Reads the idle-in-transaction limit a relay session really has (a pooler may drop the relay's own setting,
 * and a role or database setting then applies) and refuses one that could end a batch waiting on Kafka.
 * @throws ConfigError naming RELAY_SEND_TIMEOUT, the server's value and what is needed.
 */
export async function checkRelaySession(db: Queryable, sendTimeoutMs: number): Promise<void> {
  const { rows } = await db.query<{ ms: number }>(
    `select setting::int as ms from pg_settings where name = 'idle_in_transaction_session_timeout'`,
  );
  const actual = rows[0]?.ms ?? 0;
  const needed = relayIdleInTransactionTimeoutMs(sendTimeoutMs);
  if (actual === 0 || actual >= needed) return;
  throw new ConfigError([
    `RELAY_SEND_TIMEOUT=${sendTimeoutMs}ms: the relay's database session ends a transaction left idle for ` +
      `${actual}ms (idle_in_transaction_session_timeout), but a batch waits on Kafka inside its transaction ` +
      `for up to ${sendTimeoutMs + WIND_DOWN_MS}ms (the send timeout plus ${WIND_DOWN_MS}ms to wind down a ` +
      `timed-out producer); expected idle_in_transaction_session_timeout of at least ${needed}ms, or 0. ` +
      'Lower RELAY_SEND_TIMEOUT, or raise the setting for the relay role (ALTER ROLE outbox_relay SET ...)',
  ]);
}
