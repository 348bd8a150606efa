/**
 * Compose runs what OPERATIONS says (issue 38, items 2 and 6): every client command docs/OPERATIONS.md
 * documents gets, in docker-compose.yml's `client` service, the variables it needs, each database URL as
 * the role that command reads or writes with. A command documented without an entry below fails the test:
 * say here what it needs. The commands OPERATIONS gives a support desk
 * (`docker compose -f docker-compose.support.yml run --rm support …`) get the same from that file's `support`
 * service, as the support role and Temporal's reader only, with no credential of the worker, the relay, the
 * owner or the `client` certificate.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/client';
import { loadConfig, type Config } from '../../src/config';
import { RELAY_ROLE, SUPPORT_ROLE, WORKER_ROLE } from '../../src/domain/names';
import { parse } from 'yaml';
import { composedEnv, composeService } from '../support/compose';

const ROOT = path.resolve(__dirname, '../..');
const OPERATIONS = fs.readFileSync(path.join(ROOT, 'docs/OPERATIONS.md'), 'utf8');

/** The role of a database URL, or undefined without one. */
const roleOf = (url: string | undefined) => (url ? new URL(url).username : undefined);

/** What a command is missing from `config`: a Temporal connection over mTLS, the database as a role. */
const temporal = (c: Config) =>
  c.temporal.connection.tls && typeof c.temporal.connection.tls === 'object' && c.temporal.connection.tls.clientCert
    ? []
    : ['TEMPORAL_TLS_CLIENT_CERT_PATH (the frontend takes mTLS only)'];
const reads = (c: Config) =>
  [SUPPORT_ROLE, WORKER_ROLE].includes(roleOf(c.supportDatabaseUrl ?? c.databaseUrl) ?? '')
    ? []
    : [`SUPPORT_DATABASE_URL (as ${SUPPORT_ROLE})`];
const outbox = (c: Config) =>
  roleOf(c.relayDatabaseUrl) === RELAY_ROLE ? [] : [`RELAY_DATABASE_URL (as ${RELAY_ROLE})`];
const explainsOutbox = (c: Config) => (c.supportDatabaseUrl ? [] : outbox(c));

const NEEDS: Record<string, (c: Config) => string[]> = {
  'schedule apply': temporal,
  'schedule describe': temporal,
  'schedule pause': temporal,
  'schedule unpause': temporal,
  'schedule trigger': temporal,
  'schedule backfill': temporal,
  'schedule delete': temporal,
  'cycle run': temporal,
  'cycle status': temporal,
  'cycle preview': reads,
  explain: (c) => [...reads(c), ...explainsOutbox(c), ...temporal(c)],
  'outbox parked': outbox,
  'outbox retry': outbox,
  'deployment status': temporal,
  'deployment current': temporal,
  'deployment ramp': temporal,
};

/** The client's commands, `group sub` or `name`, as its program defines them. */
function clientCommands(): string[] {
  const walk = (cmd: Command, prefix: string): string[] =>
    cmd.commands.length === 0
      ? [prefix]
      : cmd.commands.flatMap((sub) => walk(sub, prefix ? `${prefix} ${sub.name()}` : sub.name()));
  return walk(
    buildProgram(() => loadConfig({})),
    '',
  );
}

/** The client commands among `spans` (a span is the command or starts with it and its arguments). */
const commandsIn = (spans: string[]) =>
  clientCommands().filter((c) => spans.some((s) => s === c || s.startsWith(`${c} `)));

/** The client commands OPERATIONS names in code spans (`cycle preview …`, `explain --owner …`). */
const documentedCommands = () =>
  commandsIn([...OPERATIONS.matchAll(/`([^`\n]+)`/g)].map((m) => m[1].replace(/^npm run client -- /, '')));

const SUPPORT_FILE = 'docker-compose.support.yml';

/** The commands OPERATIONS runs with the support file (`docker compose -f docker-compose.support.yml run --rm support …`). */
const supportCommands = () =>
  commandsIn(
    [...OPERATIONS.matchAll(/`docker compose -f docker-compose\.support\.yml run --rm support ([^`\n]+)/g)].map(
      (m) => m[1],
    ),
  );

/**
 * The Temporal identity of a client certificate: ops/tls/make-certs.sh issues `<name>.pem` with CN `<name>`,
 * and the certs job copies it into the service's volume under the same name.
 */
function identityOf(certPath: string): string {
  const name = path.basename(certPath, '.pem');
  const makeCerts = fs.readFileSync(path.join(ROOT, 'ops/tls/make-certs.sh'), 'utf8');
  expect(makeCerts).toContain('-subj "/CN=$name"');
  expect(makeCerts).toMatch(new RegExp(`^issue ${name} client ""$`, 'm'));
  return name;
}

/** What ops/temporal/identities.yaml grants a certificate's name (the file compose's `temporal` reads). */
const grantsOf = (identity: string): Record<string, string> | undefined =>
  (
    parse(fs.readFileSync(path.join(ROOT, 'ops/temporal/identities.yaml'), 'utf8')) as {
      identities: Record<string, Record<string, string>>;
    }
  ).identities[identity];

/** Reads as the support role only (a support desk holds no worker URL). */
const readsAsSupport = (c: Config) =>
  roleOf(c.supportDatabaseUrl) === SUPPORT_ROLE && !c.databaseUrl ? [] : [`SUPPORT_DATABASE_URL (as ${SUPPORT_ROLE})`];
/** Temporal over mTLS as a certificate that identities.yaml makes a reader of the job's namespace, no more. */
const temporalAsReader = (c: Config) => {
  const tls = c.temporal.connection.tls;
  const cert = tls && typeof tls === 'object' && tls.clientCert && 'path' in tls.clientCert ? tls.clientCert.path : '';
  if (!cert) return temporal(c);
  const grants = grantsOf(identityOf(cert));
  return JSON.stringify(grants) === JSON.stringify({ namespace: 'reader' })
    ? []
    : [
        `TEMPORAL_TLS_CLIENT_CERT_PATH of a Temporal reader (${path.basename(cert)} is granted ${JSON.stringify(grants)})`,
      ];
};

/** What each command OPERATIONS gives a support desk needs from the `support` service. */
const SUPPORT_NEEDS: Record<string, (c: Config) => string[]> = {
  explain: (c) => [...readsAsSupport(c), ...temporalAsReader(c)],
  'cycle preview': readsAsSupport,
};

let certs: string;
beforeAll(() => {
  certs = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-client-'));
  for (const file of ['ca.pem', 'client.pem', 'client-key.pem', 'support.pem', 'support-key.pem']) {
    fs.writeFileSync(path.join(certs, file), '');
  }
});
afterAll(() => fs.rmSync(certs, { recursive: true, force: true }));

test('OPERATIONS documents the client commands, and each is one this file knows the needs of', () => {
  const documented = documentedCommands();
  expect(documented).toEqual(expect.arrayContaining(['explain', 'cycle preview', 'outbox parked', 'outbox retry']));
  expect(documented.filter((c) => !(c in NEEDS))).toEqual([]);
  expect(Object.keys(NEEDS).filter((c) => !clientCommands().includes(c))).toEqual([]);
});

test("docker-compose.yml's client service has what every documented command needs", () => {
  const config = loadConfig(composedEnv('client', certs));
  const missing = documentedCommands().flatMap((c) => NEEDS[c](config).map((v) => `${c}: ${v}`));
  expect(missing).toEqual([]);
});

test('each of its database URLs comes from its own password, and none is the worker', () => {
  const env = composedEnv('client', certs);
  expect([roleOf(env.SUPPORT_DATABASE_URL), new URL(env.SUPPORT_DATABASE_URL!).password]).toEqual([
    SUPPORT_ROLE,
    'placeholder-support_db_password',
  ]);
  expect([roleOf(env.RELAY_DATABASE_URL), new URL(env.RELAY_DATABASE_URL!).password]).toEqual([
    RELAY_ROLE,
    'placeholder-relay_db_password',
  ]);
  expect(env.DATABASE_URL).toBeUndefined();
});

describe("docker-compose.support.yml's support service", () => {
  test('OPERATIONS gives a support desk explain through it, and each of its commands is one this file knows the needs of', () => {
    const documented = supportCommands();
    expect(documented).toContain('explain');
    expect(documented.filter((c) => !(c in SUPPORT_NEEDS))).toEqual([]);
  });

  test('has what every support command needs: the support role, Temporal as a reader', () => {
    const config = loadConfig(composedEnv('support', certs, SUPPORT_FILE));
    const missing = supportCommands().flatMap((c) => SUPPORT_NEEDS[c](config).map((v) => `${c}: ${v}`));
    expect(missing).toEqual([]);
    expect(new URL(config.supportDatabaseUrl!).password).toBe('placeholder-support_db_password');
  });

  test('holds no admin secret: no other password, database URL or key, its own certificate volume only', () => {
    const service = composeService('support', SUPPORT_FILE);
    const env = Object.entries(service.environment ?? {}).map(([variable, value]) => [variable, String(value)]);
    const passwords = env.flatMap(([, value]) => [...value.matchAll(/\$\{(\w*PASSWORD\w*)/g)].map((m) => m[1]));
    expect(passwords).toEqual(['SUPPORT_DB_PASSWORD']);
    const variables = env.map(([variable]) => variable);
    for (const admin of [
      'DATABASE_URL',
      'RELAY_DATABASE_URL',
      'MIGRATION_DATABASE_URL',
      'TEMPORAL_API_KEY',
      'KAFKA_SASL_PASSWORD',
    ]) {
      expect(variables).not.toContain(admin);
    }
    expect(variables.filter((v) => v.includes('PASSWORD'))).toEqual([]);
    expect(service.volumes).toEqual(['certs-support:/certs:ro']);
    expect(composedEnv('support', '/certs', SUPPORT_FILE)).toMatchObject({
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/support.pem',
      TEMPORAL_TLS_CLIENT_KEY_PATH: '/certs/support-key.pem',
    });
  });

  test("Temporal maps its certificate to the reader role with the profile's own file", () => {
    expect(composeService('temporal').volumes).toContain(
      './ops/temporal/identities.yaml:/etc/temporal/identities.yaml:ro',
    );
    expect(grantsOf('support')).toEqual({ namespace: 'reader' });
    // The check tells them apart: the `client` service's certificate is an admin's.
    expect(temporalAsReader(loadConfig(composedEnv('client', certs)))).toEqual([
      'TEMPORAL_TLS_CLIENT_CERT_PATH of a Temporal reader (client.pem is granted {"namespace":"admin"})',
    ]);
  });
});
