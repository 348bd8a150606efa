/**
 * One batch's way to Kafka (docs/DESIGN.md#relay-poison-rows). The rows of each leader broker go in one
 * produce request, all brokers at once, as kafkajs would send them. Kafka answers a request per
 * partition, so when it refuses a request for its content (a row too large or invalid), each partition
 * is sent again on its own (the broker recognises what it appended already), and a partition refused on
 * its own is split in halves, the first half first, until the refused row is alone: the rows around it
 * are published, the row is recorded as rejected, and the later rows of its key wait for a later batch,
 * so order per key holds. A failure without a verdict (Kafka unreachable, the deadline) releases the rows
 * of that request, or of that partition, not yet acknowledged, as failed.
 */
import type { OutboxMessage, PublishedPlacement } from '../db/outbox';
import { TOPIC } from '../domain/names';
import type { LeaderGroup, PartitionGroup } from './partitions';
import { topicRefusal, TopicRefusedError } from './refusals';
import { errorOf } from '../domain/failures';

/**
 * Kafka's refusals of a request for what is in it: the same rows can never succeed, however often they are
 * retried. Errors that say something about the broker, the network or the client (timestamps follow the
 * relay's clock) are not here: they fail whole batches, never single rows.
 */
const CONTENT_REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);

/** The refusal in `err` or its causes, when Kafka refused a request for its content. */
export function contentRefusal(err: unknown): Error | undefined {
  for (let e = err as { type?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.type === 'string' && CONTENT_REFUSALS.has(e.type)) return e as unknown as Error;
    e = e.cause as typeof e;
  }
  return undefined;
}

/** The relay's own limit on a batch's Kafka work: RELAY_SEND_TIMEOUT. */
export class SendTimeoutError extends Error {
  constructor(ms: number) {
    super(`Kafka did not acknowledge the batch within ${ms} ms`);
    this.name = 'SendTimeoutError';
  }
}

/**
 * A batch's deadline. When it passes, `onExpire` runs first, synchronously (the relay abandons its producer
 * there, so nothing more is written to Kafka), then every pending {@link race} rejects.
 */
export class Deadline {
  private readonly timer: NodeJS.Timeout;
  private readonly expired: Promise<never>;

  constructor(ms: number, onExpire: () => void) {
    let expire: (err: Error) => void = () => {};
    this.expired = new Promise<never>((_, reject) => (expire = reject));
    this.expired.catch(() => {});
    this.timer = setTimeout(() => {
      onExpire();
      expire(new SendTimeoutError(ms));
    }, ms);
  }

  /** `promise`, or a {@link SendTimeoutError} once the deadline passed. */
  race<T>(promise: Promise<T>): Promise<T> {
    // The loser still settles later (an abandoned send fails); nobody waits for it then.
    promise.catch(() => {});
    return Promise.race([promise, this.expired]);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** What became of a batch's rows. Rows in none of the lists wait behind a rejected row of their key. */
export interface Delivery {
  /** Acknowledged by Kafka: mark them published. */
  published: OutboxMessage[];
  /** Where each published row went, by row id, when Kafka said (the base offset of its partition's batch). */
  placements: Map<string, PublishedPlacement>;
  /** Refused by Kafka when sent on their own, with Kafka's reason. */
  rejected: { row: OutboxMessage; error: string }[];
  /** Fate unknown (no verdict): release them as a failed attempt. */
  failed: OutboxMessage[];
  /** The first failure without a verdict; set whenever `failed` is not empty. */
  error?: Error;
}

/** Kafka's acknowledgement of one partition's messages in a produce request: where the first was appended. */
interface Appended {
  topicName: string;
  partition: number;
  baseOffset?: string;
}

/**
 * Sends groups that share `leader` in one produce request; resolves once Kafka acknowledged them all, with
 * each partition's base offset when the client reports it.
 */
export type SendGroups = (groups: readonly PartitionGroup[], leader: number) => Promise<readonly Appended[] | void>;

/**
 * Records where `groups`' rows went: a partition's messages of one request are appended in order from its
 * base offset, so the i-th row of a group sits at base + i.
 */
function place(out: Delivery, groups: readonly PartitionGroup[], appended: readonly Appended[] | void): void {
  for (const group of groups) {
    out.published.push(...group.rows);
    const base = appended?.find((a) => a.topicName === group.topic && a.partition === group.partition)?.baseOffset;
    if (base === undefined || !/^\d+$/.test(base)) continue;
    const { partition, rows } = group;
    // A number while every offset of the run is exact as one (below 2^53, which a partition does not reach in
    // practice); BigInt otherwise. One BigInt a row was a tenth of the relay's own CPU.
    const first = Number(base);
    if (Number.isSafeInteger(first + rows.length)) {
      for (let i = 0; i < rows.length; i++) out.placements.set(rows[i].id, { partition, offset: String(first + i) });
      continue;
    }
    const big = BigInt(base);
    rows.forEach((row, i) => out.placements.set(row.id, { partition, offset: (big + BigInt(i)).toString() }));
  }
}

/** Delivers every leader's request at once, each under `deadline`, and says what became of each row. */
export async function deliver(
  leaders: readonly LeaderGroup[],
  send: SendGroups,
  deadline: Deadline,
): Promise<Delivery> {
  const out: Delivery = { published: [], placements: new Map(), rejected: [], failed: [] };
  await Promise.all(leaders.map((leader) => deliverLeader(leader, send, deadline, out)));
  return out;
}

async function deliverLeader(
  { leader, groups }: LeaderGroup,
  send: SendGroups,
  deadline: Deadline,
  out: Delivery,
): Promise<void> {
  let refusal: Error | undefined;
  try {
    place(out, groups, await deadline.race(send(groups, leader)));
    return;
  } catch (err) {
    // A topic refusal may be one partition's: each is sent again alone, as for content.
    refusal = contentRefusal(err) ?? topicRefusal(err);
    if (!refusal) {
      out.error ??= errorOf(err);
      for (const group of groups) out.failed.push(...group.rows);
      return;
    }
  }
  // Refused for the content of one partition (or more). Kafka answered per partition and may have
  // appended the others; each partition is sent again unchanged (RelayProducer.send says why that is
  // safe), and every one must go again, or the producer's sequence numbers would be off. A partition that
  // was the request's only one was refused already: it is split at once.
  const alone = groups.length === 1 ? refusal : undefined;
  await Promise.all(groups.map((group) => deliverPartition(group, leader, alone, send, deadline, out)));
}

async function deliverPartition(
  group: PartitionGroup,
  leader: number,
  refused: Error | undefined,
  send: SendGroups,
  deadline: Deadline,
  out: Delivery,
): Promise<void> {
  const done = new Set<OutboxMessage>();
  // Keys with a row refused in this batch: their later rows must not overtake it.
  const held = new Set<string>();
  const refusedAlone = (row: OutboxMessage, refusal: Error) => {
    done.add(row);
    held.add(row.message_key);
    out.rejected.push({ row, error: refusal.message });
  };
  /**
   * Rows sent on their own (one partition's) and refused: the row when it is alone, or every row at once when
   * Kafka refused the topic itself, since each would be refused alike. True when that settled them.
   * @throws TopicRefusedError for the job's own topic: the ACLs are wrong, and no row is to blame.
   */
  const settleRefused = (rows: OutboxMessage[], refusal: Error): boolean => {
    if (topicRefusal(refusal)) {
      const named = new TopicRefusedError(group.topic, refusal);
      if (group.topic === TOPIC) throw named;
      for (const row of rows) refusedAlone(row, named);
      return true;
    }
    if (rows.length !== 1) return false;
    refusedAlone(rows[0], refusal);
    return true;
  };
  // Refused whole, so nothing of it was appended: halve it, in order, until the refused row is alone.
  const halve = async (rows: OutboxMessage[]) => {
    const half = Math.ceil(rows.length / 2);
    await attempt(rows.slice(0, half));
    await attempt(rows.slice(half));
  };
  const attempt = async (rows: OutboxMessage[]): Promise<void> => {
    const ready = rows.filter((r) => !held.has(r.message_key));
    if (ready.length === 0) return;
    try {
      const piece = { ...group, rows: ready };
      const appended = await deadline.race(send([piece], leader));
      for (const row of ready) done.add(row);
      place(out, [piece], appended);
      return;
    } catch (err) {
      const refusal = contentRefusal(err) ?? topicRefusal(err);
      if (!refusal) throw err;
      if (settleRefused(ready, refusal)) return;
    }
    await halve(ready);
  };
  try {
    if (!refused) await attempt(group.rows);
    else if (!settleRefused(group.rows, refused)) await halve(group.rows);
  } catch (err) {
    out.error ??= errorOf(err);
    out.failed.push(...group.rows.filter((r) => !done.has(r) && !held.has(r.message_key)));
  }
}
