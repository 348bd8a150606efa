/** Outbox rows written straight into the table, for the relay's tests: keys, order, size and partitions chosen. */
import crypto from 'node:crypto';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import type { Queryable } from '../../src/db/pool';
import { TOPIC } from '../../src/domain/names';

export interface RowSeed {
  key: string;
  /** The row's place within its key, carried in the payload so order can be read back from the topic. */
  seq: number;
  /** Payload size in bytes; above the broker's message.max.bytes (1 MB by default) Kafka refuses the row. */
  padBytes?: number;
}

export interface SeededRow extends RowSeed {
  id: string;
}

/**
 * Inserts rows in the given order (`created_at` one millisecond apart), all with `correlationId`, so a
 * test finds its own messages on the shared topic: into the old outbox (`outbox_messages`, the default, for the
 * tests of its own pass) or into the insert-only one the worker writes (`outbox_events`), in one transaction.
 */
export async function insertOutboxRows(
  db: Queryable,
  correlationId: string,
  seeds: RowSeed[],
  table: 'outbox_messages' | 'outbox_events' = 'outbox_messages',
): Promise<SeededRow[]> {
  const rows = seeds.map((s) => ({ ...s, id: crypto.randomUUID() }));
  await db.query(
    `insert into profile.${table} (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id, created_at)
     select r.id, 'Profile', gen_random_uuid(), $2, r.key, 'RelayTest', 1,
            jsonb_build_object('seq', r.seq, 'key', r.key, 'pad', repeat('x', r.pad)), $3,
            clock_timestamp() + make_interval(secs => r.ord * 0.001)
       from jsonb_to_recordset($1::jsonb) as r(id uuid, key text, seq int, pad int, ord int)`,
    [
      JSON.stringify(rows.map((r, ord) => ({ id: r.id, key: r.key, seq: r.seq, pad: r.padBytes ?? 0, ord }))),
      TOPIC,
      correlationId,
    ],
  );
  return rows;
}

/** The partition the relay (and any Java-compatible producer) sends `key` to, on a topic of `count` partitions. */
function partitionOf(key: string, count = 3): number {
  const partitionMetadata = Array.from({ length: count }, (_, i): PartitionMetadata => ({
    partitionId: i,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  return Partitioners.DefaultPartitioner()({ topic: TOPIC, partitionMetadata, message: { key, value: null } });
}

/** `n` fresh keys that land on `partition`. */
export function keysOn(partition: number, n: number, count = 3): string[] {
  const keys: string[] = [];
  while (keys.length < n) {
    const key = crypto.randomUUID();
    if (partitionOf(key, count) === partition) keys.push(key);
  }
  return keys;
}

/** Messages per outbox id, among `messages` read from the topic. */
export function copiesById(messages: { headers: Record<string, string> }[]): Map<string, number> {
  const copies = new Map<string, number>();
  for (const m of messages) copies.set(m.headers.messageId, (copies.get(m.headers.messageId) ?? 0) + 1);
  return copies;
}
