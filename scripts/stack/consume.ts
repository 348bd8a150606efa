/** Reading the real topic back, as a consumer would (the demo and the tests use it). */
import crypto from 'node:crypto';
import { Kafka, logLevel, type Consumer, type IHeaders } from 'kafkajs';
import { dropKafkajsNegativeTimeoutWarning } from '../../src/relay/kafkajs-workarounds';
import { ensureTopic } from '../../src/relay/kafka';
import { TOPIC } from '../../src/domain/names';

export interface ConsumedMessage {
  partition: number;
  offset: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}

function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) out[k] = Array.isArray(v) ? String(v[0]) : String(v);
  return out;
}

/**
 * Consumes the topic from the beginning with a fresh group until `until(messages)` holds or the time
 * runs out, and returns what it read (every message, in per-partition order).
 * @param from the brokers of a plaintext cluster, or a client with its own login (a SASL_SSL cluster's).
 */
export async function consumeUntil(
  from: string | Kafka,
  until: (messages: ConsumedMessage[]) => boolean,
  timeoutMs = 60_000,
  topic = TOPIC,
): Promise<ConsumedMessage[]> {
  dropKafkajsNegativeTimeoutWarning();
  const kafka =
    typeof from === 'string'
      ? new Kafka({ clientId: 'test-consumer', brokers: from.split(','), logLevel: logLevel.NOTHING })
      : from;
  const consumer = kafka.consumer({
    groupId: `test-${crypto.randomUUID()}`,
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
  });
  // The relay creates the topic with its first send; a reader that comes first must not fail on it.
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopic(admin, topic, 3, 1);
  } finally {
    await admin.disconnect();
  }
  return readUntil(consumer, topic, until, timeoutMs);
}

/**
 * Reads `topic` with `consumer` (from its group's committed offsets, else from the beginning) until
 * `until(messages)` holds or `timeoutMs` runs out, then disconnects it.
 */
export async function readUntil(
  consumer: Consumer,
  topic: string,
  until: (messages: ConsumedMessage[]) => boolean,
  timeoutMs: number,
): Promise<ConsumedMessage[]> {
  const messages: ConsumedMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`consumed ${messages.length} messages; the condition did not hold within ${timeoutMs} ms`)),
        timeoutMs,
      );
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            messages.push({
              partition,
              offset: message.offset,
              key: message.key?.toString() ?? '',
              value: message.value?.toString() ?? '',
              headers: headersToStrings(message.headers),
            });
            if (until(messages)) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return messages;
}
