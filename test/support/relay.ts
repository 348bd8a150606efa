/** A relay for a test: the file's database as `outbox_relay`, a broker, short waits, and its log lines kept. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { dropKafkajsNegativeTimeoutWarning } from '../../src/relay/kafkajs-workarounds';
import type pg from 'pg';
import { loadConfig } from '../../src/config';
import { createKafka, ensureTopic } from '../../src/relay/kafka';
import { OutboxRelay, type RelayDeps } from '../../src/relay/outbox-relay';
import { createTopic, KAFKA_USERS, startKafka, type KafkaBroker } from '../../scripts/stack/kafka';
import { prepareStackSecrets } from '../../scripts/stack/secrets';
import { onProductionProfile } from './profile';
import { CapturedLogs, stackVariables } from './stack';

/** The shared stack's brokers. */
export function stackBrokers(): string {
  const value = process.env.KAFKA_BROKERS;
  if (!value) throw new Error('KAFKA_BROKERS is not set: run the tests with npm test');
  return value;
}

/** The stack's Kafka settings besides the brokers: SASL_SSL with the relay's SCRAM user on the production profile. */
const KAFKA_LOGIN_VARIABLES = [
  'KAFKA_SSL',
  'KAFKA_SSL_CA_PATH',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
] as const;

/**
 * The job's Kafka variables for the shared stack as `user`: KAFKA_BROKERS and, on the production profile,
 * TLS and the SCRAM login. The relay's user may only create, describe and write the job's topic; tests
 * read it back (and create other topics) as the profile's admin, whose password the stack prints as
 * STACK_KAFKA_ADMIN_PASSWORD.
 */
function stackKafkaEnv(user: 'relay' | 'admin' = 'relay'): Record<string, string> {
  const env: Record<string, string> = { KAFKA_BROKERS: stackBrokers(), ...stackVariables(KAFKA_LOGIN_VARIABLES) };
  if (user === 'admin' && env.KAFKA_SASL_MECHANISM) {
    const password = process.env.STACK_KAFKA_ADMIN_PASSWORD;
    if (!password) {
      throw new Error('STACK_KAFKA_ADMIN_PASSWORD is not set: the production stack prints it for reading the topic');
    }
    return { ...env, KAFKA_SASL_USERNAME: KAFKA_USERS.admin, KAFKA_SASL_PASSWORD: password };
  }
  return env;
}

/**
 * A kafkajs client of the shared stack as `user` (default the admin, who may read and create topics): on the
 * production profile built as the relay builds its own (`createKafka` with the stack's SASL_SSL settings), on
 * the plaintext dev stack a quiet plain client.
 */
export function stackKafka(user: 'relay' | 'admin' = 'admin', clientId = 'test-consumer'): Kafka {
  if (!process.env.KAFKA_SASL_MECHANISM) {
    dropKafkajsNegativeTimeoutWarning();
    return new Kafka({ clientId, brokers: stackBrokers().split(','), logLevel: logLevel.NOTHING });
  }
  return createKafka(loadConfig({ ...stackKafkaEnv(user), KAFKA_CLIENT_ID: clientId }));
}

/** Creates `topic` on the shared stack unless it exists, as the admin, and waits for its partitions' leaders. */
export async function ensureStackTopic(topic: string, partitions: number): Promise<void> {
  if (!process.env.KAFKA_SASL_MECHANISM) return createTopic(stackBrokers(), topic, { partitions });
  const admin = stackKafka('admin').admin();
  await admin.connect();
  try {
    await ensureTopic(admin, topic, partitions, 1);
  } finally {
    await admin.disconnect();
  }
}

/**
 * A broker of a test file's own (one it may stop and start), of the profile the tests run on: on the
 * production profile SASL_SSL with SCRAM and ACLs, with certificates and passwords of its own in a 0700
 * folder that `destroy()` removes. `clientEnv('relay')` gives the relay's variables on either profile.
 */
export async function startOwnBroker(): Promise<KafkaBroker> {
  if (!onProductionProfile()) return startKafka({});
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-'));
  try {
    const broker = await startKafka({ secrets: prepareStackSecrets(dir), dataDir: path.join(dir, 'kafka') });
    return {
      ...broker,
      destroy: async () => {
        await broker.destroy();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** What `consumeUntil` reads `broker`'s topic with: its address when plaintext, an admin client over SASL_SSL. */
export function brokerReader(broker: KafkaBroker): string | Kafka {
  return broker.production ? createKafka(loadConfig(broker.clientEnv('admin'))) : broker.brokers;
}

export interface TestRelayOptions {
  pool: pg.Pool;
  url: string;
  /** Another broker than the shared stack's (its login then comes with `env`). */
  brokers?: string;
  /** Relay variables on top of a 200 ms poll and a 500 ms backoff ceiling. */
  env?: Record<string, string>;
  /** Dependencies to replace, e.g. `kafkaSocketFactory`. */
  deps?: Partial<RelayDeps>;
}

/** A relay (not started) with its configuration and captured logs. */
export function testRelay(options: TestRelayOptions): OutboxRelay & { logs: CapturedLogs } {
  const logs = new CapturedLogs();
  const config = loadConfig({
    ...(options.brokers ? { KAFKA_BROKERS: options.brokers } : stackKafkaEnv('relay')),
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
