/**
 * How Kafka refuses the relay a topic (its ACLs): recognised in an error, and named, for the relay's
 * delivery and its partition lookup alike.
 */
import { TOPIC } from '../domain/names';

/**
 * Kafka's refusal of a topic to the relay's principal (the broker's ACLs), in `err` or its causes: it
 * refuses every row that names the topic, so it is a verdict on those rows, not on the batch.
 */
export function topicRefusal(err: unknown): Error | undefined {
  for (let e = err as { type?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
    if (e instanceof TopicRefusedError) return e;
    if (e.type === 'TOPIC_AUTHORIZATION_FAILED') return e as unknown as Error;
    e = e.cause as typeof e;
  }
  return undefined;
}

/**
 * Kafka refused the relay's principal a topic, named here because Kafka's error does not name it. For a
 * row naming another topic than the job's, the row's fault (it is parked like any refused row); for the
 * job's own topic, the ACLs are wrong and no row is to blame.
 */
export class TopicRefusedError extends Error {
  constructor(
    readonly topic: string,
    readonly refusal: Error,
  ) {
    super(
      topic === TOPIC
        ? `Kafka refused topic ${topic} to the relay's user (${refusal.message}): ` +
            `grant the relay's user CREATE, DESCRIBE and WRITE on it (ops/kafka/acls.sh)`
        : `Kafka refused topic ${topic} to the relay's user (${refusal.message}): the relay writes only ` +
            `${TOPIC}, which its ACL allows; fix the row's topic (or the ACL), then run outbox retry`,
    );
    this.name = 'TopicRefusedError';
  }
}
