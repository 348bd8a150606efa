/**
 * `migrate` sets the roles' passwords without sending them: what reaches the server (and its log, where
 * statements are logged) is a SCRAM-SHA-256 verifier computed on the client.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { runMigrations, scramSha256Verifier, setRolePassword } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { LOCAL_ROLE_PASSWORDS, createMigratedDatabase, type MigratedDatabase } from '../../scripts/stack/database';
import { databaseUrl } from '../../scripts/stack/postgres';

/** A TCP proxy in front of the server that keeps every byte the client sends. */
async function recordingProxy(
  target: URL,
): Promise<{ url: (base: string) => string; sent: () => string; close(): Promise<void> }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (d) => chunks.push(Buffer.from(d)));
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: (base) => {
      const u = new URL(base);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    sent: () => Buffer.concat(chunks).toString('latin1'),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function canLogIn(url: string): Promise<boolean> {
  const pool = createPool({ connectionString: url, max: 1 });
  try {
    await pool.query('select 1');
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === '28P01') return false;
    throw err;
  } finally {
    await pool.end();
  }
}

const adminUrl = () => process.env.STACK_DATABASE_ADMIN_URL!;
let db: MigratedDatabase;

beforeAll(async () => {
  db = await createMigratedDatabase(adminUrl(), { prefix: 't_migrate_passwords', migrate: false });
});
afterAll(async () => {
  await db.drop();
});

test('migrate sends the role passwords as SCRAM verifiers, never as text, and the roles log in with them', async () => {
  const proxy = await recordingProxy(new URL(db.ownerUrl));
  try {
    await runMigrations({ connectionString: proxy.url(db.ownerUrl), rolePasswords: LOCAL_ROLE_PASSWORDS });
  } finally {
    await proxy.close();
  }

  const sent = proxy.sent();
  expect(sent).toMatch(/alter role expiry_reminder_worker password 'SCRAM-SHA-256\$4096:/);
  expect(sent).not.toContain(LOCAL_ROLE_PASSWORDS.worker);
  expect(sent).not.toContain(LOCAL_ROLE_PASSWORDS.relay);
  expect(sent).toMatch(/alter role expiry_reminder_support password 'SCRAM-SHA-256\$4096:/);
  expect(sent).not.toContain(LOCAL_ROLE_PASSWORDS.support);
  expect(await canLogIn(db.workerUrl)).toBe(true);
  expect(await canLogIn(db.relayUrl)).toBe(true);
  expect(await canLogIn(db.supportUrl)).toBe(true);
  expect(await canLogIn(databaseUrl(db.workerUrl, { password: 'not-the-password' }))).toBe(false);
});

test('a non-ASCII password is prepared as the server prepares it (SASLprep), so the role logs in with it', async () => {
  const role = `t_scram_${crypto.randomBytes(4).toString('hex')}`;
  // A ligature NFKC folds to "fi", a no-break space mapped to a space, and a soft hyphen mapped to nothing.
  const password = 'ﬁx\u00A0pässwörd\u00AD-1';
  const admin = new pg.Client({ connectionString: db.ownerUrl });
  await admin.connect();
  try {
    await admin.query(`create role ${role} login`);
    await setRolePassword(admin, role, password);
    const { rows } = await admin.query<{ rolpassword: string }>(
      'select rolpassword from pg_authid where rolname = $1',
      [role],
    );
    expect(rows[0].rolpassword).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(await canLogIn(databaseUrl(db.ownerUrl, { user: role, password }))).toBe(true);
    expect(await canLogIn(databaseUrl(db.ownerUrl, { user: role, password: 'fix pässwörd-1' }))).toBe(true);
    expect(await canLogIn(databaseUrl(db.ownerUrl, { user: role, password: 'fix-passwoerd-1' }))).toBe(false);
  } finally {
    await admin.query(`drop role if exists ${role}`);
    await admin.end();
  }
});

test('the verifier is the one RFC 7677 gives for its test vector', () => {
  // RFC 7677 §3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations; its
  // proofs follow from StoredKey and ServerKey, which PostgreSQL's own verifier for that salt holds.
  expect(scramSha256Verifier('pencil', 4096, Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'))).toBe(
    'SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=',
  );
});
