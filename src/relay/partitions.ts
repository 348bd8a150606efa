/**
 * Which partition, and which broker, each outbox row goes to, decided by the relay itself so that it knows
 * what each produce request carries (docs/DESIGN.md#relay-poison-rows). The partition is kafkajs's default
 * partitioner's (murmur2 of the key, as the Java client; `partitionOfKey`), so a key lands where any other
 * producer puts it.
 */
import type { Kafka, PartitionMetadata } from 'kafkajs';
import type { Config } from '../config';
import type { OutboxMessage } from '../db/outbox';
import { topicRefusal, TopicRefusedError } from './refusals';
import { TOPIC } from '../domain/names';
import { ensureTopic } from './kafka';
import { partitionOfKey } from './key-partition';

/** Rows of one topic partition, in claim order. */
export interface PartitionGroup {
  topic: string;
  partition: number;
  rows: OutboxMessage[];
}

/** Partition groups whose partitions have one leader broker: they go in one produce request. */
export interface LeaderGroup {
  leader: number;
  groups: PartitionGroup[];
}

/** Partition counts only grow, and rarely; re-read them this often, and after every failed batch. */
const MAX_AGE_MS = 5 * 60_000;

/** What {@link TopicPartitions.of} read: the partitions of each topic, and the topics Kafka refused the relay. */
export interface TopicsRead {
  partitions: ReadonlyMap<string, PartitionMetadata[]>;
  /** Topics other than the job's whose metadata Kafka refused the relay's principal (its ACLs). */
  refused: ReadonlyMap<string, TopicRefusedError>;
}

/** The partitions of the topics the relay writes, read with the admin client and kept for a while. */
export class TopicPartitions {
  private readonly known = new Map<string, PartitionMetadata[]>();
  private readAt = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly config: Pick<Config, 'kafka'>,
  ) {}

  /** Forgets what it read, so the next batch reads the partitions again (and ensures the topic). */
  invalidate(): void {
    this.known.clear();
  }

  /**
   * The partitions of `topics`. The job's topic is created when missing (the relay never relies on broker
   * auto-create); any other topic must exist. A topic other than the job's that Kafka refuses the relay is
   * listed as refused (read again next time, so a corrected ACL counts); the job's own refused fails the call.
   */
  async of(topics: Iterable<string>): Promise<TopicsRead> {
    if (Date.now() - this.readAt > MAX_AGE_MS) this.known.clear();
    const fresh = this.known.size === 0;
    const missing = [...new Set(topics)].filter((t) => !this.known.has(t));
    const refused = new Map<string, TopicRefusedError>();
    if (missing.length > 0) {
      const admin = this.kafka.admin();
      await admin.connect();
      try {
        for (const topic of missing) {
          let parts: PartitionMetadata[];
          try {
            parts =
              topic === TOPIC
                ? await ensureTopic(
                    admin,
                    topic,
                    this.config.kafka.topicPartitions,
                    this.config.kafka.topicReplicationFactor,
                  )
                : ((await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions ?? []);
          } catch (err) {
            const refusal = topicRefusal(err);
            if (!refusal) throw err;
            const named = new TopicRefusedError(topic, refusal);
            if (topic === TOPIC) throw named;
            refused.set(topic, named);
            continue;
          }
          if (parts.length === 0) throw new Error(`topic ${topic} has no partitions`);
          this.known.set(topic, parts);
        }
        if (fresh) this.readAt = Date.now();
      } finally {
        await admin.disconnect().catch(() => {});
      }
    }
    return { partitions: this.known, refused };
  }
}

/**
 * Splits a batch by the topics Kafka refused: rows naming one are rejected with its refusal, and the later
 * rows of their keys wait (order per key), as behind any refused row; the rest is sent.
 */
export function setRefusedApart(
  rows: readonly OutboxMessage[],
  refused: ReadonlyMap<string, Error>,
): { sendable: OutboxMessage[]; rejected: { row: OutboxMessage; error: string }[] } {
  const sendable: OutboxMessage[] = [];
  const rejected: { row: OutboxMessage; error: string }[] = [];
  const held = new Set<string>();
  for (const row of rows) {
    const refusal = refused.get(row.topic);
    if (refusal) {
      rejected.push({ row, error: refusal.message });
      held.add(row.message_key);
    } else if (!held.has(row.message_key)) sendable.push(row);
  }
  return { sendable, rejected };
}

/** Groups rows by topic and partition, keeping their claim order within each group. */
export function groupByPartition(
  rows: readonly OutboxMessage[],
  partitions: ReadonlyMap<string, PartitionMetadata[]>,
): PartitionGroup[] {
  // Per topic, its groups by partition number: no key string is built per row.
  const byTopic = new Map<string, { count: number; groups: PartitionGroup[] }>();
  const all: PartitionGroup[] = [];
  for (const row of rows) {
    let topic = byTopic.get(row.topic);
    if (!topic) {
      const partitionMetadata = partitions.get(row.topic);
      if (!partitionMetadata) throw new Error(`no partitions known for topic ${row.topic}`);
      topic = { count: partitionMetadata.length, groups: [] };
      byTopic.set(row.topic, topic);
    }
    const partition = partitionOfKey(row.message_key, topic.count);
    let group = topic.groups[partition];
    if (!group) {
      group = { topic: row.topic, partition, rows: [] };
      topic.groups[partition] = group;
      all.push(group);
    }
    group.rows.push(row);
  }
  return all;
}

/**
 * Groups partition groups by the broker that leads their partition, as read with the admin client. kafkajs
 * sends one request per broker; the relay sends one per leader group, so it knows what each request held.
 */
export function groupByLeader(
  groups: readonly PartitionGroup[],
  partitions: ReadonlyMap<string, PartitionMetadata[]>,
): LeaderGroup[] {
  const leaders = new Map<number, LeaderGroup>();
  for (const group of groups) {
    const leader = partitions.get(group.topic)?.find((p) => p.partitionId === group.partition)?.leader ?? -1;
    const entry = leaders.get(leader) ?? { leader, groups: [] };
    entry.groups.push(group);
    leaders.set(leader, entry);
  }
  return [...leaders.values()];
}
