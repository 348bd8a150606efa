import { ConfigError, loadConfig, requireDatabaseUrl } from '../../src/config';
import { scheduledCycleTimeoutMs } from '../../src/domain/cycle';
import { redactUrl } from '../../src/observability/redact';
import { temporalConnectionOptions } from '../../src/temporal/connection';

/** The ConfigError `loadConfig(env)` throws. */
function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.cycle).toEqual({
      thresholdsDays: [30, 7, 1, 0],
      batchSize: 500,
      retentionDays: 90,
      maxRunDurationMs: 600_000,
      ownerConcurrency: 500,
      ownerGroupSize: 100,
      maxHistoryEvents: 9_000,
      // Twice the idle-in-transaction timeout (30 s) plus 10 s: what an orphaned transaction can hold an owner.
      busyRetryWindowMs: 70_000,
    });
    expect(config.databaseSession).toEqual({
      statementTimeoutMs: 60_000,
      idleInTransactionTimeoutMs: 30_000,
      tcpKeepaliveIdleMs: 30_000,
    });
    expect(config.schedule).toEqual({ intervalMs: 24 * 3_600_000, offsetMs: 3 * 3_600_000 });
    expect(config.temporal).toMatchObject({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'document-expiry-reminder',
    });
    expect(temporalConnectionOptions(config)).toEqual({ address: '127.0.0.1:7233' });
    expect(config.databaseUrl).toBeUndefined();
  });

  it('treats empty and blank variables as unset', () => {
    const env = { REMINDER_THRESHOLDS_DAYS: '', REMINDER_BATCH_SIZE: '', DATABASE_URL: '  ', TEMPORAL_ADDRESS: '' };
    expect(loadConfig(env)).toEqual(loadConfig({}));
  });

  it('reads valid values, including durations written with a unit', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://w:pw@db:5432/profile',
      REMINDER_THRESHOLDS_DAYS: '14, 3, 0',
      REMINDER_BATCH_SIZE: '100',
      REMINDER_MAX_RUN_DURATION: '1.5h',
      REMINDER_POLLING_INTERVAL: '12h',
      REMINDER_POLLING_OFFSET: '0',
    });
    expect(config.databaseUrl).toBe('postgres://w:pw@db:5432/profile');
    expect(config.migrationDatabaseUrl).toBe('postgres://w:pw@db:5432/profile');
    expect(config.cycle).toMatchObject({ thresholdsDays: [14, 3, 0], batchSize: 100, maxRunDurationMs: 5_400_000 });
    expect(config.schedule).toEqual({ intervalMs: 12 * 3_600_000, offsetMs: 0 });
  });

  const EXAMPLE = 'expected distinct whole numbers >= 0 in descending order, e.g. 30,7,1,0';
  it.each<[string, string, string[]]>([
    ['REMINDER_THRESHOLDS_DAYS', ' , ', ['every threshold must be a whole number of days >= 0', EXAMPLE]],
    ['REMINDER_THRESHOLDS_DAYS', 'abc', ['every threshold must be a whole number of days >= 0', EXAMPLE]],
    ['REMINDER_THRESHOLDS_DAYS', '7,30', ['thresholds must be sorted in descending order', EXAMPLE]],
    ['REMINDER_THRESHOLDS_DAYS', '30,7,7', ['thresholds must be distinct', EXAMPLE]],
    ['REMINDER_THRESHOLDS_DAYS', '30,-1', ['every threshold must be a whole number of days >= 0', EXAMPLE]],
    ['REMINDER_THRESHOLDS_DAYS', '36500,7', ['every threshold must be at most 3650 days (ten years)', EXAMPLE]],
    ['REMINDER_BATCH_SIZE', '0', ['expected a whole number from 1 to 10000']],
    ['DATABASE_IDLE_IN_TRANSACTION_TIMEOUT', 'half a minute', ['expected a duration with a unit', 'e.g. 30s']],
    ['DATABASE_STATEMENT_TIMEOUT', '-1s', ['expected a duration with a unit', 'e.g. 1m']],
    ['REMINDER_MAX_RUN_DURATION', '23h', ['expected less than the execution timeout of scheduled cycles (21.6h']],
    ['REMINDER_MAX_RUN_DURATION', 'ten minutes', ['expected a positive duration with a unit', 'e.g. 10m']],
    ['REMINDER_MAX_RUN_DURATION', '10', ['expected a positive duration with a unit', 'e.g. 10m']],
    ['REMINDER_POLLING_OFFSET', '24h', ['expected less than REMINDER_POLLING_INTERVAL (1d)']],
    ['RELAY_LINGER', '200', ['expected a duration with a unit', 'e.g. 200ms']],
    ['RELAY_LINGER', '-1s', ['expected a duration with a unit', 'e.g. 200ms']],
    ['DATABASE_URL', 'mysql://x', ['expected a URL such as postgres://user:password@host:5432/database']],
  ])('rejects %s=%j, naming the variable, the value and what is expected', (name, value, fragments) => {
    const err = configError({ [name]: value });
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0].startsWith(`${name}=${JSON.stringify(value)}: `)).toBe(true);
    for (const fragment of fragments) expect(err.problems[0]).toContain(fragment);
    expect(err.message).toContain(err.problems[0]);
  });

  it('derives the execution timeout of scheduled cycles and the catch-up window from the polling interval', () => {
    expect(scheduledCycleTimeoutMs(24 * 3_600_000)).toBe(21.6 * 3_600_000);
    expect(scheduledCycleTimeoutMs(3_600_000)).toBe(54 * 60_000);
    // Never below a minute, however short the interval (tests run schedules every few seconds).
    expect(scheduledCycleTimeoutMs(2_000)).toBe(60_000);
  });

  it('reads RELAY_LINGER with a unit or as 0, and defaults to 200 ms', () => {
    expect(loadConfig({}).relay.lingerMs).toBe(200);
    expect(loadConfig({ RELAY_LINGER: '1.5s' }).relay.lingerMs).toBe(1_500);
    expect(loadConfig({ RELAY_LINGER: '0' }).relay.lingerMs).toBe(0);
  });

  it('turns the idle-in-transaction timeout into the busy-owner retry window, and 0 into ten minutes', () => {
    expect(loadConfig({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '5s' }).cycle.busyRetryWindowMs).toBe(20_000);
    expect(loadConfig({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '0' }).cycle.busyRetryWindowMs).toBe(600_000);
  });

  it('reads TEMPORAL_UI_URL without its trailing slash, and refuses what is not an http(s) address', () => {
    expect(loadConfig({}).temporal.uiUrl).toBeUndefined();
    expect(loadConfig({ TEMPORAL_UI_URL: 'https://temporal.example.com/ui/' }).temporal.uiUrl).toBe(
      'https://temporal.example.com/ui',
    );
    expect(configError({ TEMPORAL_UI_URL: '127.0.0.1:8233' }).problems).toEqual([
      expect.stringMatching(/^TEMPORAL_UI_URL.*expected the Web UI's address/),
    ]);
  });

  it('reports every bad variable at once', () => {
    const err = configError({
      REMINDER_THRESHOLDS_DAYS: '7,30',
      REMINDER_BATCH_SIZE: '0',
      REMINDER_MAX_RUN_DURATION: '10',
      DATABASE_URL: 'mysql://x',
    });
    expect(err.problems.map((p) => p.split('=')[0]).sort()).toEqual([
      'DATABASE_URL',
      'REMINDER_BATCH_SIZE',
      'REMINDER_MAX_RUN_DURATION',
      'REMINDER_THRESHOLDS_DAYS',
    ]);
  });

  it('reports a polling offset not below the interval together with other bad variables', () => {
    const err = configError({ REMINDER_POLLING_OFFSET: '25h', REMINDER_BATCH_SIZE: '0' });
    expect(err.problems.map((p) => p.split('=')[0]).sort()).toEqual(['REMINDER_BATCH_SIZE', 'REMINDER_POLLING_OFFSET']);
  });

  it('never shows a database password in the message', () => {
    const err = configError({
      DATABASE_URL: 'postgres://u:s3cret@h/db',
      MIGRATION_DATABASE_URL: 'mysql://owner:hunter2@h/db',
      REMINDER_BATCH_SIZE: '0',
    });
    expect(err.problems).toHaveLength(2);
    expect(err.message).toContain('MIGRATION_DATABASE_URL="mysql://owner:***@h/db"');
    expect(err.message).not.toMatch(/s3cret|hunter2/);
  });

  it.each(['postgres//owner:hunter2@h/db', 'postgres://owner:hunter2@h:99999/db'])(
    'hides the password of an unparseable database URL %j',
    (url) => {
      const err = configError({ MIGRATION_DATABASE_URL: url });
      expect(err.message).toContain('MIGRATION_DATABASE_URL=');
      expect(err.message).not.toContain('hunter2');
    },
  );

  it('hides the password of a database URL written without a scheme', () => {
    expect(configError({ MIGRATION_DATABASE_URL: 'owner:hunter2@h/db' }).message).not.toContain('hunter2');
  });

  it('refuses a KAFKA_SSL_CA_PATH that names no file, before the relay reads it', () => {
    const err = configError({ KAFKA_SSL: 'true', KAFKA_SSL_CA_PATH: '/nonexistent/ca.pem' });
    expect(err.problems).toEqual([
      'KAFKA_SSL_CA_PATH="/nonexistent/ca.pem": no such file; expected the PEM file of the CA that signed the brokers\' certificates',
    ]);
    expect(loadConfig({ KAFKA_SSL_CA_PATH: __filename }).kafka.ssl).toEqual({ caPath: __filename });
  });

  it('refuses SASL PLAIN without TLS: the password would cross the network in clear text (issue 28)', () => {
    const sasl = { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'relay', KAFKA_SASL_PASSWORD: 'pw' };
    for (const off of [{}, { KAFKA_SSL: 'false' }]) {
      expect(configError({ ...sasl, ...off }).problems).toEqual([
        'KAFKA_SASL_MECHANISM=plain without TLS would send KAFKA_SASL_PASSWORD in clear text: set KAFKA_SSL=true (and KAFKA_SSL_CA_PATH for a private CA), or use scram-sha-512',
      ]);
    }
    // The mirror: PLAIN over TLS, and SCRAM without it (the password never crosses), are accepted.
    expect(loadConfig({ ...sasl, KAFKA_SSL: 'true' }).kafka.sasl?.mechanism).toBe('plain');
    expect(loadConfig({ ...sasl, KAFKA_SSL_CA_PATH: __filename }).kafka.sasl?.mechanism).toBe('plain');
    expect(loadConfig({ ...sasl, KAFKA_SASL_MECHANISM: 'scram-sha-512' }).kafka.sasl?.mechanism).toBe('scram-sha-512');
  });

  it("refuses a page whose groups could pass a run's history limit, naming the variables (issue 28)", () => {
    expect(configError({ REMINDER_BATCH_SIZE: '10000', REMINDER_OWNER_GROUP_SIZE: '1' }).problems).toEqual([
      "REMINDER_BATCH_SIZE=10000 with REMINDER_OWNER_GROUP_SIZE=1: one page may add 60006 history events, and a run continues as new only once it has REMINDER_MAX_HISTORY_EVENTS=9000; together past Temporal's 51200-event limit, which terminates the run. Raise REMINDER_OWNER_GROUP_SIZE, or lower REMINDER_BATCH_SIZE or REMINDER_MAX_HISTORY_EVENTS",
    ]);
    expect(loadConfig({ REMINDER_BATCH_SIZE: '10000', REMINDER_OWNER_GROUP_SIZE: '10' }).cycle.batchSize).toBe(10_000);
  });

  it('reads the SASL_SSL settings of a production cluster', () => {
    const config = loadConfig({
      KAFKA_BROKERS: 'kafka:9093',
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'relay',
      KAFKA_SASL_PASSWORD: 'pw',
    });
    expect(config.kafka).toMatchObject({
      brokers: ['kafka:9093'],
      ssl: true,
      sasl: { mechanism: 'scram-sha-512', username: 'relay', password: 'pw' },
    });
  });
});

describe('redactUrl', () => {
  it('replaces the password and keeps the rest of the URL', () => {
    expect(redactUrl('postgres://u:s3cret@db:5432/profile')).toBe('postgres://u:***@db:5432/profile');
    expect(redactUrl('postgres://u:p@ss@db/profile')).toBe('postgres://u:***@db/profile');
  });

  it('leaves a URL without a password unchanged', () => {
    expect(redactUrl('postgres://u@db/profile')).toBe('postgres://u@db/profile');
  });

  it('hides the password in text that is not a valid URL', () => {
    expect(redactUrl('connect to postgres://u:s3cret@db:99999/x failed')).toBe(
      'connect to postgres://u:***@db:99999/x failed',
    );
  });
});

describe('requireDatabaseUrl', () => {
  it('returns the worker URL, and the migration URL falling back to it', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://w:pw@h/db' });
    expect(requireDatabaseUrl(config, 'worker')).toBe('postgres://w:pw@h/db');
    expect(requireDatabaseUrl(config, 'migrate')).toBe('postgres://w:pw@h/db');
  });

  it('throws a ConfigError naming DATABASE_URL when it is unset', () => {
    const config = loadConfig({});
    expect(() => requireDatabaseUrl(config, 'worker')).toThrow(ConfigError);
    expect(() => requireDatabaseUrl(config, 'worker')).toThrow(/DATABASE_URL=\(unset\)/);
    expect(() => requireDatabaseUrl(config, 'migrate')).toThrow(/MIGRATION_DATABASE_URL \(or DATABASE_URL\)=\(unset\)/);
  });

  it('the relay reads RELAY_DATABASE_URL before DATABASE_URL, so one shell runs both the worker and the relay', () => {
    const both = loadConfig({ DATABASE_URL: 'postgres://w:pw@h/db', RELAY_DATABASE_URL: 'postgres://r:pw@h/db' });
    expect(requireDatabaseUrl(both, 'worker')).toBe('postgres://w:pw@h/db');
    expect(requireDatabaseUrl(both, 'relay')).toBe('postgres://r:pw@h/db');
    const one = loadConfig({ DATABASE_URL: 'postgres://r:pw@h/db' });
    expect(requireDatabaseUrl(one, 'relay')).toBe('postgres://r:pw@h/db');
    expect(() => requireDatabaseUrl(loadConfig({}), 'relay')).toThrow(
      /RELAY_DATABASE_URL \(or DATABASE_URL\)=\(unset\)/,
    );
    expect(configError({ RELAY_DATABASE_URL: 'mysql://r:hunter2@h/db' }).message).toContain(
      'RELAY_DATABASE_URL="mysql://r:***@h/db"',
    );
  });

  it('accepts a URL with sslmode=verify-full and sslrootcert, and keeps it whole', () => {
    const url = 'postgres://w:pw@localhost:5432/db?sslmode=verify-full&sslrootcert=%2Fstack%2Ftls%2Fca.pem';
    expect(requireDatabaseUrl(loadConfig({ DATABASE_URL: url }), 'worker')).toBe(url);
  });
});

describe('redactUrl in free text', () => {
  it('hides a password containing @ and one given as a query parameter', () => {
    expect(redactUrl('connect postgres://u:p@ss@db/profile failed')).toBe('connect postgres://u:***@db/profile failed');
    expect(redactUrl('postgres://db/profile?user=u&password=s3cret')).toBe('postgres://db/profile?user=u&password=***');
  });
});
