/**
 * The relay's Kafka producer (docs/DESIGN.md#relay-a-send-that-times-out-is-over). Its client opens every
 * socket through a gate. Abandoning the producer closes the gate: its sockets are destroyed, none opens
 * again, and a request kafkajs built before but had not written yet is not written. kafkajs retries an
 * idempotent producer's send without end and reconnects on its own, so without the gate a send the relay
 * gave up on could still reach the broker after its rows were released to another relay.
 */
import net from 'node:net';
import tls from 'node:tls';
import {
  KafkaJSNonRetriableError,
  type ISocketFactory,
  type Kafka,
  type Message,
  type Producer,
  type RecordMetadata,
} from 'kafkajs';

/**
 * How long an abandoned producer gets to wind down (kafkajs gives up its retries, the client disconnects)
 * before the relay goes on. Nothing of it reaches a broker meanwhile; this only bounds the wait.
 */
export const WIND_DOWN_MS = 5_000;

export const PRODUCER_ABANDONED_MESSAGE = 'the producer was abandoned: its send timed out or ended without a verdict';

/** Thrown by a send, a socket or a retry of a producer that was abandoned. */
export class ProducerAbandonedError extends Error {
  constructor() {
    super(PRODUCER_ABANDONED_MESSAGE);
    this.name = 'ProducerAbandonedError';
  }
}

/** kafkajs's own socket factory, which it does not export: TCP, or TLS with SNI for host names. */
export const plainSocketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
  const socket = ssl
    ? tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...ssl }, onConnect)
    : net.connect({ host, port }, onConnect);
  socket.setKeepAlive(true, 60_000);
  return socket;
};

/** The sockets of one producer's client, and the switch that ends them all. */
class SocketGate {
  closed = false;
  private readonly open = new Set<net.Socket>();

  constructor(private readonly base: ISocketFactory) {}

  readonly factory: ISocketFactory = (args) => {
    // kafkajs reports this as a failed connection; its connect retries then run out within seconds.
    if (this.closed) throw new ProducerAbandonedError();
    const socket = this.base(args);
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((...writeArgs: unknown[]) => {
      if (!this.closed) return write(...writeArgs);
      socket.destroy(new ProducerAbandonedError());
      return false;
    }) as typeof socket.write;
    return socket;
  };

  close(): void {
    this.closed = true;
    // With an error, so kafkajs fails the requests in flight at once instead of at its request timeout.
    for (const socket of this.open) socket.destroy(new ProducerAbandonedError());
  }

  get openSockets(): number {
    return this.open.size;
  }
}

/** Messages for one topic partition, and where they must go; each message names that partition too. */
export interface PartitionMessages {
  topic: string;
  partition: number;
  messages: Message[];
}

/** A topic partition as one string, for the maps of a producer's sends in flight. */
const topicPartition = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * A send whose partitions kafkajs found on other brokers than the relay expected (leadership moved):
 * kafkajs split it into several requests, so a refusal of one says nothing about the others. No verdict.
 */
export class LeaderMovedError extends Error {
  constructor(readonly refusal: unknown) {
    super(`a partition of the request moved to another broker: ${(refusal as Error)?.message ?? refusal}`);
    this.name = 'LeaderMovedError';
  }
}

/** The relay's idempotent producer and its gate; abandoned for good after a send without a verdict. */
export class RelayProducer {
  private readonly gate: SocketGate;
  private readonly producer: Producer;
  private readonly inFlight = new Set<Promise<unknown>>();
  private connecting: Promise<void> | undefined;
  /**
   * The broker each topic partition of a send in flight was grouped for, and the partitions kafkajs found
   * elsewhere. Per partition, not per message: a partition is in one send at a time (one request in flight per
   * broker), and a message costs no copy or entry.
   */
  private readonly expectedLeader = new Map<string, number>();
  private readonly strays = new Set<string>();

  /**
   * @param createClient builds the client from a socket factory (`createKafka` with the relay's settings).
   * @param baseSocketFactory how sockets are really opened (tests route them through a proxy).
   */
  constructor(
    createClient: (socketFactory: ISocketFactory) => Kafka,
    baseSocketFactory: ISocketFactory = plainSocketFactory,
  ) {
    const gate = new SocketGate(baseSocketFactory);
    this.gate = gate;
    this.producer = createClient(gate.factory).producer({
      idempotent: true,
      // One request in flight per broker keeps each partition's order.
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // Every message names its partition. kafkajs calls the partitioner on every attempt of a send, with
      // the metadata it then groups requests by, before it builds them: an abandoned producer's retries end
      // here without a request, and a message whose partition kafkajs sees on another broker is noted.
      createPartitioner: () => (args) => {
        if (gate.closed) throw new KafkaJSNonRetriableError(new ProducerAbandonedError());
        // `send` names every message's partition, the one the relay grouped it by (`partitionOfKey`); there
        // is no second choice to fall back on.
        const { partition } = args.message;
        if (partition === undefined) {
          throw new KafkaJSNonRetriableError(new Error('a message without a partition reached the producer'));
        }
        const leader = args.partitionMetadata.find((p) => p.partitionId === partition)?.leader;
        const sent = topicPartition(args.topic, partition);
        if (leader !== this.expectedLeader.get(sent)) this.strays.add(sent);
        return partition;
      },
    });
  }

  /** True once abandoned: it sends nothing any more. */
  get abandoned(): boolean {
    return this.gate.closed;
  }

  /** Sockets still open; 0 once an abandoned producer has wound down. */
  get openSockets(): number {
    return this.gate.openSockets;
  }

  /**
   * Sends partitions that all have `leader` as their leader, in one produce request, and resolves once Kafka
   * acknowledged all of them. Kafka answers such a request per partition: when it refuses one partition it
   * may have appended the others, and kafkajs, which throws for the whole request, then rolls back the
   * sequence numbers of all of them. Re-sending each partition's messages unchanged with this producer is
   * therefore safe: the broker recognises what it already appended and answers without appending it again.
   * Connects on first use.
   * @throws LeaderMovedError, instead of Kafka's error, when a partition turned out to lead elsewhere:
   *   kafkajs then split the send into several requests, and the rule above does not hold.
   */
  async send(parts: readonly PartitionMessages[], leader: number): Promise<RecordMetadata[]> {
    if (this.gate.closed) throw new ProducerAbandonedError();
    this.connecting ??= this.track(this.producer.connect());
    await this.connecting;
    const sent = parts.map((p) => topicPartition(p.topic, p.partition));
    for (const [i, { partition, messages }] of parts.entries()) {
      // The partitioner below returns the message's own partition; one named otherwise would go elsewhere.
      if (messages.some((m) => m.partition !== partition)) {
        throw new Error(`a message of partition ${partition} names partition ${String(messages[0]?.partition)}`);
      }
      this.expectedLeader.set(sent[i], leader);
      this.strays.delete(sent[i]);
    }
    try {
      // kafkajs merges the entries of one topic into one list before it groups them by partition.
      return await this.track(
        this.producer.sendBatch({
          acks: -1,
          topicMessages: parts.map((p) => ({ topic: p.topic, messages: p.messages })),
        }),
      );
    } catch (err) {
      if (sent.some((tp) => this.strays.has(tp))) throw new LeaderMovedError(err);
      throw err;
    } finally {
      for (const tp of sent) this.expectedLeader.delete(tp);
    }
  }

  /**
   * Closes the gate, at once and synchronously: from here on nothing of this producer reaches a broker.
   * Call {@link windDown} afterwards to wait for kafkajs to give up and to disconnect.
   */
  abandon(): void {
    this.gate.close();
  }

  /**
   * Abandons the producer, then, within `graceMs` in all, waits for kafkajs to give up the sends it still has
   * in hand (they fail without a request once the gate is closed) and disconnects.
   * @returns true when nothing of it is left: no send pending, no socket open.
   */
  async windDown(graceMs = WIND_DOWN_MS): Promise<boolean> {
    this.abandon();
    const until = Date.now() + graceMs;
    const settled = await settleWithin(Promise.allSettled([...this.inFlight]), graceMs);
    const disconnected = await settleWithin(this.producer.disconnect(), Math.max(0, until - Date.now()));
    return settled && disconnected && this.inFlight.size === 0 && this.gate.openSockets === 0;
  }

  /** A clean stop with nothing in flight: disconnects, then closes the gate. */
  async close(): Promise<void> {
    await settleWithin(this.producer.disconnect(), WIND_DOWN_MS);
    this.gate.close();
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const forget = () => this.inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }
}

/** Waits for `promise` to settle, at most `ms`; true when it did. Never rejects. */
async function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
