/** A relay for a test: the file's database as `outbox_relay`, a broker, short waits, and its log lines kept. */
import type pg from 'pg';
import { loadConfig } from '../../src/config';
import { createKafka } from '../../src/relay/kafka';
import { OutboxRelay, type RelayDeps } from '../../src/relay/outbox-relay';
import { CapturedLogs } from './stack';

/** The shared stack's brokers. */
export function stackBrokers(): string {
  const value = process.env.KAFKA_BROKERS;
  if (!value) throw new Error('KAFKA_BROKERS is not set: run the tests with npm test');
  return value;
}

export interface TestRelayOptions {
  pool: pg.Pool;
  url: string;
  brokers: string;
  /** Relay variables on top of a 200 ms poll and a 500 ms backoff ceiling. */
  env?: Record<string, string>;
  /** Dependencies to replace, e.g. `kafkaSocketFactory`. */
  deps?: Partial<RelayDeps>;
}

/** A relay (not started) with its configuration and captured logs. */
export function testRelay(options: TestRelayOptions): OutboxRelay & { logs: CapturedLogs } {
  const logs = new CapturedLogs();
  const config = loadConfig({
    KAFKA_BROKERS: options.brokers,
    DATABASE_URL: options.url,
    RELAY_POLL_INTERVAL: '200ms',
    RELAY_MAX_BACKOFF: '500ms',
    ...options.env,
  });
  const relay = new OutboxRelay({
    pool: options.pool,
    listenUrl: options.url,
    kafka: createKafka(config),
    config,
    logger: logs.logger,
    ...options.deps,
  });
  return Object.assign(relay, { logs });
}
