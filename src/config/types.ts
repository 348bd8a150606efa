/** The validated configuration every entry point receives: what each setting means, not where it comes from. */
import type { ClientConfigProfile } from '@temporalio/envconfig';
import type { CycleDefaults } from '../domain/cycle';
import type { SessionLimits } from '../db/pool';

/** Validated configuration of every entry point. */
export interface Config {
  /** The worker's (and the relay's) connection; required by the processes that touch the database. */
  databaseUrl?: string;
  /** Owner connection for migrations; defaults to `databaseUrl`. */
  migrationDatabaseUrl?: string;
  /** The relay's connection (and the outbox commands'); defaults to `databaseUrl`. */
  relayDatabaseUrl?: string;
  /**
   * The support role's connection (`explain` only: reads what it needs, writes nothing); without it,
   * `explain` reads as the worker (`databaseUrl`) and the relay (`relayDatabaseUrl`).
   */
  supportDatabaseUrl?: string;
  databasePoolSize: number;
  /** Session limits of the worker's connections (0 turns one off); see `SessionLimits` in db/pool.ts. */
  databaseSession: SessionLimits;
  /** Passwords `migrate` sets on the roles it creates, when given (local stacks; production sets them elsewhere). */
  rolePasswords: { worker?: string; relay?: string; support?: string };
  /** The password `temporal-db-role` gives the Temporal server's role (compose); unused by every other entry point. */
  temporalDbPassword?: string;
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    /** The Worker Deployment whose versions the workers declare (docs/SAFE-DEPLOYS.md). */
    deploymentName: string;
    /** The build id the image build set (TEMPORAL_WORKER_BUILD_ID); without it the worker derives one from git. */
    buildId?: string;
    /** The Web UI's address, for links to a run (`explain`); without it, paths under the UI's address. */
    uiUrl?: string;
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
  /** Address `/metrics` listens on (METRICS_HOST): loopback unless a deployment opens it to its scraper. */
  metricsHost: string;
  /** At most how often the worker counts the documents due (the backlog gauge); also after each cycle. */
  backlogRefreshIntervalMs: number;
  logLevel: string;
  /** Id ranges a cycle's first candidate page is scanned in at once (one connection each). */
  scanSlices: number;
  /**
   * How a cycle splits its day (docs/DESIGN.md#partitions): one partition per `size` due documents, at most
   * `max`, unless the run's input names a count.
   */
  partitions: { max: number; size: number };
  /** A prebuilt workflow bundle for the worker (`npm run build` makes `dist/workflows.bundle.js`). */
  workflowBundlePath?: string;
}
