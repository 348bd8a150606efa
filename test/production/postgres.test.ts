/**
 * PostgreSQL of the production profile (issue 20): TLS and SCRAM only, from ops/postgres. The job's roles
 * connect with sslmode=verify-full; plaintext, a wrong password, a host name the certificate does not
 * list and a client that does not trust the stack's CA are each refused, with an error that says what to set.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { createPool } from '../../src/db/pool';
import { createMigratedDatabase, stackDatabaseEnv, type MigratedDatabase } from '../../scripts/stack/database';
import { databaseUrl, verifyFullUrl } from '../../scripts/stack/postgres';
import { prepareStackSecrets, type StackSecrets } from '../../scripts/stack/secrets';
import { insertDocuments } from '../support/data';
import { startProductionPostgres, type ProductionPostgres } from './support/postgres';

jest.setTimeout(120_000);

const repoRoot = path.resolve(__dirname, '../..');
const AS_OF = '2026-03-01';

let secrets: StackSecrets;
let server: ProductionPostgres;
let db: MigratedDatabase;
let stackEnv: Record<string, string>;
const folders: string[] = [];

function tempFolder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-prod-'));
  folders.push(dir);
  return dir;
}

/** `url` with its query changed: `undefined` removes a parameter. */
function withParams(url: string, params: Record<string, string | undefined>): string {
  const u = new URL(url);
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) u.searchParams.delete(name);
    else u.searchParams.set(name, value);
  }
  return u.toString();
}

/** Opens one session of the job's pool on `url` and returns what `query` read, closing the pool. */
async function onePool<T extends pg.QueryResultRow>(url: string, query: string): Promise<T> {
  const pool = createPool({ connectionString: url, max: 1 });
  try {
    return (await pool.query<T>(query)).rows[0];
  } finally {
    await pool.end();
  }
}

/** Runs an entry point under tsx with only the given configuration, and what it printed. */
function runEntryPoint(
  args: string[],
  vars: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/DATABASE_URL|_PASSWORD$|^REMINDER_|^TEMPORAL_|^KAFKA_/.test(key)) delete env[key];
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [require.resolve('tsx/cli'), ...args], {
      cwd: repoRoot,
      env: { ...env, METRICS_PORT: '0', LOG_LEVEL: 'warn', ...vars },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Creates login roles `roles` (password `pw-<role>`) on the server of `adminUrl`; returns each one's URL there. */
async function loginRoles(adminUrl: string, roles: string[]): Promise<(role: string) => string> {
  const admin = createPool({ connectionString: adminUrl, max: 1 });
  try {
    for (const role of roles) await admin.query(`create role ${role} login password 'pw-${role}'`);
  } finally {
    await admin.end();
  }
  return (role) => databaseUrl(adminUrl, { user: role, password: `pw-${role}` });
}

beforeAll(async () => {
  secrets = prepareStackSecrets(tempFolder());
  server = await startProductionPostgres(secrets);
  db = await createMigratedDatabase(server.adminUrl, { prefix: 'prod_pg', rolePasswords: secrets.passwords });
  stackEnv = await stackDatabaseEnv(server.adminUrl, secrets.passwords);
});

afterAll(async () => {
  await db?.drop();
  await server?.stop();
  for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the production PostgreSQL', () => {
  it('takes the worker, the relay and the support role over TLS with verify-full against the stack CA, by the name localhost', async () => {
    for (const url of [
      db.workerUrl,
      db.relayUrl,
      db.supportUrl,
      stackEnv.DATABASE_URL,
      stackEnv.RELAY_DATABASE_URL,
      stackEnv.SUPPORT_DATABASE_URL,
    ]) {
      const u = new URL(url);
      expect(u.hostname).toBe('localhost');
      expect(u.searchParams.get('sslmode')).toBe('verify-full');
      expect(u.searchParams.get('sslrootcert')).toBe(secrets.caPath);
      const row = await onePool<{ ssl: boolean; version: string; user: string }>(
        url,
        'select ssl, version, current_user as user from pg_stat_ssl where pid = pg_backend_pid()',
      );
      expect(row).toEqual({ ssl: true, version: expect.stringMatching(/^TLSv1\.[23]$/), user: u.username });
    }
  });

  it('stores role passwords as SCRAM verifiers and admits no weaker method', async () => {
    const row = await onePool<{ password_encryption: string }>(server.adminUrl, 'show password_encryption');
    expect(row).toEqual({ password_encryption: 'scram-sha-256' });
    const rules = await onePool<{ methods: string[] }>(
      server.adminUrl,
      'select array_agg(distinct auth_method order by auth_method) as methods from pg_hba_file_rules',
    );
    expect(rules.methods).toEqual(['reject', 'scram-sha-256']);
  });

  it('refuses a plaintext connection of the worker and the relay, and the error names sslmode and sslrootcert', async () => {
    for (const url of [db.workerUrl, db.relayUrl, server.adminUrl]) {
      const role = new URL(url).username;
      for (const plaintext of [
        withParams(url, { sslmode: 'disable', sslrootcert: undefined }),
        withParams(url, { sslmode: undefined, sslrootcert: undefined }),
      ]) {
        const refusal = onePool(plaintext, 'select 1');
        await expect(refusal).rejects.toMatchObject({ code: '28000' });
        await expect(onePool(plaintext, 'select 1')).rejects.toThrow(
          new RegExp(
            `pg_hba\\.conf rejects connection for host "127\\.0\\.0\\.1", user "${role}", .*no encryption\\. ` +
              'PostgreSQL takes this role over TLS only: add sslmode=verify-full&sslrootcert=<CA file> to DATABASE_URL',
          ),
        );
      }
    }
  });

  it("admits no role pg_hba.conf does not name, Temporal's among them: its stores are in a cluster of their own", async () => {
    const as = await loginRoles(server.adminUrl, ['temporal', 'someone_else']);
    for (const role of ['temporal', 'someone_else']) {
      await expect(onePool(as(role), 'select 1')).rejects.toThrow(
        new RegExp(
          `no pg_hba\\.conf entry for host "127\\.0\\.0\\.1", user "${role}", database "postgres", SSL encryption`,
        ),
      );
    }
  });

  it("keeps Temporal's stores on a cluster of their own: Temporal's role over TLS only, the job's roles and others refused", async () => {
    const temporalServer = await startProductionPostgres(secrets, 'temporal');
    try {
      const as = await loginRoles(temporalServer.adminUrl, ['temporal', 'expiry_reminder_worker']);
      // Its own admin: the job's cluster's password is not it.
      await expect(
        onePool(databaseUrl(temporalServer.adminUrl, { password: secrets.passwords.postgresAdmin }), 'select 1'),
      ).rejects.toThrow(/password authentication failed for user "postgres"/);
      expect(
        await onePool<{ ssl: boolean }>(as('temporal'), 'select ssl from pg_stat_ssl where pid = pg_backend_pid()'),
      ).toEqual({ ssl: true });
      await expect(onePool(withParams(as('temporal'), { sslmode: 'disable' }), 'select 1')).rejects.toThrow(
        /no encryption/,
      );
      await expect(onePool(as('expiry_reminder_worker'), 'select 1')).rejects.toThrow(
        /no pg_hba\.conf entry for host "127\.0\.0\.1", user "expiry_reminder_worker", database "postgres", SSL encryption/,
      );
    } finally {
      await temporalServer.stop();
    }
  });

  it('takes the worker over TLS again after a restart', async () => {
    await server.restart(500);
    expect(
      await onePool<{ ssl: boolean }>(db.workerUrl, 'select ssl from pg_stat_ssl where pid = pg_backend_pid()'),
    ).toEqual({
      ssl: true,
    });
  });

  it('refuses a wrong password over TLS', async () => {
    const wrong = new URL(db.workerUrl);
    wrong.password = 'not-the-stack-password';
    await expect(onePool(wrong.toString(), 'select 1')).rejects.toMatchObject({
      code: '28P01',
      message: expect.stringMatching(
        /password authentication failed for user "expiry_reminder_worker": the password in DATABASE_URL is not the role's/,
      ),
    });
  });

  it('refuses, with verify-full, a host name the certificate does not list', async () => {
    // 127.0.0.2 is this machine too, but not in the certificate: a relay on it reaches the real server.
    const port = Number(new URL(db.workerUrl).port);
    const relay = net.createServer((client) => {
      const upstream = net.connect(port, '127.0.0.1');
      client.pipe(upstream).pipe(client);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.2', resolve));
    try {
      const u = new URL(db.workerUrl);
      u.host = `127.0.0.2:${(relay.address() as net.AddressInfo).port}`;
      await expect(onePool(u.toString(), 'select 1')).rejects.toMatchObject({
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
        message: expect.stringMatching(
          /PostgreSQL's TLS certificate does not name the host of DATABASE_URL \(.*IP: 127\.0\.0\.2 is not in the cert's list.*\): connect by a name it lists/,
        ),
      });
      // The same relay with the name checked by IP: the certificate lists 127.0.0.1, so only the name was wrong.
      u.host = `127.0.0.1:${port}`;
      expect(await onePool<{ ok: number }>(u.toString(), 'select 1 as ok')).toEqual({ ok: 1 });
    } finally {
      await new Promise((resolve) => relay.close(resolve));
    }
  });

  it('refuses a client that does not trust the stack CA: none given, or another CA', async () => {
    const other = prepareStackSecrets(tempFolder());
    for (const url of [
      withParams(db.workerUrl, { sslrootcert: undefined }),
      verifyFullUrl(db.workerUrl, other.caPath),
    ]) {
      await expect(onePool(url, 'select 1')).rejects.toMatchObject({
        code: 'SELF_SIGNED_CERT_IN_CHAIN',
        message: expect.stringMatching(
          /PostgreSQL's TLS certificate is not trusted \(self-signed certificate in certificate chain\): set sslrootcert=<the CA file that issued it> in DATABASE_URL/,
        ),
      });
    }
  });
});

describe("the job's own entry points on the production PostgreSQL", () => {
  it('migrate (as the owner) and cycle preview (as the worker) connect with verify-full', async () => {
    const owner = createPool({ connectionString: db.ownerUrl, max: 1 });
    try {
      await insertDocuments(owner, AS_OF, [{ daysLeft: 7 }, { daysLeft: 30 }, { daysLeft: 100 }]);
    } finally {
      await owner.end();
    }
    const migrate = await runEntryPoint(['src/migrate.ts'], { MIGRATION_DATABASE_URL: db.ownerUrl, LOG_LEVEL: 'info' });
    expect(migrate).toMatchObject({ code: 0 });
    expect(migrate.stdout).toContain('schema up to date');
    const preview = await runEntryPoint(['src/client.ts', 'cycle', 'preview', '--as-of', AS_OF], {
      DATABASE_URL: db.workerUrl,
    });
    expect(preview).toMatchObject({ code: 0 });
    expect(JSON.parse(preview.stdout)).toMatchObject({ ownerCount: 2, documentCount: 2 });
  });

  it('migrate sets the roles’ passwords of EXPIRY_REMINDER_WORKER_PASSWORD, OUTBOX_RELAY_PASSWORD and EXPIRY_REMINDER_SUPPORT_PASSWORD, and the roles log in over TLS with them', async () => {
    const changed = {
      worker: `w-${crypto.randomBytes(9).toString('hex')}`,
      relay: `r-${crypto.randomBytes(9).toString('hex')}`,
      support: `s-${crypto.randomBytes(9).toString('hex')}`,
    };
    const migrate = (passwords: { worker: string; relay: string; support: string }) =>
      runEntryPoint(['src/migrate.ts'], {
        MIGRATION_DATABASE_URL: db.ownerUrl,
        EXPIRY_REMINDER_WORKER_PASSWORD: passwords.worker,
        OUTBOX_RELAY_PASSWORD: passwords.relay,
        EXPIRY_REMINDER_SUPPORT_PASSWORD: passwords.support,
      });
    try {
      expect(await migrate(changed)).toMatchObject({ code: 0 });
      for (const [url, password] of [
        [db.workerUrl, changed.worker],
        [db.relayUrl, changed.relay],
        [db.supportUrl, changed.support],
      ] as const) {
        const row = await onePool<{ ssl: boolean }>(
          databaseUrl(url, { password }),
          'select ssl from pg_stat_ssl where pid = pg_backend_pid()',
        );
        expect(row).toEqual({ ssl: true });
        await expect(onePool(url, 'select 1')).rejects.toThrow(/password authentication failed/);
      }
    } finally {
      // The roles are the server's: the other tests log in with the stack's passwords.
      expect(await migrate(secrets.passwords)).toMatchObject({ code: 0 });
    }
  });

  it.each([
    ['worker', 'src/worker.ts', 'DATABASE_URL', () => db.workerUrl],
    ['relay', 'src/relay.ts', 'RELAY_DATABASE_URL', () => db.relayUrl],
  ])('the %s given a plaintext URL stops and says to set sslmode', async (_name, entry, variable, url) => {
    const result = await runEntryPoint([entry], {
      [variable]: withParams(url(), { sslmode: 'disable', sslrootcert: undefined }),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /no encryption\. PostgreSQL takes this role over TLS only: add sslmode=verify-full&sslrootcert=<CA file> to (RELAY_DATABASE_URL \(or DATABASE_URL\)|DATABASE_URL)/,
    );
    expect(result.stderr).not.toContain(new URL(url()).password);
  });
});
