/**
 * The outbox relay: publishes `profile.outbox_messages` rows to Kafka at least once, in order per key,
 * and marks them published in the same transaction that claimed them. Several relays may run at once.
 * A row Kafka refuses on its own is isolated, and parked after RELAY_MAX_ATTEMPTS refusals, while every
 * other key flows on (docs/DESIGN.md#relay-poison-rows). One file for one lane's pass (claim, send, mark in
 * one transaction) and the loop that repeats it; the way to Kafka, the partitions, the spans and the LISTEN
 * wake-ups each live in a file of their own.
 */
import * as otel from '@opentelemetry/api';
import type { ISocketFactory, Kafka } from 'kafkajs';
import type pg from 'pg';
import type { Config } from '../config';
import { redactUrl } from '../observability/redact';
import {
  claimUnpublished,
  deletePublished,
  markFailed,
  markPublished,
  markRejected,
  pinClaimPlan,
  type OutboxMessage,
} from '../db/outbox';
import { LANES } from '../db/lane-sql';
import { deleteOldDeliveries, deletePublishedEvents, type LaneEvent } from '../db/outbox-events';
import { withTransaction } from '../db/pool';
import { createKafka, explainKafkaError, needsOperator, toKafkaMessage } from './kafka';
import type { Logger } from '../observability/logger';
import type { RelayMetrics } from '../observability/metrics';
import { Deadline, deliver, type Delivery } from './deliver';
import { DEFAULT_LISTEN_TIMINGS, OutboxListener, type ListenTimings } from './listener';
import { countByTopic, publishEventLanes } from './event-lanes';
import { groupByLeader, groupByPartition, setRefusedApart, TopicPartitions } from './partitions';
import { RelayProducer } from './producer';
import { checkRelaySession } from './session';
import { startPublishSpans } from './spans';
import { errorOf } from '../domain/failures';

export interface RelayDeps {
  pool: pg.Pool;
  /** Connection for LISTEN (a dedicated session, outside the pool). */
  listenUrl: string;
  /**
   * The admin client: the topic and its partitions. Each producer gets a client of its own, built from
   * `config.kafka`, whose sockets the relay can shut for good (see `RelayProducer`).
   */
  kafka: Kafka;
  config: Pick<Config, 'relay' | 'kafka'>;
  logger: Logger;
  metrics?: RelayMetrics;
  /** Spans "outbox publish", one per row, children of the owner span that wrote it; none without a tracer. */
  tracer?: otel.Tracer;
  /** Called after Kafka acknowledged a batch and before it is marked published (tests inject crashes here). */
  onSent?: (ids: string[]) => Promise<void> | void;
  /** How the producers open their sockets (default TCP/TLS); tests route them through a proxy. */
  kafkaSocketFactory?: ISocketFactory;
  /** How the LISTEN session notices a silent path (default {@link DEFAULT_LISTEN_TIMINGS}). */
  listenTimings?: Partial<ListenTimings>;
}

/** What one pass did; `failed` carries the error of rows released without a verdict, after it was recorded. */
type BatchOutcome = { claimed: number; published: number; rejected: number } | { failed: Error; rows: number };

const ids = (rows: readonly OutboxMessage[]) => rows.map((r) => r.id);

/**
 * One claim-send-mark loop with a producer of its own. A relay runs RELAY_CONCURRENCY of them, so one lane
 * claims and marks in PostgreSQL while another waits for Kafka. They keep per-key order the way separate
 * relays do: a lane's claim leaves out every key with an earlier row another lane holds.
 */
interface Lane {
  producer: RelayProducer | undefined;
  /** The outbox lane (migration 025) this loop tries first on its next pass. */
  nextOutboxLane: number;
}

/** A lane's failures in a row, for its backoff and its "publishing again" line. */
interface LaneState {
  failures: number;
  failing: boolean;
}

/** Publishes outbox rows until stopped. */
export class OutboxRelay {
  private readonly lanes: Lane[];
  private readonly partitions: TopicPartitions;
  private readonly listener: OutboxListener;
  private stopping = false;
  private loops: Promise<void>[] = [];
  private lastCleanup = 0;
  private readonly log: Logger;
  /** Rows published since start, for progress lines. */
  publishedTotal = 0;

  constructor(private readonly deps: RelayDeps) {
    this.log = deps.logger.child({ component: 'relay' });
    this.listener = new OutboxListener(deps.listenUrl, this.log, { ...DEFAULT_LISTEN_TIMINGS, ...deps.listenTimings });
    this.partitions = new TopicPartitions(deps.kafka, deps.config);
    const loops = deps.config.relay.concurrency;
    // Loops start on different outbox lanes, so that they do not meet on the first one each pass.
    this.lanes = Array.from({ length: loops }, (_, i) => ({
      producer: undefined,
      nextOutboxLane: Math.floor((i * LANES) / loops) % LANES,
    }));
  }

  /**
   * Checks its database session, then starts listening and the loop. Kafka need not be up: the topic is
   * ensured before the first send, and a broker that is down is one more failed batch to back off from.
   * @throws ConfigError when PostgreSQL would end a batch waiting on Kafka (see `checkRelaySession`).
   */
  async start(): Promise<void> {
    await checkRelaySession(this.deps.pool, this.deps.config.relay.sendTimeoutMs);
    await this.listener.listen();
    this.loops = this.lanes.map((lane) => this.run(lane));
  }

  /** Stops after the batch in flight (it commits or rolls back whole), then disconnects. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.listener.stop();
    await Promise.all(this.loops);
    for (const lane of this.lanes) {
      await lane.producer?.close();
      lane.producer = undefined;
    }
    await this.listener.close();
  }

  /** A lane's loop: turns until stop. */
  private async run(lane: Lane): Promise<void> {
    const state: LaneState = { failures: 0, failing: false };
    while (!this.stopping) await this.turn(lane, state);
  }

  /**
   * One batch, then the cleanup when it is due, then the wait before the next claim. It never rejects: a
   * lane that rejected would end the relay, and with it the other lanes' batches mid-send, so every failure
   * (a batch's, the cleanup's, anything unforeseen) backs off.
   */
  private async turn(lane: Lane, state: LaneState): Promise<void> {
    try {
      // The database failed (the claim, or recording the outcome); the rows stay as they were.
      const failed = (err: unknown): BatchOutcome => ({ failed: errorOf(err), rows: 0 });
      const legacy = await this.publishBatch(lane).catch(failed);
      // A failed pass backs off at once: the other outbox's pass would meet the same database or broker.
      const outcome = 'failed' in legacy ? legacy : bothOutcomes(legacy, await this.publishEvents(lane).catch(failed));
      // A batch of nothing but refused rows backs off too, or a lone refused row would be retried in a loop.
      if ('failed' in outcome || (outcome.published === 0 && outcome.rejected > 0)) {
        await this.backOff(state, outcome, 'publish failed, backing off');
        return;
      }
      if (state.failing) this.log.info({ failures: state.failures }, 'publishing again');
      state.failing = false;
      state.failures = 0;
      const cleanupFailed = await this.cleanupIfDue().then(
        () => undefined,
        (err: unknown) => errorOf(err),
      );
      if (cleanupFailed) {
        await this.backOff(state, { failed: cleanupFailed, rows: 0 }, 'outbox cleanup failed, backing off');
        return;
      }
      if (outcome.claimed < this.deps.config.relay.batchSize) await this.waitForRows();
    } catch (err) {
      await this.backOff(state, { failed: errorOf(err), rows: 0 }, 'relay lane failed, backing off');
    }
  }

  /** After a batch that was not full: waits for a notification or the poll interval, then lingers. */
  private async waitForRows(): Promise<void> {
    const { pollIntervalMs, lingerMs } = this.deps.config.relay;
    await this.listener.sleep(pollIntervalMs);
    // One claim takes several owner-group commits' rows: a small batch per NOTIFY costs more per row
    // (docs/DESIGN.md#relay-at-least-once-in-order-per-key).
    if (lingerMs > 0) await this.listener.sleep(lingerMs, { wakeOnNotify: false });
  }

  /** Waits out the lane's next backoff; a failure is logged, a pass of refusals only is not (each row was). */
  private async backOff(state: LaneState, outcome: BatchOutcome, message: string): Promise<void> {
    state.failures += 1;
    const delay = backoff(state.failures, this.deps.config.relay.maxBackoffMs);
    if ('failed' in outcome) {
      state.failing = true;
      // Error level when nothing gets better until a person acts (a refused login, the topic's ACLs).
      this.log[needsOperator(outcome.failed) ? 'error' : 'warn'](
        { err: redactUrl(outcome.failed.message), rows: outcome.rows, failures: state.failures, retryInMs: delay },
        message,
      );
    }
    // New rows must not cut the backoff short while the broker is down.
    await this.listener.sleep(delay, { wakeOnNotify: !('failed' in outcome) });
  }

  /**
   * One claim-produce-mark pass in one transaction. Rows Kafka acknowledged are marked published, rows it
   * refused on their own are recorded (and parked at the limit), and rows without a verdict are recorded
   * as failed (`attempts`, `last_error`) and released for the next try. All of it commits together.
   */
  private async publishBatch(lane: Lane): Promise<BatchOutcome> {
    const { relay } = this.deps.config;
    const metrics = this.deps.metrics;
    const endTimer = metrics?.batchDuration.startTimer();
    const t0 = performance.now();
    let claimedAt = 0;
    let sentAt = 0;
    this.listener.claimBegins();
    const result = await withTransaction(this.deps.pool, async (tx) => {
      await pinClaimPlan(tx);
      const rows = await claimUnpublished(tx, relay.batchSize);
      if (rows.length === 0) return undefined;
      claimedAt = performance.now();
      const delivery = await this.send(lane, rows);
      sentAt = performance.now();
      if (delivery.published.length > 0) {
        await this.deps.onSent?.(ids(delivery.published));
        await markPublished(tx, ids(delivery.published), delivery.placements);
      }
      const parked = await markRejected(
        tx,
        delivery.rejected.map(({ row, error }) => ({ id: row.id, error })),
        relay.maxAttempts,
      );
      if (delivery.failed.length > 0) await markFailed(tx, ids(delivery.failed), delivery.error?.message ?? '');
      return { delivery, parked, claimed: rows.length };
    });
    if (!result) return { claimed: 0, published: 0, rejected: 0 };
    endTimer?.();
    const { delivery, parked, claimed } = result;
    if (metrics) {
      for (const [topic, n] of countByTopic(delivery.published)) metrics.published.inc({ topic }, n);
      for (const [topic, n] of countByTopic(delivery.rejected.map(({ row }) => row)))
        metrics.rejected.inc({ topic }, n);
    }
    for (const { row, error } of delivery.rejected) {
      const isParked = parked.includes(row.id);
      this.log.warn(
        { id: row.id, correlationId: row.correlation_id, err: error, parked: isParked },
        isParked ? 'row refused by Kafka again and parked' : 'row refused by Kafka',
      );
    }
    if (delivery.published.length > 0) {
      this.publishedTotal += delivery.published.length;
      // Where the batch's time went: the claim, Kafka, and marking plus commit.
      const ms = (from: number, to: number) => Math.round(to - from);
      this.log.info(
        {
          published: delivery.published.length,
          total: this.publishedTotal,
          claimMs: ms(t0, claimedAt),
          sendMs: ms(claimedAt, sentAt),
          commitMs: ms(sentAt, performance.now()),
        },
        'published',
      );
    }
    if (delivery.failed.length > 0) {
      for (const topic of new Set(delivery.failed.map((r) => r.topic))) metrics?.failures.inc({ topic });
      return { failed: delivery.error ?? new Error('publish failed'), rows: delivery.failed.length };
    }
    return { claimed, published: delivery.published.length, rejected: delivery.rejected.length };
  }

  /**
   * A turn over the insert-only outbox's lanes (`event-lanes.ts`) from the loop's next lane; the next turn starts
   * one lane further, so that loops meet on different lanes.
   */
  private async publishEvents(lane: Lane): Promise<BatchOutcome> {
    const { relay } = this.deps.config;
    const first = lane.nextOutboxLane;
    lane.nextOutboxLane = (first + 1) % LANES;
    return publishEventLanes(
      {
        pass: {
          pool: this.deps.pool,
          batchSize: relay.batchSize,
          maxRejections: relay.maxAttempts,
          maxBackoffSeconds: relay.maxBackoffMs / 1000,
          send: (events: LaneEvent[]) => this.send(lane, events),
          onSent: this.deps.onSent,
        },
        log: this.log,
        metrics: this.deps.metrics,
        reportPublished: (events, fields) => this.reportPublished(events, fields),
        stopping: () => this.stopping,
      },
      first,
    );
  }

  /** Counts and logs rows whose publication committed. */
  private reportPublished(rows: readonly OutboxMessage[], fields: Record<string, number>): void {
    if (rows.length === 0) return;
    for (const [topic, n] of countByTopic(rows)) this.deps.metrics?.published.inc({ topic }, n);
    this.publishedTotal += rows.length;
    this.log.info({ published: rows.length, total: this.publishedTotal, ...fields }, 'published');
  }

  /**
   * Sends a batch under RELAY_SEND_TIMEOUT. When the deadline passes the producer is abandoned on the spot
   * (nothing more of it reaches Kafka), and any batch with rows left without a verdict winds its producer
   * down before returning, so before the rows are released: a send given up on cannot land later,
   * behind another relay's copy of the same rows.
   */
  private async send(lane: Lane, rows: OutboxMessage[]): Promise<Delivery> {
    const endSpans = this.deps.tracer ? startPublishSpans(this.deps.tracer, rows) : () => {};
    lane.producer ??= new RelayProducer(
      (socketFactory) => createKafka(this.deps.config, this.deps.logger, { socketFactory }),
      this.deps.kafkaSocketFactory,
    );
    const producer = lane.producer;
    const deadline = new Deadline(this.deps.config.relay.sendTimeoutMs, () => producer.abandon());
    let delivery: Delivery;
    try {
      const { partitions, refused } = await deadline.race(this.partitions.of(rows.map((r) => r.topic)));
      const { sendable, rejected } = setRefusedApart(rows, refused);
      delivery = await deliver(
        groupByLeader(groupByPartition(sendable, partitions), partitions),
        (groups, leader) =>
          producer.send(
            groups.map((g) => ({
              topic: g.topic,
              partition: g.partition,
              messages: g.rows.map((r) => toKafkaMessage(r, g.partition)),
            })),
            leader,
          ),
        deadline,
      );
      delivery.rejected.unshift(...rejected);
    } catch (err) {
      // The topic or its partitions could not be read: nothing was sent.
      delivery = { published: [], placements: new Map(), rejected: [], failed: rows, error: errorOf(err) };
    } finally {
      deadline.clear();
    }
    if (delivery.error) delivery.error = explainKafkaError(delivery.error, this.deps.config.kafka);
    if (delivery.failed.length > 0 || producer.abandoned) {
      this.partitions.invalidate();
      await this.dropProducer(lane);
    }
    endSpans(delivery);
    return delivery;
  }

  /** Abandons the producer and waits for it to wind down; the next batch starts a fresh one. */
  private async dropProducer(lane: Lane): Promise<void> {
    const producer = lane.producer;
    lane.producer = undefined;
    if (producer && !(await producer.windDown())) {
      this.log.warn({ openSockets: producer.openSockets }, 'abandoned producer still winding down; it sends nothing');
    }
  }

  /**
   * Deletes what was published before OUTBOX_RETENTION, 5,000 rows a statement until one deletes none: rows of
   * the old outbox, then events of the insert-only one, then the deliveries that said where those went.
   */
  private async cleanupIfDue(): Promise<void> {
    const { retentionMs, cleanupIntervalMs } = this.deps.config.relay;
    if (Date.now() - this.lastCleanup < cleanupIntervalMs) return;
    this.lastCleanup = Date.now();
    const seconds = retentionMs / 1000;
    const deleted = { rows: 0, events: 0, deliveries: 0 };
    const drain = async (what: keyof typeof deleted, statement: () => Promise<number>) => {
      for (let n = -1; n !== 0 && !this.stopping;) {
        n = await statement();
        deleted[what] += n;
      }
    };
    await drain('rows', () => deletePublished(this.deps.pool, seconds, 5_000));
    await drain('events', () => deletePublishedEvents(this.deps.pool, seconds, 5_000));
    await drain('deliveries', () => deleteOldDeliveries(this.deps.pool, seconds, 5_000));
    if (deleted.rows > 0)
      this.log.info({ deleted: deleted.rows, retentionMs }, 'deleted published outbox rows past retention');
    if (deleted.events + deleted.deliveries > 0) {
      this.log.info({ ...deleted, retentionMs }, 'deleted published outbox events past retention');
    }
  }
}

/**
 * A loop's turn did a pass over each outbox: a failure of either is the turn's; otherwise the counts add up, and
 * the loop waits for rows only when neither pass filled its batch.
 */
function bothOutcomes(legacy: BatchOutcome, events: BatchOutcome): BatchOutcome {
  if ('failed' in legacy) return legacy;
  if ('failed' in events) return events;
  return {
    claimed: Math.max(legacy.claimed, events.claimed),
    published: legacy.published + events.published,
    rejected: legacy.rejected + events.rejected,
  };
}

/** Exponential backoff with full jitter, from 250 ms up to `maxMs`. */
function backoff(failures: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, 250 * 2 ** Math.min(failures - 1, 20));
  return Math.max(100, Math.floor(Math.random() * ceiling));
}
