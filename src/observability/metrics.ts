/**
 * Prometheus metrics (docs/DESIGN.md#observability) with prom-client, and the `/metrics` endpoint the worker and the relay
 * serve. The Temporal SDK's own worker metrics come from its Rust core's exporter on a loopback port and
 * are appended to the same page, so one scrape target carries both.
 */
import http from 'node:http';
import client from 'prom-client';
import { utcDate } from '../domain/dates';
import type { CycleResult } from '../domain/cycle';

/**
 * The values of the `status` label, each started at 0. Where the worker counts one, `satisfies CycleEnd`
 * keeps it from counting a value not listed here: the registry is where the docs' check
 * (test/unit/docs-drift.test.ts) learns which values exist.
 */
const CYCLE_STATUSES = ['completed', 'time-limit', 'cancelled', 'failed'] as const;
/** How a cycle ended, as `profile_document_expiry_reminder_cycles_total` counts it (its `status` label). */
export type CycleEnd = (typeof CYCLE_STATUSES)[number];
/** The values of the `kind` label of the errors counter, held to this list as {@link CYCLE_STATUSES} are. */
const ERROR_KINDS = ['owner', 'cycle'] as const;
/** What failed, as `profile_document_expiry_reminder_errors_total` counts it (its `kind` label). */
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** The worker's metrics. Every known label value starts at 0, so the first increment after a restart shows as one. */
export function createWorkerMetrics(thresholdsDays: readonly number[], registry = new client.Registry()) {
  const m = {
    registry,
    reminders: new client.Counter({
      name: 'profile_document_expiry_reminders_total',
      help: 'Reminders sent: documents that went into an event, by the threshold they were reminded at.',
      labelNames: ['threshold_days'],
      registers: [registry],
    }),
    ownersNotified: new client.Counter({
      name: 'profile_document_expiry_reminder_owners_notified_total',
      help: 'Investors who got an event.',
      registers: [registry],
    }),
    cycleDuration: new client.Histogram({
      name: 'profile_document_expiry_reminder_cycle_duration_seconds',
      help: 'Wall time of a cycle, from its start to its result, by how it ended.',
      labelNames: ['status'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200],
      registers: [registry],
    }),
    cycles: new client.Counter({
      name: 'profile_document_expiry_reminder_cycles_total',
      help: 'Cycles ended, by how they ended (completed, time-limit, cancelled, failed).',
      labelNames: ['status'],
      registers: [registry],
    }),
    lastSuccess: new client.Gauge({
      name: 'profile_document_expiry_reminder_last_success_timestamp_seconds',
      help: 'Unix time of the last cycle this worker saw complete as of the current UTC date (0 until one does).',
      registers: [registry],
    }),
    errors: new client.Counter({
      name: 'profile_document_expiry_reminder_errors_total',
      help: 'Failures: owner = an owner transaction failed after its retries; cycle = a cycle failed outright.',
      labelNames: ['kind'],
      registers: [registry],
    }),
    backlogRefreshErrors: new client.Counter({
      name: 'profile_document_expiry_reminder_backlog_refresh_errors_total',
      help: 'Counts of the backlog gauge that failed (timed out, database down); the gauge kept its last value.',
      registers: [registry],
    }),
    backlog: new client.Gauge({
      name: 'profile_document_expiry_reminder_backlog',
      help: 'Documents due now (active, in the window, no marker for their current threshold): what the next cycle would remind.',
      registers: [registry],
    }),
    strandedCycles: new client.Gauge({
      name: 'profile_document_expiry_reminder_stranded_cycles',
      help: 'Cycles open on a version of the worker deployment that no worker polls, by its build id: pinned, they wait for it.',
      labelNames: ['build_id'],
      registers: [registry],
    }),
    strandedRefreshErrors: new client.Counter({
      name: 'profile_document_expiry_reminder_stranded_refresh_errors_total',
      help: 'Reads of the stranded-cycles gauge that failed (Temporal down or refusing); the gauge kept its last values.',
      registers: [registry],
    }),
  };
  for (const t of thresholdsDays) m.reminders.inc({ threshold_days: String(t) }, 0);
  for (const status of CYCLE_STATUSES) {
    m.cycles.inc({ status }, 0);
    if (status !== 'failed') m.cycleDuration.zero({ status });
  }
  for (const kind of ERROR_KINDS) m.errors.inc({ kind }, 0);
  return m;
}
export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/**
 * Records a cycle's end (called through the workflow's sink, once per cycle, never on replay). Only a
 * completed cycle as of today proves the job is alive: a manual run as of last year must not keep
 * `NoSuccessfulCycle` quiet while the schedule is paused.
 */
export function recordCycleEnded(m: WorkerMetrics, result: CycleResult, nowMs = Date.now()): void {
  m.cycles.inc({ status: result.status satisfies CycleEnd });
  m.cycleDuration.observe({ status: result.status }, result.durationMs / 1000);
  if (result.status === 'completed' && coversToday(result.asOf, nowMs)) m.lastSuccess.set(Math.floor(nowMs / 1000));
}

/** Whether a cycle as of `asOf` ran as of the UTC date of `nowMs`. */
export function coversToday(asOf: string, nowMs: number): boolean {
  return utcDate(new Date(asOf)) === utcDate(new Date(nowMs));
}

/** The relay's metrics. */
export function createRelayMetrics(registry = new client.Registry()) {
  return {
    registry,
    published: new client.Counter({
      name: 'profile_outbox_relay_published_total',
      help: 'Outbox rows published to Kafka (acknowledged and marked).',
      labelNames: ['topic'],
      registers: [registry],
    }),
    failures: new client.Counter({
      name: 'profile_outbox_relay_publish_failures_total',
      help: 'Batches whose publish failed (recorded on the rows and retried).',
      labelNames: ['topic'],
      registers: [registry],
    }),
    batchDuration: new client.Histogram({
      name: 'profile_outbox_relay_batch_duration_seconds',
      help: 'Claim, produce and mark of one batch.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    rejected: new client.Counter({
      name: 'profile_outbox_relay_rejected_total',
      help: 'Rows Kafka refused when sent on their own (too large, invalid); parked at RELAY_MAX_ATTEMPTS.',
      labelNames: ['topic'],
      registers: [registry],
    }),
    backlogRefreshErrors: new client.Counter({
      name: 'profile_outbox_backlog_refresh_errors_total',
      help: 'Counts of the outbox backlog gauges that failed (timed out, database down); they kept their last values.',
      registers: [registry],
    }),
    backlog: new client.Gauge({
      name: 'profile_outbox_backlog_messages',
      help: 'Unpublished outbox rows, parked ones not counted (those waiting behind one are).',
      registers: [registry],
    }),
    parked: new client.Gauge({
      name: 'profile_outbox_parked_messages',
      help: 'Parked outbox rows: refused by Kafka RELAY_MAX_ATTEMPTS times, left with their key until outbox retry.',
      registers: [registry],
    }),
    waitingBehindParked: new client.Gauge({
      name: 'profile_outbox_waiting_behind_parked_messages',
      help: 'Unpublished outbox rows held back by a parked row of their key (counted in the backlog): what a parked row delays.',
      registers: [registry],
    }),
    oldestAge: new client.Gauge({
      name: 'profile_outbox_oldest_unpublished_age_seconds',
      help: 'Age of the oldest unpublished row the relay could publish now (not parked, not behind a parked row of its key), 0 when none: the outbox lag.',
      registers: [registry],
    }),
  };
}
export type RelayMetrics = ReturnType<typeof createRelayMetrics>;

export interface MetricsServerOptions {
  registry: client.Registry;
  port: number;
  /** The address to listen on (METRICS_HOST): no default, so that nothing opens it wider than asked. */
  host: string;
  /** Refreshes gauges that are read from the database; failures keep the last value. */
  beforeScrape?: () => Promise<void>;
  /** A Prometheus text page to append (the Temporal SDK's own exporter). */
  extraUrl?: string;
  /**
   * What `/healthz` answers: undefined when the process serves (200), else what it still waits for (503 with
   * those words). Absent: it serves as soon as the server listens.
   */
  notReady?: () => string | undefined;
}

/** Serves `/metrics` (and `/healthz`); resolves with the server once listening. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') {
      const waiting = options.notReady?.();
      res.writeHead(waiting ? 503 : 200, { 'content-type': 'text/plain' }).end(waiting ? `${waiting}\n` : 'ok\n');
      return;
    }
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    (async () => {
      await options.beforeScrape?.().catch(() => {});
      let body = await options.registry.metrics();
      if (options.extraUrl) body += await fetchText(options.extraUrl).catch(() => '');
      res.writeHead(200, { 'content-type': options.registry.contentType }).end(body);
    })().catch((err: Error) => res.writeHead(500).end(err.message));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  return server;
}

async function fetchText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  return res.ok ? `\n${await res.text()}` : '';
}
