/**
 * docker-compose.yml's one-shot scripts, as the file holds them, run against the production profile's
 * PostgreSQL (ops/postgres, TLS and SCRAM only): the certificates job, the Temporal role and the
 * Temporal schema. No Docker engine runs here, so compose never runs as a whole; these scripts are the
 * parts of it the profile's own code does not already run. Only the host name and the CA path the
 * containers see are swapped for this machine's.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { productionFile } from '../../scripts/stack/production-files';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { findOrBuildTemporalServer, TEMPORAL_DB_ROLE } from '../../scripts/stack/temporal-server';
import { composeEnv, composeScript } from './support/compose';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';

jest.setTimeout(300_000);

let secrets: StackSecrets;
let server: ProductionPostgres;
let port: string;
let toolDir: string;

/** `script` with the containers' host name and CA path replaced by this machine's. */
function onThisMachine(script: string): string {
  return script
    .replaceAll('host=postgres ', `host=localhost port=${port} `)
    .replaceAll('/certs/ca.pem', secrets.caPath);
}

async function loginAsTemporal(password: string, database = 'postgres'): Promise<{ ssl: boolean }> {
  const client = new pg.Client({
    connectionString: `postgres://${TEMPORAL_DB_ROLE}:${encodeURIComponent(password)}@localhost:${port}/${database}?sslmode=verify-full&sslrootcert=${encodeURIComponent(secrets.caPath)}`,
  });
  await client.connect();
  try {
    return (await client.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()')).rows[0];
  } finally {
    await client.end();
  }
}

function runTemporalDbRole(password: string): string {
  return execFileSync('bash', ['-c', onThisMachine(composeScript('temporal-db-role'))], {
    env: { PATH: process.env.PATH, PGPASSWORD: secrets.passwords.postgresAdmin, TEMPORAL_DB_PASSWORD: password },
    encoding: 'utf8',
  });
}

beforeAll(async () => {
  secrets = prepareStackSecrets(fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-')));
  server = await startProductionPostgres(secrets);
  port = new URL(server.adminUrl).port;
  // The compose job calls the SQL tool by the name the admin-tools image gives it.
  const binaries = await findOrBuildTemporalServer();
  toolDir = path.join(secrets.dir, 'bin');
  fs.mkdirSync(toolDir);
  fs.symlinkSync(binaries.sql, path.join(toolDir, 'temporal-sql-tool'));
}, 900_000);

afterAll(async () => {
  await server?.stop();
  if (secrets) fs.rmSync(secrets.dir, { recursive: true, force: true });
});

test('temporal-db-role creates the Temporal role with TEMPORAL_DB_PASSWORD, which then logs in over TLS; run again, it changes the password', async () => {
  expect(runTemporalDbRole('first-password')).toContain('CREATE ROLE');
  expect(await loginAsTemporal('first-password')).toEqual({ ssl: true });
  expect(runTemporalDbRole(secrets.passwords.temporal)).toContain('ALTER ROLE');
  expect(await loginAsTemporal(secrets.passwords.temporal)).toEqual({ ssl: true });
  await expect(loginAsTemporal('first-password')).rejects.toThrow(/password authentication failed/);
});

test('temporal-schema creates both Temporal stores with their schema over TLS, and changes nothing when run again', async () => {
  const env = {
    ...composeEnv('temporal-schema'),
    PATH: `${toolDir}${path.delimiter}${process.env.PATH}`,
    SQL_HOST: 'localhost',
    SQL_PORT: port,
    SQL_PASSWORD: secrets.passwords.temporal,
    SQL_TLS_CA_FILE: secrets.caPath,
  };
  expect(env).toMatchObject({ SQL_USER: TEMPORAL_DB_ROLE, SQL_TLS: 'true', SQL_PLUGIN: 'postgres12' });
  const versions = async () => {
    const found: Record<string, string> = {};
    for (const database of ['temporal', 'temporal_visibility']) {
      const client = new pg.Client({ connectionString: server.adminUrl.replace(/\/postgres\?/, `/${database}?`) });
      await client.connect();
      try {
        const { rows } = await client.query<{ v: string }>('select curr_version as v from schema_version');
        found[database] = rows.map((r) => r.v).join();
      } finally {
        await client.end();
      }
    }
    return found;
  };
  const script = composeScript('temporal-schema');
  execFileSync('sh', ['-c', script], { env, stdio: 'ignore' });
  const first = await versions();
  expect(first).toEqual({
    temporal: expect.stringMatching(/^\d+\.\d+$/),
    temporal_visibility: expect.stringMatching(/^\d+\.\d+$/),
  });
  execFileSync('sh', ['-c', script], { env, stdio: 'ignore' });
  expect(await versions()).toEqual(first);
});

const asRoot = process.getuid?.() === 0 ? test : test.skip;
asRoot(
  'certs runs ops/tls/make-certs.sh and leaves the postgres key its server user’s, every key 0600, the CA key root’s',
  () => {
    const dir = path.join(secrets.dir, 'compose-certs');
    fs.mkdirSync(dir);
    const script = composeScript('certs')
      .replace('/opt/expiry-reminder/make-certs.sh', productionFile('makeCerts'))
      .replaceAll('/certs', dir);
    execFileSync('bash', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const stat = (name: string) => {
      const s = fs.statSync(path.join(dir, name));
      return { uid: s.uid, mode: (s.mode & 0o777).toString(8) };
    };
    expect(stat('postgres-key.pem')).toEqual({ uid: postgresUid, mode: '600' });
    expect(stat('ca-key.pem')).toEqual({ uid: 0, mode: '600' });
    for (const key of [
      'temporal-key.pem',
      'kafka-keystore.pem',
      'worker-key.pem',
      'relay-key.pem',
      'ui-client-key.pem',
    ]) {
      expect([key, stat(key)]).toEqual([key, { uid: 1000, mode: '600' }]);
    }
    expect(stat('ca.pem')).toEqual({ uid: 1000, mode: '644' });
    expect((fs.statSync(dir).mode & 0o777).toString(8)).toBe('755');
  },
);
