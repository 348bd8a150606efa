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
  Partitioners,
  type ISocketFactory,
  type Kafka,
  type Message,
  type Producer,
} from 'kafkajs';

/**
 * How long an abandoned producer gets to wind down (kafkajs gives up its retries, the client disconnects)
 * before the relay goes on. Nothing of it reaches a broker meanwhile; this only bounds the wait.
 */
export const WIND_DOWN_MS = 5_000;

/** Thrown by a send, a socket or a retry of a producer that was abandoned. */
export class ProducerAbandonedError extends Error {
  constructor() {
    super('the producer was abandoned: its send timed out or ended without a verdict');
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

/**
 * Partitions are spread over this many kafkajs producers, each with its own connections. One producer
 * sends one request at a time per broker (its order guarantee), and each request now carries a single
 * partition; lanes let a batch's requests to one broker run side by side, as kafkajs's one request per
 * broker did before (measured: 3 partitions on one broker, 2.5 ms per batch with lanes, 5.3 ms without).
 */
const MAX_LANES = 4;

/**
 * The relay's idempotent producers, sharing one client and its gate; abandoned together, and for good,
 * after a send without a verdict. A partition always goes through the same lane, so its order holds.
 */
export class RelayProducer {
  private readonly gate: SocketGate;
  private readonly client: Kafka;
  private readonly lanes = new Map<number, Promise<Producer>>();
  private readonly inFlight = new Set<Promise<unknown>>();

  /**
   * @param createClient builds the client from a socket factory (`createKafka` with the relay's settings).
   * @param baseSocketFactory how sockets are really opened (tests route them through a proxy).
   */
  constructor(
    createClient: (socketFactory: ISocketFactory) => Kafka,
    baseSocketFactory: ISocketFactory = plainSocketFactory,
  ) {
    this.gate = new SocketGate(baseSocketFactory);
    this.client = createClient(this.gate.factory);
  }

  /** The lane's producer, connected on first use. */
  private lane(partition: number): Promise<Producer> {
    const index = partition % MAX_LANES;
    let lane = this.lanes.get(index);
    if (!lane) {
      const gate = this.gate;
      const byPartition = Partitioners.DefaultPartitioner();
      const producer = this.client.producer({
        idempotent: true,
        // One request in flight per broker keeps each partition's order.
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        // Every message names its partition. kafkajs asks the partitioner again on each retry of a send,
        // before it builds the request: an abandoned producer's retries end there, without a request.
        createPartitioner: () => (args) => {
          if (gate.closed) throw new KafkaJSNonRetriableError(new ProducerAbandonedError());
          return byPartition(args);
        },
      });
      lane = this.track(producer.connect()).then(() => producer);
      // A lane that failed to connect is tried afresh by the next send (unless abandoned meanwhile).
      lane.catch(() => this.lanes.delete(index));
      this.lanes.set(index, lane);
    }
    return lane;
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
   * Sends `messages` to one partition in one produce request, so Kafka's answer is the answer for exactly
   * these messages: appended all together, or none of them. Connects on first use.
   */
  async send(topic: string, partition: number, messages: Message[]): Promise<void> {
    if (this.gate.closed) throw new ProducerAbandonedError();
    const producer = await this.lane(partition);
    await this.track(
      producer.sendBatch({
        acks: -1,
        topicMessages: [{ topic, messages: messages.map((m) => ({ ...m, partition })) }],
      }),
    );
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
    const disconnected = await settleWithin(this.disconnect(), Math.max(0, until - Date.now()));
    return settled && disconnected && this.inFlight.size === 0 && this.gate.openSockets === 0;
  }

  /** A clean stop with nothing in flight: disconnects, then closes the gate. */
  async close(): Promise<void> {
    await settleWithin(this.disconnect(), WIND_DOWN_MS);
    this.gate.close();
  }

  /** Disconnects every lane that connected; a lane that never did has nothing to close. */
  private async disconnect(): Promise<void> {
    const lanes = [...this.lanes.values()];
    this.lanes.clear();
    await Promise.all(lanes.map((lane) => lane.then((p) => p.disconnect()).catch(() => {})));
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
