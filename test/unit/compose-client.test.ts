/**
 * Compose runs what OPERATIONS says (issue 38, item 6): every client command docs/OPERATIONS.md documents
 * gets, in docker-compose.yml's `client` service, the variables it needs, each database URL as the role
 * that command reads or writes with. A command documented without an entry below fails the test: say here
 * what it needs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/client';
import { loadConfig, type Config } from '../../src/config';
import { RELAY_ROLE, SUPPORT_ROLE, WORKER_ROLE } from '../../src/domain/names';
import { composedEnv } from '../support/compose';

const OPERATIONS = fs.readFileSync(path.resolve(__dirname, '../../docs/OPERATIONS.md'), 'utf8');

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

/** The client commands OPERATIONS names in code spans (`cycle preview …`, `explain --owner …`). */
function documentedCommands(): string[] {
  const commands = clientCommands();
  const spans = [...OPERATIONS.matchAll(/`([^`\n]+)`/g)].map((m) => m[1].replace(/^npm run client -- /, ''));
  return commands.filter((c) => spans.some((s) => s === c || s.startsWith(`${c} `)));
}

let certs: string;
beforeAll(() => {
  certs = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-client-'));
  for (const file of ['ca.pem', 'client.pem', 'client-key.pem']) fs.writeFileSync(path.join(certs, file), '');
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
