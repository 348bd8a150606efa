/**
 * Support runs on its own key (issue 47, item 4): a support desk runs `explain` from docker-compose.support.yml
 * with the support role's password alone in its environment, and while Temporal is down. There is no Docker
 * engine here, so the files are read as `docker compose` reads them (test/support/compose.ts: the YAML, its
 * merge keys, then compose's interpolation of every string, ported from compose-go, the loader that
 * scripts/check-compose.sh also runs on them).
 */
import {
  composeModel,
  composeService,
  composeText,
  interpolateString,
  readCompose,
  requiredVariables,
} from '../support/compose';

const SUPPORT = 'docker-compose.support.yml';
/** A support desk's .env: the support role's password, nothing else. */
const SUPPORT_ENV = { SUPPORT_DB_PASSWORD: 'support-secret' };
const SUPPORT_URL =
  'postgres://expiry_reminder_support:support-secret@postgres:5432/profile?sslmode=verify-full&sslrootcert=/certs/ca.pem';

/** Every variable a file references, required or not (`$$` is compose's escape of `$`, no variable). */
const referencedVariables = (text: string): string[] =>
  [...new Set([...text.matchAll(/(?<!\$)\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))].sort();

describe('docker-compose.support.yml read as compose does, with only the support password', () => {
  test('reads without an error or an unset variable, and is the support service alone, as shown here', () => {
    const { model, warnings } = readCompose(SUPPORT, SUPPORT_ENV);
    expect(warnings).toEqual([]);
    expect(model).toEqual({
      name: 'expiry-reminder-support',
      services: {
        support: {
          image: 'expiry-reminder:local',
          entrypoint: ['node', 'dist/client.js'],
          command: ['--help'],
          networks: ['deployment'],
          volumes: ['certs-support:/certs:ro'],
          environment: {
            TEMPORAL_ADDRESS: 'temporal:7233',
            TEMPORAL_NAMESPACE: 'default',
            TEMPORAL_TASK_QUEUE: 'document-expiry-reminder',
            TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/certs/ca.pem',
            TEMPORAL_TLS_SERVER_NAME: 'temporal',
            LOG_LEVEL: 'info',
            REMINDER_THRESHOLDS_DAYS: '',
            REMINDER_BATCH_SIZE: '',
            REMINDER_RETENTION_DAYS: '',
            REMINDER_MAX_RUN_DURATION: '',
            REMINDER_POLLING_INTERVAL: '',
            REMINDER_POLLING_OFFSET: '',
            REMINDER_OWNER_CONCURRENCY: '',
            REMINDER_OWNER_GROUP_SIZE: '',
            REMINDER_SCAN_SLICES: '',
            REMINDER_PARTITIONS: '',
            REMINDER_PARTITION_SIZE: '',
            REMINDER_MAX_HISTORY_EVENTS: '',
            TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/support.pem',
            TEMPORAL_TLS_CLIENT_KEY_PATH: '/certs/support-key.pem',
            SUPPORT_DATABASE_URL: SUPPORT_URL,
          },
          healthcheck: { disable: true },
          profiles: ['tools'],
        },
      },
      networks: { deployment: { external: true, name: 'expiry-reminder_default' } },
      volumes: { 'certs-support': { external: true, name: 'expiry-reminder_certs-support' } },
    });
  });

  test('the support service has the support URL and no depends_on: it starts whatever state Temporal is in', () => {
    const support = readCompose(SUPPORT, SUPPORT_ENV).model.services.support;
    expect(support.environment?.SUPPORT_DATABASE_URL).toBe(SUPPORT_URL);
    expect(support.depends_on).toBeUndefined();
  });

  test('references no admin secret: of what docker-compose.yml requires, the support password only', () => {
    const referenced = referencedVariables(composeText(SUPPORT));
    expect(referenced).toEqual(
      [
        'EXPIRY_REMINDER_IMAGE',
        'EXPIRY_REMINDER_PROJECT',
        'LOG_LEVEL',
        ...Object.keys(composeModel()['x-cycle-env'] as object),
        'SUPPORT_DB_PASSWORD',
      ].sort(),
    );
    expect(requiredVariables(SUPPORT)).toEqual(['SUPPORT_DB_PASSWORD']);
    const admin = requiredVariables('docker-compose.yml').filter((v) => v !== 'SUPPORT_DB_PASSWORD');
    expect(admin).toEqual(expect.arrayContaining(['BUILD_ID', 'POSTGRES_PASSWORD', 'WORKER_DB_PASSWORD']));
    expect(referenced.filter((v) => admin.includes(v))).toEqual([]);
    expect(referenced.filter((v) => v.includes('PASSWORD'))).toEqual(['SUPPORT_DB_PASSWORD']);
  });

  const adminSecrets = Object.fromEntries(
    requiredVariables('docker-compose.yml')
      .filter((v) => v !== 'SUPPORT_DB_PASSWORD')
      .map((v) => [v, 'x']),
  );
  test.each<[string, Record<string, string>]>([
    ['unset', {}],
    ['empty', { SUPPORT_DB_PASSWORD: '' }],
    ['unset, every admin secret set', adminSecrets],
  ])('without the support password (%s), compose refuses the file, naming the variable', (_case, env) => {
    expect(() => readCompose(SUPPORT, env)).toThrow(
      new Error(
        'error while interpolating services.support.environment.SUPPORT_DATABASE_URL: required variable ' +
          'SUPPORT_DB_PASSWORD is missing a value: set SUPPORT_DB_PASSWORD (role expiry_reminder_support) in .env',
      ),
    );
  });
});

describe('why a file of its own', () => {
  test('docker-compose.yml, read with the support password alone, fails on the deployment’s secrets', () => {
    expect(() => readCompose('docker-compose.yml', SUPPORT_ENV)).toThrow(
      /^error while interpolating x-app\.build\.args\.BUILD_ID: required variable BUILD_ID is missing a value: /,
    );
  });

  test('docker-compose.yml no longer has a support service to run instead', () => {
    expect(composeModel().services.support).toBeUndefined();
  });
});

describe("docker-compose.support.yml joins the deployment's project", () => {
  const main = composeModel();

  test('the environment of docker-compose.yml’s blocks, its support URL and image', () => {
    const support = composeService('support', SUPPORT);
    expect(support.environment).toEqual({
      ...(main['x-temporal-env'] as object),
      ...(main['x-cycle-env'] as object),
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/support.pem',
      TEMPORAL_TLS_CLIENT_KEY_PATH: '/certs/support-key.pem',
      SUPPORT_DATABASE_URL: main.services.client.environment?.SUPPORT_DATABASE_URL,
    });
    expect(support.image).toBe((main['x-app'] as { image: string }).image);
  });

  test.each([
    ['compose’s default for the checkout', {}, 'expiry-reminder'],
    ['EXPIRY_REMINDER_PROJECT', { EXPIRY_REMINDER_PROJECT: 'profile-prod' }, 'profile-prod'],
  ])(
    'as a project of its own, on the deployment’s network and certs-support volume (%s)',
    (_how, project, deployment) => {
      const { model } = readCompose(SUPPORT, { ...SUPPORT_ENV, ...project });
      expect(model.name).toBe(`${deployment}-support`);
      // Compose names a project's default network and its volumes `<project>_<key>`.
      expect(model.networks).toEqual({ deployment: { external: true, name: `${deployment}_default` } });
      expect(model.volumes).toEqual({
        'certs-support': { external: true, name: `${deployment}_certs-support` },
      });
      expect(main.networks).toBeUndefined();
      expect(Object.keys(main.volumes ?? {})).toContain('certs-support');
      expect(main.services.certs.volumes).toContain('certs-support:/issued/support');
    },
  );
});

describe("the interpolation is compose's (compose-go's template tests)", () => {
  const env = { FOO: 'first', BAR: '', JSON: '{"json":2}' };
  const value = (template: string) => interpolateString(template, env).value;

  test.each([
    ['$${foo}', '${foo}'],
    ['a $ string', 'a $ string'],
    ['^REGEX$', '^REGEX$'],
    ['$FOO-bar', 'first-bar'],
    ['This ${FOO} var', 'This first var'],
    ['This ${BAR} var', 'This  var'],
    ['ok ${missing:-def}', 'ok def'],
    ['ok ${missing-def}', 'ok def'],
    ['ok ${BAR:-def}', 'ok def'],
    ['ok ${BAR-def}', 'ok '],
    ['ok ${UNSET_VAR:+presence_value}', 'ok '],
    ['ok ${FOO:+presence_value}', 'ok presence_value'],
    ['ok ${BAR+presence_value}', 'ok presence_value'],
    ['ok ${BAR:+presence_value}', 'ok '],
    ['ok ${BAR:-/non:-alphanumeric}', 'ok /non:-alphanumeric'],
    ['+ok ${UNSET:-${BAR-defaultValue}}', '+ok '],
    ['ok ${UNSET_VAR-${FOO} ${FOO}}', 'ok first first'],
    ['ok ${BAR+$FOO ${FOO:+second}}', 'ok first second'],
    ['ok ${FOO:?err}', 'ok first'],
    ['ok ${BAR?err}', 'ok '],
    ['${UNSET_VAR-myerror?msg}', 'myerror?msg'],
    ['ok ${missing:-{"json":1}}', 'ok {"json":1}'],
    ['ok ${JSON-{"json":1}}', 'ok {"json":2}'],
    ['${FOO:-a} and ${BAR:-b}', 'first and b'],
  ])('%s → %s', (template, expected) => {
    expect(value(template)).toBe(expected);
  });

  test('an unset variable without a default is blank, with the warning compose prints', () => {
    expect(interpolateString('This ${missing} var', env)).toEqual({
      value: 'This  var',
      warnings: ['The "missing" variable is not set. Defaulting to a blank string.'],
    });
  });

  test.each([
    ['not ok ${UNSET_VAR:?Mandatory Variable Unset}', 'UNSET_VAR is missing a value: Mandatory Variable Unset'],
    ['not ok ${BAR:?Mandatory Variable Empty}', 'BAR is missing a value: Mandatory Variable Empty'],
    ['not ok ${UNSET_VAR:?}', 'UNSET_VAR is missing a value'],
    ['not ok ${UNSET_VAR?Mandatory Variable Unset}', 'UNSET_VAR is missing a value: Mandatory Variable Unset'],
    ['not ok ${UNSET_VAR?Mandatory Variable ${FOO}}', 'UNSET_VAR is missing a value: Mandatory Variable first'],
    ['${UNSET_VAR?bar-baz}', 'UNSET_VAR is missing a value: bar-baz'],
  ])('%s fails: required variable %s', (template, message) => {
    expect(() => value(template)).toThrow(new Error(`required variable ${message}`));
  });

  test.each(['${', '${}', '${ }', '${ foo}', '${foo }', '${foo!}'])('%s is an invalid template', (template) => {
    expect(() => value(template)).toThrow();
  });
});
