/**
 * The outbox relay: publishes `profile.outbox_messages` rows to Kafka at least once, in order per key,
 * and marks them published in the same transaction that claimed them. Several relays may run at once.
 */
import * as otel from '@opentelemetry/api';
import type { Kafka, Producer } from 'kafkajs';
import pg from 'pg';
import type { Config } from '../config';
import { redactUrl } from '../config';
import {
  claimUnpublished,
  deletePublished,
  markFailed,
  markPublished,
  OUTBOX_CHANNEL,
  type OutboxMessage,
} from '../db/outbox';
import { withTransaction } from '../db/pool';
import { ensureTopic, toKafkaMessage } from './kafka';
import type { Logger } from '../observability/logger';
import type { RelayMetrics } from '../observability/metrics';
import { TOPIC } from '../domain/names';
import { contextFromTraceparent } from '../observability/tracing';

export interface RelayDeps {
  pool: pg.Pool;
  /** Connection for LISTEN (a dedicated session, outside the pool). */
  listenUrl: string;
  kafka: Kafka;
  config: Pick<Config, 'relay' | 'kafka'>;
  logger: Logger;
  metrics?: RelayMetrics;
  /** Spans "outbox publish", one per row, children of the owner span that wrote it. */
  tracer?: otel.Tracer;
  /** Called after Kafka acknowledged a batch and before it is marked published (tests inject crashes here). */
  onSent?: (ids: string[]) => Promise<void> | void;
}

/** What one pass did; `failed` carries the error after the attempt was recorded. */
type BatchOutcome = { published: number } | { failed: Error; rows: number };

class SendTimeoutError extends Error {
  constructor(ms: number) {
    super(`Kafka did not take the batch within ${ms} ms`);
    this.name = 'SendTimeoutError';
  }
}

/** Publishes outbox rows until stopped. */
export class OutboxRelay {
  private producer: Producer | undefined;
  private listener: pg.Client | undefined;
  private stopping = false;
  /** Ends the current wait early: set for notifications and stop, or for stop only while backing off. */
  private wakeUp: (() => void) | undefined;
  private wakeOnStop: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private lastCleanup = 0;
  private readonly log: Logger;
  /** Rows published since start, for progress lines. */
  publishedTotal = 0;

  constructor(private readonly deps: RelayDeps) {
    this.log = deps.logger.child({ component: 'relay' });
  }

  /**
   * Starts listening and the loop. Kafka need not be up: the topic is ensured before the first send,
   * and a broker that is down is one more failed batch to back off from, not a failed start.
   */
  async start(): Promise<void> {
    await this.listen();
    this.loop = this.run();
  }

  private topicReady = false;

  /** Creates the topic when missing (never relying on auto-create), once per relay. */
  private async ensureTopicOnce(): Promise<void> {
    if (this.topicReady) return;
    const admin = this.deps.kafka.admin();
    await admin.connect();
    try {
      await ensureTopic(
        admin,
        TOPIC,
        this.deps.config.kafka.topicPartitions,
        this.deps.config.kafka.topicReplicationFactor,
      );
      this.topicReady = true;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /** Stops after the batch in flight (it commits or rolls back whole), then disconnects. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeOnStop?.();
    await this.loop;
    await this.producer?.disconnect().catch(() => {});
    this.producer = undefined;
    await this.listener?.end().catch(() => {});
    this.listener = undefined;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let outcome: BatchOutcome;
      try {
        outcome = await this.publishBatch();
      } catch (err) {
        // The database failed (the claim, or recording the outcome); the rows stay as they were.
        outcome = { failed: err as Error, rows: 0 };
      }
      if ('failed' in outcome) {
        failures += 1;
        const delay = backoff(failures, this.deps.config.relay.maxBackoffMs);
        this.log.warn(
          { err: redactUrl(outcome.failed.message), rows: outcome.rows, failures, retryInMs: delay },
          'publish failed, backing off',
        );
        await this.resetProducer();
        // New rows must not cut the backoff short while the broker is down.
        await this.sleep(delay, false);
        continue;
      }
      if (failures > 0) this.log.info({ failures }, 'publishing again');
      failures = 0;
      await this.cleanupIfDue();
      if (outcome.published < this.deps.config.relay.batchSize) await this.sleep(this.deps.config.relay.pollIntervalMs);
    }
  }

  /**
   * One claim-produce-mark pass in one transaction. A Kafka failure is recorded on the rows
   * (`attempts`, `last_error`) and committed, so the rows are released for the next try.
   */
  async publishBatch(): Promise<BatchOutcome> {
    const { relay } = this.deps.config;
    const metrics = this.deps.metrics;
    const endTimer = metrics?.batchDuration.startTimer();
    const outcome = await withTransaction(this.deps.pool, async (tx): Promise<BatchOutcome & { topics?: string[] }> => {
      const rows = await claimUnpublished(tx, relay.batchSize);
      if (rows.length === 0) return { published: 0 };
      const ids = rows.map((r) => r.id);
      const topics = rows.map((r) => r.topic);
      try {
        await this.send(rows);
      } catch (err) {
        await markFailed(tx, ids, (err as Error).message);
        return { failed: err as Error, rows: rows.length, topics };
      }
      await this.deps.onSent?.(ids);
      await markPublished(tx, ids);
      return { published: rows.length, topics };
    });
    if (outcome.topics) endTimer?.();
    if ('failed' in outcome) {
      for (const topic of new Set(outcome.topics)) metrics?.failures.inc({ topic });
    } else if (outcome.published > 0) {
      for (const topic of outcome.topics ?? []) metrics?.published.inc({ topic });
      this.publishedTotal += outcome.published;
      this.log.info({ published: outcome.published, total: this.publishedTotal }, 'published');
    }
    return outcome;
  }

  private async send(rows: OutboxMessage[]): Promise<void> {
    const tracer = this.deps.tracer ?? otel.trace.getTracer('expiry-reminder-relay');
    const spans = rows.map((row) =>
      tracer.startSpan(
        'outbox publish',
        {
          kind: otel.SpanKind.PRODUCER,
          attributes: {
            correlationId: row.correlation_id,
            messageId: row.id,
            ownerUserId: row.aggregate_id,
            'messaging.destination.name': row.topic,
            attempt: row.attempts + 1,
          },
        },
        contextFromTraceparent(row.trace_context),
      ),
    );
    try {
      await this.produce(rows);
    } catch (err) {
      for (const span of spans) span.setStatus({ code: otel.SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      for (const span of spans) span.end();
    }
  }

  /** Topic, connection and send, all under the relay's own timeout: kafkajs retries for a long time on its own. */
  private async produce(rows: OutboxMessage[]): Promise<void> {
    const timeoutMs = this.deps.config.relay.sendTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.produceUnbounded(rows),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new SendTimeoutError(timeoutMs)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async produceUnbounded(rows: OutboxMessage[]): Promise<void> {
    await this.ensureTopicOnce();
    const producer = await this.connectedProducer();
    const byTopic = new Map<string, OutboxMessage[]>();
    for (const row of rows) byTopic.set(row.topic, [...(byTopic.get(row.topic) ?? []), row]);
    await producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list.map(toKafkaMessage) })),
    });
  }

  private async connectedProducer(): Promise<Producer> {
    if (!this.producer) {
      const producer = this.deps.kafka.producer({
        idempotent: true,
        // One request in flight per broker keeps the batch's order per partition.
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
      });
      await producer.connect();
      this.producer = producer;
    }
    return this.producer;
  }

  /** A producer that failed or timed out may hold a half-sent request: start over with a fresh one. */
  private async resetProducer(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect().catch(() => {});
  }

  private async cleanupIfDue(): Promise<void> {
    const { retentionMs, cleanupIntervalMs } = this.deps.config.relay;
    if (Date.now() - this.lastCleanup < cleanupIntervalMs) return;
    this.lastCleanup = Date.now();
    let deleted = 0;
    for (let n = -1; n !== 0 && !this.stopping;) {
      n = await deletePublished(this.deps.pool, retentionMs / 1000, 5_000);
      deleted += n;
    }
    if (deleted > 0) this.log.info({ deleted, retentionMs }, 'deleted published outbox rows past retention');
  }

  /** LISTEN on a dedicated session; reconnects on loss (polling covers the gap). */
  private async listen(): Promise<void> {
    if (this.stopping) return;
    const client = new pg.Client({
      connectionString: this.deps.listenUrl,
      application_name: 'expiry-reminder-relay-listen',
    });
    client.on('notification', () => this.wakeUp?.());
    client.on('error', (err) => {
      this.log.warn({ err: redactUrl(err.message) }, 'LISTEN connection lost; polling until it is back');
      if (this.listener === client) this.listener = undefined;
      client.end().catch(() => {});
      setTimeout(() => this.listen().catch(() => {}), 1_000).unref();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      this.listener = client;
    } catch (err) {
      this.log.warn({ err: redactUrl((err as Error).message) }, 'LISTEN failed; polling until it works');
      await client.end().catch(() => {});
      setTimeout(() => this.listen().catch(() => {}), 5_000).unref();
    }
  }

  /** Waits for `ms` or stop, and for a notification too when `onNotify`. */
  private sleep(ms: number, onNotify = true): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        this.wakeOnStop = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeOnStop = done;
      this.wakeUp = onNotify ? done : undefined;
    });
  }
}

/** Exponential backoff with full jitter, from 250 ms up to `maxMs`. */
export function backoff(failures: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, 250 * 2 ** Math.min(failures - 1, 20));
  return Math.max(100, Math.floor(Math.random() * ceiling));
}
