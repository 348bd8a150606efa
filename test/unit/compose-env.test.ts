/**
 * The environment docker-compose.yml gives the app's services is one the app accepts, with the TLS and
 * SASL settings the production checklist (docs/DEPLOYMENT.md) lists: compose is not run here, so this is
 * where its values meet src/config. Interpolated passwords stand in as placeholders, and the `certs`
 * volume as a folder with the files of the same names.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { composedEnv as composedEnvIn } from '../support/compose';

let certs: string;

/** The service's environment as compose would give it, its certificates in this file's folder. */
const composedEnv = (name: string): NodeJS.ProcessEnv => composedEnvIn(name, certs);

beforeAll(() => {
  certs = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-env-'));
  for (const file of ['ca.pem', 'worker.pem', 'worker-key.pem', 'client.pem', 'client-key.pem']) {
    fs.writeFileSync(path.join(certs, file), '');
  }
});

afterAll(() => fs.rmSync(certs, { recursive: true, force: true }));

describe('the app services of docker-compose.yml', () => {
  it('the worker: its database over verify-full against the stack CA, Temporal over mTLS as `worker`', () => {
    const config = loadConfig(composedEnv('worker'));
    const url = new URL(config.databaseUrl!);
    expect([url.username, url.hostname, url.searchParams.get('sslmode'), url.searchParams.get('sslrootcert')]).toEqual([
      'expiry_reminder_worker',
      'postgres',
      'verify-full',
      `${certs}/ca.pem`,
    ]);
    expect(config.temporal).toMatchObject({ address: 'temporal:7233', namespace: 'default' });
    expect(config.temporal.connection.tls).toMatchObject({
      clientCert: { path: `${certs}/worker.pem` },
      clientKey: { path: `${certs}/worker-key.pem` },
      serverCACert: { path: `${certs}/ca.pem` },
      serverName: 'temporal',
    });
  });

  it('the relay: its own role over verify-full, Kafka over SASL_SSL with SCRAM-SHA-512 as `relay`', () => {
    const config = loadConfig(composedEnv('relay'));
    const url = new URL(config.relayDatabaseUrl!);
    expect([url.username, url.searchParams.get('sslmode')]).toEqual(['outbox_relay', 'verify-full']);
    expect(config.kafka).toMatchObject({
      brokers: ['kafka:9092'],
      ssl: { caPath: `${certs}/ca.pem` },
      sasl: { mechanism: 'scram-sha-512', username: 'relay', password: 'placeholder-relay_scram_password' },
    });
  });

  it('migrate: the owner over verify-full, and the three role passwords to set', () => {
    const config = loadConfig(composedEnv('migrate'));
    expect(new URL(config.migrationDatabaseUrl!).searchParams.get('sslmode')).toBe('verify-full');
    expect(config.rolePasswords).toEqual({
      worker: 'placeholder-worker_db_password',
      relay: 'placeholder-relay_db_password',
      support: 'placeholder-support_db_password',
    });
  });

  it("temporal-db-role: the admin of Temporal's own cluster over verify-full, and the Temporal role's password", () => {
    const config = loadConfig(composedEnv('temporal-db-role'));
    const url = new URL(config.migrationDatabaseUrl!);
    expect([url.username, url.hostname, url.searchParams.get('sslmode')]).toEqual([
      'postgres',
      'temporal-postgres',
      'verify-full',
    ]);
    expect(config.temporalDbPassword).toBe('placeholder-temporal_db_password');
  });

  it.each(['schedule-apply', 'client'])('%s: Temporal over mTLS as `client`', (name) => {
    expect(loadConfig(composedEnv(name)).temporal.connection.tls).toMatchObject({
      clientCert: { path: `${certs}/client.pem` },
      serverName: 'temporal',
    });
  });
});
