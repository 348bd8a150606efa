/**
 * The one place that reads the environment. Every variable is validated at start; a bad value stops the
 * process with a message naming the variable, the value and what is expected, before anything is written.
 */
import fs from 'node:fs';
import ms from 'ms';
import type { ClientConfigProfile } from '@temporalio/envconfig';
import { z } from 'zod';
import {
  MAX_OWNER_CONCURRENCY,
  MAX_OWNER_GROUP_SIZE,
  busyRetryWindowMs,
  scheduledCycleTimeoutMs,
  type CycleDefaults,
} from './domain/cycle';
import { parseThresholdList, thresholdProblems } from './domain/thresholds';
import { TASK_QUEUE } from './domain/names';
import type { SessionLimits } from './db/pool';
import { redactUrl } from './observability/redact';
import { loadTemporalProfile } from './temporal/connection';

/** Validated configuration of every entry point. */
export interface Config {
  /** The worker's (and the relay's) connection; required by the processes that touch the database. */
  databaseUrl?: string;
  /** Owner connection for migrations; defaults to `databaseUrl`. */
  migrationDatabaseUrl?: string;
  /** The relay's connection (and the outbox commands'); defaults to `databaseUrl`. */
  relayDatabaseUrl?: string;
  databasePoolSize: number;
  /** Session limits of the worker's connections (0 turns one off); see `SessionLimits` in db/pool.ts. */
  databaseSession: SessionLimits;
  /** Passwords `migrate` sets on the two roles it creates, when given (local stacks; production sets them elsewhere). */
  rolePasswords: { worker?: string; relay?: string };
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    /** The connection profile (temporal.toml and `TEMPORAL_*`): API key, TLS, gRPC metadata. */
    connection: ClientConfigProfile;
  };
  cycle: CycleDefaults;
  kafka: {
    brokers: string[];
    clientId: string;
    ssl?: boolean | { caPath?: string };
    sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
    topicPartitions: number;
    topicReplicationFactor: number;
  };
  relay: {
    batchSize: number;
    /** Claim-send-mark loops at once, each with its own producer (see the relay's lanes). */
    concurrency: number;
    pollIntervalMs: number;
    /** How long a lane woken by NOTIFY after a partial claim waits for more rows before it claims (0 = none). */
    lingerMs: number;
    sendTimeoutMs: number;
    maxBackoffMs: number;
    /** A row Kafka refused on its own this many times is parked (docs/DESIGN.md#relay-poison-rows). */
    maxAttempts: number;
    retentionMs: number;
    cleanupIntervalMs: number;
    /** At most how often `/metrics` counts the outbox backlog (a scrape in between shows the last count). */
    backlogRefreshIntervalMs: number;
  };
  schedule: { intervalMs: number; offsetMs: number };
  /** OpenTelemetry export: off unless an OTLP endpoint is set. */
  tracing: { otlpEndpoint?: string; serviceName?: string };
  /** Port of `/metrics`; 0 turns the endpoint off. */
  metricsPort: number;
  /** At most how often the worker counts the documents due (the backlog gauge); also after each cycle. */
  backlogRefreshIntervalMs: number;
  logLevel: string;
  /** Id ranges a cycle's first candidate page is scanned in at once (one connection each). */
  scanSlices: number;
  /** A prebuilt workflow bundle for the worker (`npm run build` makes `dist/workflows.bundle.js`). */
  workflowBundlePath?: string;
}

/** `21.6h`, `54m`, `90s`: a duration as exact as two decimals allow (`ms` rounds 21.6 h to 22 h). */
function exactDuration(value: number): string {
  const [unit, size] = value >= 3_600_000 ? ['h', 3_600_000] : value >= 60_000 ? ['m', 60_000] : ['s', 1_000];
  return `${Number((value / (size as number)).toFixed(2))}${unit}`;
}

/** Thrown for invalid configuration; `problems` holds one sentence per bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const durationText = (example: string) =>
  z.string().transform((text, ctx) => {
    const value = /^\s*\d+(\.\d+)?\s*[a-z]+\s*$/i.test(text) ? ms(text as ms.StringValue) : undefined;
    if (value === undefined || !Number.isFinite(value) || value <= 0) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a positive duration with a unit (ms, s, m, h, d), e.g. ${example}`,
      });
      return z.NEVER;
    }
    return value;
  });

const durationOrZero = (example: string) =>
  z.string().transform((text, ctx) => {
    if (/^\s*0\s*[a-z]*\s*$/i.test(text)) return 0;
    const value = /^\s*\d+(\.\d+)?\s*[a-z]+\s*$/i.test(text) ? ms(text as ms.StringValue) : undefined;
    if (value === undefined || !Number.isFinite(value) || value < 0) {
      ctx.addIssue({ code: 'custom', message: `expected a duration with a unit (ms, s, m, h, d), e.g. ${example}` });
      return z.NEVER;
    }
    return value;
  });

const wholeNumber = (min: number, max: number) =>
  z.string().transform((text, ctx) => {
    const value = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      ctx.addIssue({ code: 'custom', message: `expected a whole number from ${min} to ${max}` });
      return z.NEVER;
    }
    return value;
  });

const postgresUrl = z.string().refine((text) => {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}, 'expected a URL such as postgres://user:password@host:5432/database');

const thresholds = z.string().transform((text, ctx) => {
  const list = parseThresholdList(text);
  const problems = thresholdProblems(list);
  if (problems.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `${problems.join('; ')}; expected distinct whole numbers >= 0 in descending order, e.g. 30,7,1,0`,
    });
    return z.NEVER;
  }
  return list;
});

const boolText = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const temporalAddress = z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:7233');
const temporalNamespace = z.string().regex(/^\S+$/, 'expected a namespace name');
/** Where the Temporal dev server listens when neither the environment nor a profile names a server. */
const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

/** Each variable with its default, as documented in the README. */
const schema = z.object({
  DATABASE_URL: postgresUrl.optional(),
  MIGRATION_DATABASE_URL: postgresUrl.optional(),
  RELAY_DATABASE_URL: postgresUrl.optional(),
  DATABASE_POOL_SIZE: wholeNumber(1, 200).default(20),
  DATABASE_STATEMENT_TIMEOUT: durationOrZero('1m').default(60_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: durationOrZero('30s').default(30_000),
  DATABASE_TCP_KEEPALIVE_IDLE: durationOrZero('30s').default(30_000),
  EXPIRY_REMINDER_WORKER_PASSWORD: z.string().min(1).optional(),
  OUTBOX_RELAY_PASSWORD: z.string().min(1).optional(),
  // The connection itself (API key, TLS files, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) is read by
  // loadTemporalProfile; these are checked here because a typo in them should stop the process too.
  TEMPORAL_ADDRESS: temporalAddress.optional(),
  TEMPORAL_NAMESPACE: temporalNamespace.optional(),
  TEMPORAL_TASK_QUEUE: z.string().regex(/^\S+$/, 'expected a task queue name').default(TASK_QUEUE),
  TEMPORAL_TLS: boolText.optional(),
  REMINDER_THRESHOLDS_DAYS: thresholds.default([30, 7, 1, 0]),
  REMINDER_BATCH_SIZE: wholeNumber(1, 10_000).default(500),
  REMINDER_RETENTION_DAYS: wholeNumber(0, 36_500).default(90),
  REMINDER_MAX_RUN_DURATION: durationText('10m').default(10 * 60_000),
  REMINDER_POLLING_INTERVAL: durationText('24h').default(24 * 3_600_000),
  REMINDER_POLLING_OFFSET: durationOrZero('3h').default(3 * 3_600_000),
  REMINDER_OWNER_CONCURRENCY: wholeNumber(1, MAX_OWNER_CONCURRENCY).default(400),
  REMINDER_OWNER_GROUP_SIZE: wholeNumber(1, MAX_OWNER_GROUP_SIZE).default(100),
  REMINDER_MAX_HISTORY_EVENTS: wholeNumber(100, 40_000).default(9_000),
  REMINDER_SCAN_SLICES: wholeNumber(1, 16).default(2),
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
  KAFKA_TOPIC_PARTITIONS: wholeNumber(1, 1000).default(3),
  KAFKA_TOPIC_REPLICATION_FACTOR: wholeNumber(1, 10).default(1),
  RELAY_BATCH_SIZE: wholeNumber(1, 10_000).default(1_000),
  RELAY_CONCURRENCY: wholeNumber(1, 8).default(2),
  RELAY_POLL_INTERVAL: durationText('5s').default(5_000),
  RELAY_LINGER: durationOrZero('200ms').default(200),
  RELAY_SEND_TIMEOUT: durationText('30s').default(30_000),
  RELAY_MAX_BACKOFF: durationText('30s').default(30_000),
  RELAY_MAX_ATTEMPTS: wholeNumber(1, 1000).default(10),
  OUTBOX_RETENTION: durationText('7d').default(7 * 86_400_000),
  RELAY_CLEANUP_INTERVAL: durationText('10m').default(10 * 60_000),
  RELAY_BACKLOG_REFRESH_INTERVAL: durationText('30s').default(30_000),
  BACKLOG_REFRESH_INTERVAL: durationText('5m').default(5 * 60_000),
  METRICS_PORT: wholeNumber(0, 65_535).default(9464),
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

function shown(name: string, value: string | undefined): string {
  if (value === undefined) return '(unset)';
  if (name.endsWith('_PASSWORD')) return '"***"';
  if (name.endsWith('DATABASE_URL')) return JSON.stringify(redactUrl(value));
  return JSON.stringify(value);
}

/**
 * Reads and validates the configuration.
 *
 * Empty variables count as unset, so `FOO=` in a compose file falls back to the default.
 * @throws ConfigError naming every bad variable at once.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') raw[key] = value;
  }
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(schema.shape)) {
    const parsed = (field as z.ZodType).safeParse(raw[name]);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(...parsed.error.issues.map((issue) => `${name}=${shown(name, raw[name])}: ${issue.message}`));
  }
  const v = values as z.infer<typeof schema>;
  if (
    typeof v.REMINDER_POLLING_OFFSET === 'number' &&
    typeof v.REMINDER_POLLING_INTERVAL === 'number' &&
    v.REMINDER_POLLING_OFFSET >= v.REMINDER_POLLING_INTERVAL
  ) {
    problems.push(
      `REMINDER_POLLING_OFFSET=${shown('REMINDER_POLLING_OFFSET', raw.REMINDER_POLLING_OFFSET)}: expected less than REMINDER_POLLING_INTERVAL (${ms(v.REMINDER_POLLING_INTERVAL)})`,
    );
  }
  if (
    typeof v.REMINDER_MAX_RUN_DURATION === 'number' &&
    typeof v.REMINDER_POLLING_INTERVAL === 'number' &&
    v.REMINDER_MAX_RUN_DURATION >= scheduledCycleTimeoutMs(v.REMINDER_POLLING_INTERVAL)
  ) {
    problems.push(
      `REMINDER_MAX_RUN_DURATION=${shown('REMINDER_MAX_RUN_DURATION', raw.REMINDER_MAX_RUN_DURATION)}: expected less than the execution ` +
        `timeout of scheduled cycles (${exactDuration(scheduledCycleTimeoutMs(v.REMINDER_POLLING_INTERVAL))}, 90 % of REMINDER_POLLING_INTERVAL)`,
    );
  }
  const temporal = loadTemporalProfile(env);
  if ('problems' in temporal) problems.push(...temporal.problems);
  else {
    // Values from a temporal.toml were not checked by the schema above.
    for (const [field, check, value] of [
      ['address', temporalAddress, temporal.profile.address],
      ['namespace', temporalNamespace, temporal.profile.namespace],
    ] as const) {
      if (value === undefined || env[`TEMPORAL_${field.toUpperCase()}`]) continue;
      const parsed = check.safeParse(value);
      if (!parsed.success) {
        problems.push(`${field} ${JSON.stringify(value)} in ${temporal.source}: ${parsed.error.issues[0].message}`);
      }
    }
  }
  if (raw.KAFKA_SASL_MECHANISM && !(raw.KAFKA_SASL_USERNAME && raw.KAFKA_SASL_PASSWORD)) {
    problems.push('KAFKA_SASL_MECHANISM is set: expected KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD too');
  }
  if (problems.length > 0 || 'problems' in temporal) throw new ConfigError(problems);
  return {
    databaseUrl: v.DATABASE_URL,
    migrationDatabaseUrl: v.MIGRATION_DATABASE_URL ?? v.DATABASE_URL,
    relayDatabaseUrl: v.RELAY_DATABASE_URL ?? v.DATABASE_URL,
    databasePoolSize: v.DATABASE_POOL_SIZE,
    databaseSession: {
      statementTimeoutMs: v.DATABASE_STATEMENT_TIMEOUT,
      idleInTransactionTimeoutMs: v.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT,
      tcpKeepaliveIdleMs: v.DATABASE_TCP_KEEPALIVE_IDLE,
    },
    rolePasswords: { worker: v.EXPIRY_REMINDER_WORKER_PASSWORD, relay: v.OUTBOX_RELAY_PASSWORD },
    temporal: {
      address: temporal.profile.address ?? DEFAULT_TEMPORAL_ADDRESS,
      namespace: temporal.profile.namespace ?? 'default',
      taskQueue: v.TEMPORAL_TASK_QUEUE,
      connection: temporal.profile,
    },
    cycle: {
      thresholdsDays: v.REMINDER_THRESHOLDS_DAYS,
      batchSize: v.REMINDER_BATCH_SIZE,
      retentionDays: v.REMINDER_RETENTION_DAYS,
      maxRunDurationMs: v.REMINDER_MAX_RUN_DURATION,
      ownerConcurrency: v.REMINDER_OWNER_CONCURRENCY,
      ownerGroupSize: v.REMINDER_OWNER_GROUP_SIZE,
      maxHistoryEvents: v.REMINDER_MAX_HISTORY_EVENTS,
      busyRetryWindowMs: busyRetryWindowMs(v.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT),
    },
    kafka: {
      brokers: v.KAFKA_BROKERS.split(','),
      clientId: v.KAFKA_CLIENT_ID,
      ssl: v.KAFKA_SSL_CA_PATH ? { caPath: v.KAFKA_SSL_CA_PATH } : v.KAFKA_SSL,
      sasl:
        v.KAFKA_SASL_MECHANISM && v.KAFKA_SASL_USERNAME && v.KAFKA_SASL_PASSWORD
          ? { mechanism: v.KAFKA_SASL_MECHANISM, username: v.KAFKA_SASL_USERNAME, password: v.KAFKA_SASL_PASSWORD }
          : undefined,
      topicPartitions: v.KAFKA_TOPIC_PARTITIONS,
      topicReplicationFactor: v.KAFKA_TOPIC_REPLICATION_FACTOR,
    },
    relay: {
      batchSize: v.RELAY_BATCH_SIZE,
      concurrency: v.RELAY_CONCURRENCY,
      pollIntervalMs: v.RELAY_POLL_INTERVAL,
      lingerMs: v.RELAY_LINGER,
      sendTimeoutMs: v.RELAY_SEND_TIMEOUT,
      maxBackoffMs: v.RELAY_MAX_BACKOFF,
      maxAttempts: v.RELAY_MAX_ATTEMPTS,
      retentionMs: v.OUTBOX_RETENTION,
      cleanupIntervalMs: v.RELAY_CLEANUP_INTERVAL,
      backlogRefreshIntervalMs: v.RELAY_BACKLOG_REFRESH_INTERVAL,
    },
    schedule: { intervalMs: v.REMINDER_POLLING_INTERVAL, offsetMs: v.REMINDER_POLLING_OFFSET },
    metricsPort: v.METRICS_PORT,
    backlogRefreshIntervalMs: v.BACKLOG_REFRESH_INTERVAL,
    tracing: { otlpEndpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: v.OTEL_SERVICE_NAME },
    logLevel: v.LOG_LEVEL,
    workflowBundlePath: v.WORKFLOW_BUNDLE_PATH,
    scanSlices: v.REMINDER_SCAN_SLICES,
  };
}

/** The database URL a process needs, or a ConfigError saying which variable to set. */
export function requireDatabaseUrl(config: Config, purpose: 'worker' | 'relay' | 'migrate'): string {
  const url = { worker: config.databaseUrl, relay: config.relayDatabaseUrl, migrate: config.migrationDatabaseUrl }[
    purpose
  ];
  if (!url) {
    throw new ConfigError([
      {
        worker:
          'DATABASE_URL=(unset): expected the worker connection, e.g. postgres://expiry_reminder_worker:password@127.0.0.1:5432/profile',
        relay:
          'RELAY_DATABASE_URL (or DATABASE_URL)=(unset): expected the relay connection, e.g. postgres://outbox_relay:password@127.0.0.1:5432/profile',
        migrate:
          'MIGRATION_DATABASE_URL (or DATABASE_URL)=(unset): expected the owner connection, e.g. postgres://postgres:password@127.0.0.1:5432/profile',
      }[purpose],
    ]);
  }
  return url;
}
