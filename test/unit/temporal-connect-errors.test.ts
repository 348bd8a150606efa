/**
 * A Temporal connection that fails says what was refused and what to set: gRPC itself reports a refused
 * client certificate as "Failed to connect before the deadline" (@temporalio/client) or a transport error
 * (the worker's native connection). Checked against a TLS server of Node's that requires a client
 * certificate from the stack CA, as the production profile's frontend does (test/production/temporal.test.ts
 * checks the same against the Temporal server itself).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/config/errors';
import { connectTemporal, explainTemporalConnectFailure, withTemporalPermission } from '../../src/temporal/connection';
import { UnavailableError } from '../../src/run-main';
import { errorOf } from '../../src/domain/failures';

let dir: string;
/** Certificates of another stack: its CA is not the server's. */
let other: string;
let server: http2.Http2SecureServer;
let address: string;
const read = (name: string) => fs.readFileSync(path.join(dir, name));

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-connect-errors-'));
  other = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-connect-errors-other-'));
  for (const folder of [dir, other]) {
    // stderr is kept: it is the error's message, e.g. that openssl is missing.
    execFileSync('bash', [path.resolve(__dirname, '../../ops/tls/make-certs.sh'), folder], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  }
  // HTTP/2 over TLS, like a gRPC frontend: it speaks first once the handshake is done.
  server = http2.createSecureServer({
    cert: read('temporal.pem'),
    key: read('temporal-key.pem'),
    ca: read('ca.pem'),
    requestCert: true,
    rejectUnauthorized: true,
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}, 60_000);
afterAll(async () => {
  // Undefined when beforeAll failed (e.g. no openssl): its error is the one to read.
  if (server) await new Promise((resolve) => server.close(resolve));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(other, { recursive: true, force: true });
});

const caOnly = () => ({ serverRootCACertificate: read('ca.pem'), serverNameOverride: 'temporal' });
const gRpcFailure = new Error('Failed to connect before the deadline');

describe('what a failed Temporal connection says', () => {
  it('no client certificate, where the frontend requires one: names the two variables to set', async () => {
    const message = await explainTemporalConnectFailure({ address, tls: caOnly() });
    expect(message).toContain(`The Temporal frontend at ${address} requires a client certificate (mutual TLS)`);
    expect(message).toContain('TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH');
  });

  it('a client certificate from another CA: says the frontend refused it', async () => {
    const message = await explainTemporalConnectFailure({
      address,
      tls: {
        ...caOnly(),
        clientCertPair: {
          crt: fs.readFileSync(path.join(other, 'client.pem')),
          key: fs.readFileSync(path.join(other, 'client-key.pem')),
        },
      },
    });
    expect(message).toContain(`The Temporal frontend at ${address} refused the client certificate`);
    expect(message).toContain('TEMPORAL_TLS_CLIENT_CERT_PATH');
  });

  it('plaintext, where the frontend speaks TLS: says to turn TLS on', async () => {
    const message = await explainTemporalConnectFailure({ address });
    expect(message).toContain(`The Temporal frontend at ${address} requires TLS`);
    expect(message).toContain('TEMPORAL_TLS_SERVER_CA_CERT_PATH');
  });

  it('a server certificate this process does not trust: names the CA setting', async () => {
    const message = await explainTemporalConnectFailure({ address, tls: { serverNameOverride: 'temporal' } });
    expect(message).toContain(`The certificate of the Temporal frontend at ${address} is not trusted`);
    expect(message).toContain('TEMPORAL_TLS_SERVER_CA_CERT_PATH');
  });

  it('nothing listening: says so and names TEMPORAL_ADDRESS', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const message = await explainTemporalConnectFailure({ address: `127.0.0.1:${port}` });
    expect(message).toContain(`Nothing accepts connections at 127.0.0.1:${port} (TEMPORAL_ADDRESS)`);
  });

  it('connectTemporal throws the explanation as an UnavailableError, with the original error after it', async () => {
    const failing = () => Promise.reject(gRpcFailure);
    const err = await connectTemporal({ address, tls: caOnly() }, failing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(errorOf(err).message).toContain('requires a client certificate');
    expect(errorOf(err).message).toContain('Failed to connect before the deadline');
  });
});

describe('a call the frontend refuses (permission denied)', () => {
  const withCert = (name: string) => ({
    address,
    tls: { clientCertPair: { crt: read(`${name}.pem`), key: read(`${name}-key.pem`) } },
  });
  // As @temporalio/client reports it (a ServiceError around the gRPC status) and as the worker's core does (text).
  const clientDenial = new Error('Failed to start Workflow', {
    cause: Object.assign(new Error('7 PERMISSION_DENIED: Request unauthorized.'), { code: 7 }),
  });
  const workerDenial = new Error(
    'Worker validation failed: status: PermissionDenied, message: "Request unauthorized."',
  );

  it.each([
    ['a client', clientDenial],
    ['a worker', workerDenial],
  ])('%s refused: names the certificate, what it needs and the variables to set', async (_, denial) => {
    const kind = denial === clientDenial ? 'client' : 'worker';
    const err = await withTemporalPermission(withCert('relay'), kind, 'default', () => Promise.reject(denial)).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    const message = errorOf(err).message;
    expect(message).toContain(
      `The Temporal frontend at ${address} refused this ${kind}'s call (permission denied): it presented the ` +
        `certificate CN=relay (TEMPORAL_TLS_CLIENT_CERT_PATH), and a ${kind} needs `,
    );
    expect(message).toContain(`Set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH`);
    expect(message).toContain(kind === 'worker' ? 'worker.pem' : 'client.pem');
    expect(message).toContain('Request unauthorized.');
  });

  it('other failures pass through unchanged', async () => {
    const other = Object.assign(new Error('5 NOT_FOUND: namespace not found'), { code: 5 });
    await expect(
      withTemporalPermission(withCert('worker'), 'worker', 'default', () => Promise.reject(other)),
    ).rejects.toBe(other);
  });
});
