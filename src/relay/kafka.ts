/** Kafka clients for the relay and the tools: connection settings, the topic, and message headers. */
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import {
  Kafka,
  logLevel as KafkaLogLevel,
  type Admin,
  type IHeaders,
  type ISocketFactory,
  type KafkaConfig,
  type Message,
  type PartitionMetadata,
  type SASLOptions,
} from 'kafkajs';
import type { Config } from '../config';
import type { OutboxMessage } from '../db/outbox';
import type { Logger } from '../observability/logger';
import { TopicRefusedError } from './refusals';
import { dropKafkajsNegativeTimeoutWarning, kafkaLineLevel } from './kafkajs-workarounds';

/**
 * A kafkajs client from configuration, logging through pino at WARN and above.
 * @param client.socketFactory how the client opens its sockets (the relay's producers pass a gated one).
 */
export function createKafka(
  config: Pick<Config, 'kafka'>,
  logger?: Logger,
  client: { socketFactory?: ISocketFactory } = {},
): Kafka {
  dropKafkajsNegativeTimeoutWarning();
  const k = config.kafka;
  const log = logger?.child({ component: 'kafkajs' });
  const options: KafkaConfig = {
    clientId: k.clientId,
    brokers: k.brokers,
    ssl: typeof k.ssl === 'object' ? { ca: [fs.readFileSync(k.ssl.caPath ?? '')] } : k.ssl,
    sasl: k.sasl as SASLOptions | undefined,
    connectionTimeout: 5_000,
    requestTimeout: 15_000,
    // The relay retries whole batches itself, with its own backoff and timeout.
    retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 5_000 },
    ...(client.socketFactory ? { socketFactory: client.socketFactory } : {}),
    logLevel: KafkaLogLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log: line }) => {
        if (!log) return;
        const { message, ...rest } = line;
        log[kafkaLineLevel(level, message, rest)]({ namespace, ...rest }, message);
      },
  };
  return new Kafka(options);
}

/**
 * Creates the topic when it is missing (never relying on broker auto-create) and waits until every
 * partition has a leader; a producer racing a fresh topic on KRaft otherwise fails with "This server
 * does not host this topic-partition".
 * @returns the topic's partitions.
 */
export async function ensureTopic(
  admin: Admin,
  topic: string,
  partitions: number,
  replicationFactor: number,
): Promise<PartitionMetadata[]> {
  const existing = await admin.listTopics();
  if (!existing.includes(topic)) {
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic, numPartitions: partitions, replicationFactor }],
      });
    } catch (err) {
      if ((err as { type?: string }).type !== 'TOPIC_ALREADY_EXISTS') throw err;
    }
  }
  for (let i = 0; i < 100; i++) {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const parts = topics[0]?.partitions ?? [];
    if (parts.length > 0 && parts.every((p) => p.leader >= 0)) return parts;
    await sleep(100);
  }
  throw new Error(`topic ${topic} has partitions without a leader after 10 s`);
}

/** docs/DESIGN.md#event headers: what a consumer needs to route and deduplicate without parsing the value. */
function messageHeaders(row: OutboxMessage): IHeaders {
  return {
    eventType: row.event_type,
    contractVersion: String(row.contract_version),
    correlationId: row.correlation_id,
    aggregateType: row.aggregate_type,
    aggregateId: row.aggregate_id,
    messageId: row.id,
  };
}

/**
 * The Kafka message for an outbox row: key = owner id, value = the JSON payload as stored; `partition` when the
 * relay has chosen it (`partitionOfKey`, the Java client's rule).
 */
export function toKafkaMessage(row: OutboxMessage, partition?: number): Message {
  return { key: row.message_key, value: row.payload, headers: messageHeaders(row), partition };
}

/** Kafka refused the relay's credentials: said with the variables to check, since kafkajs names none. */
class KafkaLoginError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'KafkaLoginError';
  }
}

/** True for a failure that lasts until a person acts: a refused login, or the job's topic refused by the ACLs. */
export function needsOperator(err: Error): boolean {
  return err instanceof KafkaLoginError || err instanceof TopicRefusedError;
}

/** The names and messages of `err` and its causes. */
function errorChain(err: unknown): { names: string[]; text: string } {
  const names: string[] = [];
  const messages: string[] = [];
  for (
    let e = err as { name?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    depth++
  ) {
    names.push(String(e.name));
    messages.push(String(e.message));
    e = e.cause as typeof e;
  }
  return { names, text: messages.join(' ') };
}

/**
 * A Kafka failure said so that a person can act on it. kafkajs reports a refused SASL login, and a TLS
 * listener hanging up on a client without TLS, in words that name no setting; this adds what to check.
 * Other errors are returned as they are.
 */
export function explainKafkaError(err: Error, kafka: Config['kafka']): Error {
  if (needsOperator(err)) return err;
  const { names, text } = errorChain(err);
  if (names.includes('KafkaJSSASLAuthenticationError')) {
    const who = kafka.sasl ? `"${kafka.sasl.username}" (${kafka.sasl.mechanism.toUpperCase()})` : '(no SASL user)';
    return new KafkaLoginError(
      `Kafka refused the SASL login of ${who}: check KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD, and that ` +
        `the user exists with that mechanism on the cluster (KAFKA_SASL_MECHANISM). Kafka said: ${err.message}`,
      { cause: err },
    );
  }
  const hungUp = /Closed connection|ECONNRESET|socket hang up/.test(text);
  if (hungUp && !kafka.ssl) {
    return new Error(
      `${err.message} (KAFKA_SSL is off: a broker whose listener is SSL or SASL_SSL closes a connection ` +
        `without TLS; then set KAFKA_SSL=true, and KAFKA_SSL_CA_PATH for a private CA)`,
      { cause: err },
    );
  }
  if (hungUp && !kafka.sasl) {
    return new Error(
      `${err.message} (no SASL login is configured: a SASL_SSL listener closes a connection that does not log ` +
        `in; then set KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD)`,
      { cause: err },
    );
  }
  if (kafka.ssl && /self[- ]signed certificate|unable to verify|unable to get local issuer/i.test(text)) {
    return new Error(
      `${err.message} (the broker's TLS certificate is not trusted: set KAFKA_SSL_CA_PATH to the CA that signed it)`,
      { cause: err },
    );
  }
  return err;
}
