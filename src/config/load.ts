/** `loadConfig`: the environment, checked variable by variable and then across variables, as a Config. */
import ms from 'ms';
import type { z } from 'zod';
import { busyRetryWindowMs, scheduledCycleTimeoutMs } from '../domain/cycle';
import { pageHistoryProblems } from '../domain/cycle-input';
import { redactUrl } from '../observability/redact';
import { ConfigError } from './errors';
import { schema, temporalAddress, temporalNamespace } from './schema';
import { loadTemporalProfile, type TemporalProfile } from './temporal-profile';
import type { Config } from './types';

/** Where the Temporal dev server listens when neither the environment nor a profile names a server. */
const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

type Variables = z.infer<typeof schema>;

/** `21.6h`, `54m`, `90s`: a duration as exact as two decimals allow (`ms` rounds 21.6 h to 22 h). */
function exactDuration(value: number): string {
  const [unit, size] = value >= 3_600_000 ? ['h', 3_600_000] : value >= 60_000 ? ['m', 60_000] : ['s', 1_000];
  return `${Number((value / (size as number)).toFixed(2))}${unit}`;
}

/** A variable's value as a message may show it: passwords hidden, URLs redacted. */
function shown(name: string, value: string | undefined): string {
  if (value === undefined) return '(unset)';
  if (name.endsWith('_PASSWORD')) return '"***"';
  if (name.endsWith('DATABASE_URL')) return JSON.stringify(redactUrl(value));
  return JSON.stringify(value);
}

/** The schema's variables that are set and not blank, as given. */
function givenVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') raw[key] = value;
  }
  return raw;
}

/** Each variable parsed on its own; a variable that fails is missing from `values` and named in `problems`. */
function parseVariables(raw: Record<string, string>): { values: Variables; problems: string[] } {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(schema.shape)) {
    const parsed = (field as z.ZodType).safeParse(raw[name]);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(...parsed.error.issues.map((issue) => `${name}=${shown(name, raw[name])}: ${issue.message}`));
  }
  return { values: values as Variables, problems };
}

/** The schedule's rules between variables, checked where both sides parsed. */
function scheduleProblems(v: Variables, raw: Record<string, string>): string[] {
  const problems: string[] = [];
  if (typeof v.REMINDER_POLLING_INTERVAL !== 'number') return problems;
  if (typeof v.REMINDER_POLLING_OFFSET === 'number' && v.REMINDER_POLLING_OFFSET >= v.REMINDER_POLLING_INTERVAL) {
    problems.push(
      `REMINDER_POLLING_OFFSET=${shown('REMINDER_POLLING_OFFSET', raw.REMINDER_POLLING_OFFSET)}: expected less than REMINDER_POLLING_INTERVAL (${ms(v.REMINDER_POLLING_INTERVAL)})`,
    );
  }
  const timeoutMs = scheduledCycleTimeoutMs(v.REMINDER_POLLING_INTERVAL);
  if (typeof v.REMINDER_MAX_RUN_DURATION === 'number' && v.REMINDER_MAX_RUN_DURATION >= timeoutMs) {
    problems.push(
      `REMINDER_MAX_RUN_DURATION=${shown('REMINDER_MAX_RUN_DURATION', raw.REMINDER_MAX_RUN_DURATION)}: expected less than the execution ` +
        `timeout of scheduled cycles (${exactDuration(timeoutMs)}, 90 % of REMINDER_POLLING_INTERVAL)`,
    );
  }
  return problems;
}

/** The configured page must fit in a run's history ({@link pageHistoryProblems}), named by its variables. */
function cycleHistoryProblems(v: Variables): string[] {
  const { REMINDER_BATCH_SIZE, REMINDER_OWNER_CONCURRENCY, REMINDER_OWNER_GROUP_SIZE, REMINDER_MAX_HISTORY_EVENTS } = v;
  const given = [
    REMINDER_BATCH_SIZE,
    REMINDER_OWNER_CONCURRENCY,
    REMINDER_OWNER_GROUP_SIZE,
    REMINDER_MAX_HISTORY_EVENTS,
  ];
  if (!given.every((n) => typeof n === 'number')) return [];
  return pageHistoryProblems(
    {
      batchSize: REMINDER_BATCH_SIZE,
      ownerConcurrency: REMINDER_OWNER_CONCURRENCY,
      ownerGroupSize: REMINDER_OWNER_GROUP_SIZE,
      maxHistoryEvents: REMINDER_MAX_HISTORY_EVENTS,
    },
    {
      batchSize: 'REMINDER_BATCH_SIZE',
      ownerGroupSize: 'REMINDER_OWNER_GROUP_SIZE',
      maxHistoryEvents: 'REMINDER_MAX_HISTORY_EVENTS',
    },
  );
}

/** Address and namespace taken from a temporal.toml, which the schema did not see, checked as the variables are. */
function profileProblems(temporal: TemporalProfile, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
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
  return problems;
}

/** The checked variables and Temporal profile, shaped as the Config the entry points read. */
function toConfig(v: Variables, temporal: TemporalProfile): Config {
  return {
    databaseUrl: v.DATABASE_URL,
    migrationDatabaseUrl: v.MIGRATION_DATABASE_URL ?? v.DATABASE_URL,
    relayDatabaseUrl: v.RELAY_DATABASE_URL ?? v.DATABASE_URL,
    ...(v.SUPPORT_DATABASE_URL ? { supportDatabaseUrl: v.SUPPORT_DATABASE_URL } : {}),
    databasePoolSize: v.DATABASE_POOL_SIZE,
    databaseSession: {
      statementTimeoutMs: v.DATABASE_STATEMENT_TIMEOUT,
      idleInTransactionTimeoutMs: v.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT,
      tcpKeepaliveIdleMs: v.DATABASE_TCP_KEEPALIVE_IDLE,
    },
    rolePasswords: {
      worker: v.EXPIRY_REMINDER_WORKER_PASSWORD,
      relay: v.OUTBOX_RELAY_PASSWORD,
      support: v.EXPIRY_REMINDER_SUPPORT_PASSWORD,
    },
    ...(v.TEMPORAL_DB_PASSWORD ? { temporalDbPassword: v.TEMPORAL_DB_PASSWORD } : {}),
    temporal: {
      address: temporal.profile.address ?? DEFAULT_TEMPORAL_ADDRESS,
      namespace: temporal.profile.namespace ?? 'default',
      taskQueue: v.TEMPORAL_TASK_QUEUE,
      deploymentName: v.TEMPORAL_DEPLOYMENT_NAME,
      ...(v.TEMPORAL_WORKER_BUILD_ID ? { buildId: v.TEMPORAL_WORKER_BUILD_ID } : {}),
      ...(v.TEMPORAL_UI_URL ? { uiUrl: v.TEMPORAL_UI_URL.replace(/\/+$/, '') } : {}),
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
    metricsHost: v.METRICS_HOST,
    backlogRefreshIntervalMs: v.BACKLOG_REFRESH_INTERVAL,
    tracing: { otlpEndpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: v.OTEL_SERVICE_NAME },
    logLevel: v.LOG_LEVEL,
    workflowBundlePath: v.WORKFLOW_BUNDLE_PATH,
    scanSlices: v.REMINDER_SCAN_SLICES,
    partitions: { max: v.REMINDER_PARTITIONS, size: v.REMINDER_PARTITION_SIZE },
  };
}

/**
 * Reads and validates the configuration.
 *
 * Empty variables count as unset, so `FOO=` in a compose file falls back to the default.
 * @throws ConfigError naming every bad variable at once.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw = givenVariables(env);
  const { values, problems } = parseVariables(raw);
  problems.push(...scheduleProblems(values, raw));
  const temporal = loadTemporalProfile(env);
  if ('problems' in temporal) problems.push(...temporal.problems);
  else problems.push(...profileProblems(temporal, env));
  problems.push(...cycleHistoryProblems(values));
  if (raw.KAFKA_SASL_MECHANISM && !(raw.KAFKA_SASL_USERNAME && raw.KAFKA_SASL_PASSWORD)) {
    problems.push('KAFKA_SASL_MECHANISM is set: expected KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD too');
  }
  // PLAIN sends the password itself to the broker; SCRAM never does. Over a connection without TLS anyone
  // on the path reads it, and with it may publish as the relay.
  if (raw.KAFKA_SASL_MECHANISM === 'plain' && values.KAFKA_SSL !== true && !raw.KAFKA_SSL_CA_PATH) {
    problems.push(
      'KAFKA_SASL_MECHANISM=plain without TLS would send KAFKA_SASL_PASSWORD in clear text: set KAFKA_SSL=true ' +
        '(and KAFKA_SSL_CA_PATH for a private CA), or use scram-sha-512',
    );
  }
  if (problems.length > 0 || 'problems' in temporal) throw new ConfigError(problems);
  return toConfig(values, temporal);
}
