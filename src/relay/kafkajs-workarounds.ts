/**
 * What the relay does around kafkajs 2.2.4, its last release, rather than through it: each workaround names
 * the kafkajs behaviour it works around and, where there is one, its kafkajs issue. Delete one when kafkajs
 * (or its replacement) fixes what it works around.
 */
import { createRequire } from 'node:module';
import { logLevel as KafkaLogLevel } from 'kafkajs';
import { PRODUCER_ABANDONED_MESSAGE, ProducerAbandonedError } from './producer';

/** Where kafkajs's request queue, in a call stack. */
const KAFKAJS_REQUEST_QUEUE = /[\\/]kafkajs[\\/]src[\\/]network[\\/]requestQueue[\\/]/;
let negativeTimeoutFilter = false;

/**
 * kafkajs 2.2.4, its last release, arms its request queue's check with a negative delay
 * (`throttledUntil - Date.now()` while throttledUntil is -1; tulios/kafkajs#1751). Node 24 prints a
 * TimeoutNegativeWarning for it, once per process, where Node 20 said nothing; on both the timer fires
 * after 1 ms. This drops that warning when kafkajs's request queue raised it, and no other warning,
 * so the relay's stderr carries only what someone has to read. Process-wide; installed once.
 */
export function dropKafkajsNegativeTimeoutWarning(): void {
  if (negativeTimeoutFilter) return;
  negativeTimeoutFilter = true;
  const emitWarning = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const option = rest[0];
    const type = typeof option === 'string' ? option : (option as { type?: string } | undefined)?.type;
    if (type === 'TimeoutNegativeWarning' && KAFKAJS_REQUEST_QUEUE.test(new Error().stack ?? '')) return;
    emitWarning(warning, ...rest);
  }) as typeof process.emitWarning;
}

/**
 * Messages of the Kafka errors kafkajs retries by itself (the coordinator loading, a leader moving, …), from
 * kafkajs's own table: kafkajs does not export it (its package has no `exports` map, so the file is
 * reachable), and a copy would drift from the version installed.
 */
const RETRIABLE_KAFKA_ERRORS: ReadonlySet<string> = new Set(
  (
    createRequire(__filename)('kafkajs/src/protocol/error') as { errorCodes: { retriable: boolean; message: string }[] }
  ).errorCodes
    .filter((e) => e.retriable)
    .map((e) => e.message),
);

/**
 * The level a kafkajs line is logged at: error only for what needs someone to act. kafkajs logs at ERROR what
 * it retries by itself (tulios/kafkajs#1468, open), and its lines carry the Kafka error's message, not its
 * code, so the line's text is what tells them apart. What kafkajs retries by itself (a retriable Kafka error,
 * a request it will send again) is info, and what the relay does on purpose is debug: abandoning a producer (a stop, a send timeout; the relay logs its own line) and limiting
 * the idempotent producer's retries (the relay retries batches itself; docs/DESIGN.md#relay-a-send-that-times-out-is-over).
 */
export function kafkaLineLevel(
  level: KafkaLogLevel,
  message: string,
  fields: { error?: unknown; stack?: unknown; retryCount?: unknown; [key: string]: unknown },
): 'error' | 'warn' | 'info' | 'debug' {
  const text = `${message} ${String(fields.error ?? '')} ${String(fields.stack ?? '')}`;
  if (text.includes(ProducerAbandonedError.name) || text.includes(PRODUCER_ABANDONED_MESSAGE)) return 'debug';
  if (message.startsWith('Limiting retries for the idempotent producer')) return 'debug';
  if (level === KafkaLogLevel.ERROR || level === KafkaLogLevel.WARN) {
    const retried = RETRIABLE_KAFKA_ERRORS.has(String(fields.error ?? message)) || fields.retryCount !== undefined;
    if (retried) return 'info';
    return level === KafkaLogLevel.ERROR ? 'error' : 'warn';
  }
  return 'debug';
}
