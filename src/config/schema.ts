/**
 * The environment's variables, each with its parser and default (the README's Configuration table). A
 * variable read here and nowhere else is the contract `scripts/check-compose.sh` checks the compose files against.
 */
import fs from 'node:fs';
import net from 'node:net';
import { z } from 'zod';
import { DEPLOYMENT_NAME, TASK_QUEUE } from '../domain/names';
import { CYCLE_SETTINGS, THRESHOLDS_SETTING, type CycleSettingName } from '../domain/settings';
import { duration, durationOrZero, thresholdDays, wholeNumber, type TextParser } from './parsers';

/** A zod field of `parse`, its `expected` sentence as the issue's message. */
function fromText<T>(parse: TextParser<T>) {
  return z.string().transform((text, ctx) => {
    const parsed = parse(text);
    if ('value' in parsed) return parsed.value;
    ctx.addIssue({ code: 'custom', message: parsed.expected });
    return z.NEVER;
  });
}

/**
 * The variable of cycle setting `name` (domain/settings.ts): its bounds and default are the table's, so the
 * variable takes what a run's input takes. A duration's variable takes a unit (`10m`).
 */
function cycleSetting(name: CycleSettingName) {
  const setting: { min: number; max: number; default?: number; duration?: boolean } = CYCLE_SETTINGS[name];
  const parser = setting.duration ? duration('10m') : wholeNumber(setting.min, setting.max);
  if (setting.default === undefined) throw new Error(`cycle setting ${name} has no default for its variable`);
  return fromText(parser).default(setting.default);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const postgresUrl = z.string().refine((text) => {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}, 'expected a URL such as postgres://user:password@host:5432/database');

const boolText = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
export const temporalAddress = z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:7233');
export const temporalNamespace = z.string().regex(/^\S+$/, 'expected a namespace name');

/** Each variable with its default, as documented in the README. */
export const schema = z.object({
  DATABASE_URL: postgresUrl.optional(),
  MIGRATION_DATABASE_URL: postgresUrl.optional(),
  RELAY_DATABASE_URL: postgresUrl.optional(),
  SUPPORT_DATABASE_URL: postgresUrl.optional(),
  DATABASE_POOL_SIZE: fromText(wholeNumber(1, 200)).default(20),
  DATABASE_STATEMENT_TIMEOUT: fromText(durationOrZero('1m')).default(60_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: fromText(durationOrZero('30s')).default(30_000),
  DATABASE_TCP_KEEPALIVE_IDLE: fromText(durationOrZero('30s')).default(30_000),
  EXPIRY_REMINDER_WORKER_PASSWORD: z.string().min(1).optional(),
  OUTBOX_RELAY_PASSWORD: z.string().min(1).optional(),
  EXPIRY_REMINDER_SUPPORT_PASSWORD: z.string().min(1).optional(),
  TEMPORAL_DB_PASSWORD: z.string().min(1).optional(),
  // The connection itself (API key, TLS files, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) is read by
  // loadTemporalProfile; these are checked here because a typo in them should stop the process too.
  TEMPORAL_ADDRESS: temporalAddress.optional(),
  TEMPORAL_NAMESPACE: temporalNamespace.optional(),
  TEMPORAL_TASK_QUEUE: z.string().regex(/^\S+$/, 'expected a task queue name').default(TASK_QUEUE),
  TEMPORAL_TLS: boolText.optional(),
  // Temporal joins the two as `name.buildId`: a dot in the name would make that ambiguous.
  TEMPORAL_DEPLOYMENT_NAME: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/,
      'expected a deployment name of letters, digits, - and _, e.g. expiry-reminder',
    )
    .default(DEPLOYMENT_NAME),
  TEMPORAL_WORKER_BUILD_ID: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/,
      "expected the build's id as the image build sets it (the commit or image tag: letters, digits, . _ + -)",
    )
    .optional(),
  TEMPORAL_UI_URL: z
    .string()
    .regex(/^https?:\/\/[^\s/]+(\/\S*)?$/, "expected the Web UI's address, e.g. http://127.0.0.1:8233")
    .optional(),
  REMINDER_THRESHOLDS_DAYS: fromText(thresholdDays).default([...THRESHOLDS_SETTING.default]),
  REMINDER_BATCH_SIZE: cycleSetting('batchSize'),
  REMINDER_RETENTION_DAYS: cycleSetting('retentionDays'),
  REMINDER_MAX_RUN_DURATION: cycleSetting('maxRunDurationMs'),
  REMINDER_POLLING_INTERVAL: fromText(duration('24h')).default(24 * 3_600_000),
  REMINDER_POLLING_OFFSET: fromText(durationOrZero('3h')).default(3 * 3_600_000),
  REMINDER_OWNER_CONCURRENCY: cycleSetting('ownerConcurrency'),
  REMINDER_OWNER_GROUP_SIZE: cycleSetting('ownerGroupSize'),
  REMINDER_MAX_HISTORY_EVENTS: cycleSetting('maxHistoryEvents'),
  REMINDER_SCAN_SLICES: fromText(wholeNumber(1, 16)).default(2),
  REMINDER_PARTITIONS: cycleSetting('plannedPartitions'),
  REMINDER_PARTITION_SIZE: fromText(wholeNumber(1, 10_000_000)).default(5_000),
  KAFKA_BROKERS: z
    .string()
    .regex(/^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$/, 'expected comma-separated host:port pairs, e.g. 127.0.0.1:9092')
    .default('127.0.0.1:9092'),
  KAFKA_CLIENT_ID: z.string().regex(/^\S+$/, 'expected a client id without spaces').default('expiry-reminder-relay'),
  KAFKA_SSL: boolText.optional(),
  KAFKA_SSL_CA_PATH: z
    .string()
    .min(1)
    .refine(
      (p) => fs.existsSync(p),
      "no such file; expected the PEM file of the CA that signed the brokers' certificates",
    )
    .optional(),
  KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  KAFKA_SASL_USERNAME: z.string().min(1).optional(),
  KAFKA_SASL_PASSWORD: z.string().min(1).optional(),
  KAFKA_TOPIC_PARTITIONS: fromText(wholeNumber(1, 1000)).default(3),
  KAFKA_TOPIC_REPLICATION_FACTOR: fromText(wholeNumber(1, 10)).default(1),
  RELAY_BATCH_SIZE: fromText(wholeNumber(1, 10_000)).default(1_000),
  RELAY_CONCURRENCY: fromText(wholeNumber(1, 8)).default(3),
  RELAY_POLL_INTERVAL: fromText(duration('5s')).default(5_000),
  RELAY_LINGER: fromText(durationOrZero('200ms')).default(200),
  RELAY_SEND_TIMEOUT: fromText(duration('30s')).default(30_000),
  RELAY_MAX_BACKOFF: fromText(duration('30s')).default(30_000),
  RELAY_MAX_ATTEMPTS: fromText(wholeNumber(1, 1000)).default(10),
  OUTBOX_RETENTION: fromText(duration('7d')).default(7 * 86_400_000),
  RELAY_CLEANUP_INTERVAL: fromText(duration('10m')).default(10 * 60_000),
  RELAY_BACKLOG_REFRESH_INTERVAL: fromText(duration('30s')).default(30_000),
  BACKLOG_REFRESH_INTERVAL: fromText(duration('5m')).default(5 * 60_000),
  METRICS_PORT: fromText(wholeNumber(0, 65_535)).default(9464),
  METRICS_HOST: z
    .string()
    .refine(
      (host) => net.isIP(host) !== 0,
      'expected the IP address to listen on: 127.0.0.1 (this host only) or 0.0.0.0 (every interface, e.g. in a container Prometheus scrapes)',
    )
    .default('127.0.0.1'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .string()
    .url('expected an OTLP/HTTP URL such as http://otel-collector:4318')
    .optional(),
  OTEL_SERVICE_NAME: z.string().regex(/^\S+$/, 'expected a service name without spaces').optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  WORKFLOW_BUNDLE_PATH: z
    .string()
    .refine((p) => fs.existsSync(p), 'no such file; npm run build writes dist/workflows.bundle.js')
    .optional(),
});
