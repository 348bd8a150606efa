/**
 * Connecting to the Temporal frontend, for the worker and the client: the options of the profile that
 * `src/config/temporal-profile.ts` read, and a probe that explains a failed connection.
 */
import { X509Certificate } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import { toClientOptions, type ClientConfigProfile } from '@temporalio/envconfig';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import type { Config } from '../config';
import { ConfigError } from '../config/errors';
import { UnavailableError } from '../unavailable';
import { errorOf } from '../domain/failures';

/** Options accepted by both `NativeConnection.connect` and `Connection.connect`. */
export function temporalConnectionOptions(config: { temporal: { address: string; connection: ClientConfigProfile } }): {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
} {
  let options: ReturnType<typeof toClientOptions>['connectionOptions'];
  try {
    options = toClientOptions(config.temporal.connection).connectionOptions;
  } catch (err) {
    // A certificate or key file that cannot be read: say which setting names it.
    throw new Error(`Temporal TLS files (TEMPORAL_TLS_*_PATH or the profile's tls): ${errorOf(err).message}`);
  }
  return {
    address: config.temporal.address,
    tls: options.tls ?? undefined,
    apiKey: options.apiKey,
    metadata: config.temporal.connection.grpcMeta,
  };
}

/** What {@link temporalConnectionOptions} returns: the address and the TLS settings a probe repeats. */
export type TemporalConnectOptions = ReturnType<typeof temporalConnectionOptions>;

const PROBE_TIMEOUT_MS = 3_000;
/** Node's codes for a server certificate this process cannot verify. */
const UNTRUSTED_SERVER = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * How a probe went: whether the TLS handshake (or TCP connect) completed, whether the server then sent
 * anything (a gRPC server opens with its HTTP/2 settings at once), and the error that ended it.
 */
interface ProbeResult {
  secured: boolean;
  heard: boolean;
  error?: NodeJS.ErrnoException;
}

/**
 * One TLS handshake with `options` (or, with `options` undefined, a TCP connection), waiting briefly after
 * it: under TLS 1.3 a server that refuses the client's certificate says so after the client's handshake ends.
 */
function probe(host: string, port: number, options?: tls.ConnectionOptions): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = options
      ? tls.connect({ host, port, ALPNProtocols: ['h2'], ...options })
      : net.connect({ host, port });
    let secured = false;
    let heard = false;
    let settleTimer: NodeJS.Timeout | undefined;
    const done = (error?: NodeJS.ErrnoException) => {
      clearTimeout(timeout);
      clearTimeout(settleTimer);
      socket.destroy();
      resolve({ secured, heard, error });
    };
    const timeout = setTimeout(() => done(), PROBE_TIMEOUT_MS);
    socket.once('error', (error: NodeJS.ErrnoException) => done(error));
    socket.once(options ? 'secureConnect' : 'connect', () => {
      secured = true;
      settleTimer = setTimeout(() => done(), 500);
    });
    socket.on('data', () => (heard = true));
    socket.once('close', () => done());
  });
}

/** `host` and `port` of a `host:port` address (`[v6]:port` too). */
function splitAddress(address: string): { host: string; port: number } | undefined {
  const at = address.lastIndexOf(':');
  const port = Number(address.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port)) return undefined;
  return { host: address.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port };
}

const CLIENT_CERT_SETTINGS =
  'TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (aliases TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH)';

/**
 * Why a connection to the Temporal frontend failed, as a sentence that names the setting to change, found by
 * probing the frontend with the same address and TLS settings; undefined when the probe finds no reason.
 * gRPC reports these cases only as a deadline or a transport error.
 */
export async function explainTemporalConnectFailure(
  options: Pick<TemporalConnectOptions, 'address' | 'tls'>,
): Promise<string | undefined> {
  const { address } = options;
  const target = splitAddress(address);
  if (!target) return undefined;
  const tlsConfig = options.tls === true ? {} : options.tls || undefined;
  const plain = await probe(target.host, target.port);
  if (plain.error?.code === 'ECONNREFUSED') {
    return `Nothing accepts connections at ${address} (TEMPORAL_ADDRESS): is the Temporal server running, and is that its frontend's address?`;
  }
  if (!tlsConfig) {
    const asTls = await probe(target.host, target.port, {
      rejectUnauthorized: false,
      ...(net.isIP(target.host) ? {} : { servername: target.host }),
    });
    return asTls.secured || /alert/i.test(asTls.error?.code ?? '')
      ? `The Temporal frontend at ${address} requires TLS and this process connects in plaintext: set ` +
          `TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA of its certificate (and, for mutual TLS, ${CLIENT_CERT_SETTINGS})`
      : undefined;
  }
  const servername = tlsConfig.serverNameOverride ?? (net.isIP(target.host) ? undefined : target.host);
  const result = await probe(target.host, target.port, {
    servername,
    ...(tlsConfig.serverRootCACertificate ? { ca: Buffer.from(tlsConfig.serverRootCACertificate) } : {}),
    ...(tlsConfig.clientCertPair
      ? { cert: Buffer.from(tlsConfig.clientCertPair.crt), key: Buffer.from(tlsConfig.clientCertPair.key) }
      : {}),
  });
  const { code = '', message = '' } = result.error ?? {};
  if (UNTRUSTED_SERVER.has(code)) {
    return (
      `The certificate of the Temporal frontend at ${address} is not trusted (${code}): set TEMPORAL_TLS_SERVER_CA_CERT_PATH ` +
      'to the CA that issued it, and TEMPORAL_TLS_SERVER_NAME to a name it carries when the address is not one'
    );
  }
  // Refused with an alert, or (as OpenSSL servers do) by closing the connection right after the handshake.
  const closedUnheard = result.secured && !result.heard && !result.error;
  if (
    !tlsConfig.clientCertPair &&
    (/CERTIFICATE_REQUIRED|certificate required/i.test(`${code} ${message}`) || closedUnheard)
  ) {
    return (
      `The Temporal frontend at ${address} requires a client certificate (mutual TLS) and this process presented none: ` +
      `set ${CLIENT_CERT_SETTINGS} to a certificate and key issued by a CA the frontend trusts`
    );
  }
  if (
    tlsConfig.clientCertPair &&
    (/ALERT_(BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|DECRYPT_ERROR|ACCESS_DENIED)/i.test(code) || closedUnheard)
  ) {
    return (
      `The Temporal frontend at ${address} refused the client certificate of ${CLIENT_CERT_SETTINGS}` +
      `${code ? ` (${code})` : ''}: it must be issued by a CA the frontend trusts, for client authentication, and not expired`
    );
  }
  return undefined;
}

/**
 * Connects with `connect` (`Connection.connect` or `NativeConnection.connect`). When that fails and a probe of
 * the frontend finds why, throws an {@link UnavailableError} that says what to set, followed by gRPC's message.
 */
export async function connectTemporal<T>(
  options: TemporalConnectOptions,
  connect: (options: TemporalConnectOptions) => Promise<T>,
): Promise<T> {
  try {
    return await connect(options);
  } catch (err) {
    const why = await explainTemporalConnectFailure(options).catch(() => undefined);
    if (!why) throw err;
    throw new UnavailableError(`${why}.\n(${errorOf(err).message})`);
  }
}

/** gRPC's status code for a call the server's authorizer refused. */
const PERMISSION_DENIED = 7;

/** `err`, or the error it wraps, that is the frontend refusing the call (not the connection); else undefined. */
function permissionDenial(err: unknown): Error | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if ((e as { code?: unknown }).code === PERMISSION_DENIED) return e;
    // The worker's calls come back from its native core as text.
    if (/\bPermissionDenied\b|\bPERMISSION_DENIED\b/.test(e.message)) return e;
  }
  return undefined;
}

/** The subject of the client certificate in `options`, as `CN=worker`; undefined without one. */
function clientCertificateSubject(options: Pick<TemporalConnectOptions, 'tls'>): string | undefined {
  const pair = typeof options.tls === 'object' ? options.tls.clientCertPair : undefined;
  if (!pair) return undefined;
  try {
    return new X509Certificate(Buffer.from(pair.crt)).subject.replace(/\n/g, ', ');
  } catch {
    return undefined;
  }
}

/** What a process of each kind must be granted, in Temporal's roles, and its certificate on the production profile. */
const NEEDS = {
  worker: { role: 'the worker role (poll and complete tasks)', profileCert: 'worker.pem' },
  client: {
    role: 'writer (workflows, schedules), or admin to register search attributes (schedule apply)',
    profileCert: 'client.pem',
  },
} as const;

/**
 * Runs `fn`; when the frontend refuses one of its calls (permission denied: the server authorizes each
 * certificate for some calls only), throws a {@link ConfigError} that names the certificate this process
 * presented, what a `kind` process needs, and the variables that choose the certificate.
 */
export async function withTemporalPermission<T>(
  options: Pick<TemporalConnectOptions, 'address' | 'tls'>,
  kind: keyof typeof NEEDS,
  namespace: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const denial = permissionDenial(err);
    if (!denial) throw err;
    const subject = clientCertificateSubject(options);
    const presented = subject
      ? `it presented the certificate ${subject} (TEMPORAL_TLS_CLIENT_CERT_PATH)`
      : 'it presented no client certificate';
    const { role, profileCert } = NEEDS[kind];
    throw new ConfigError([
      `The Temporal frontend at ${options.address} refused this ${kind}'s call (permission denied): ${presented}, ` +
        `and a ${kind} needs ${role} in namespace ${namespace}. Set ${CLIENT_CERT_SETTINGS} to a certificate the ` +
        `server grants that (on the production profile: ${profileCert}; the grants are in ops/temporal/identities.yaml). ` +
        `(${denial.message.split('\n')[0]})`,
    ]);
  }
}

/**
 * Opens a client as `config` says, runs `fn`, and always closes the connection. `connectTimeoutMs` bounds
 * the wait for an unreachable frontend (the SDK's default is 10 s).
 */
export async function withTemporalClient<T>(
  config: Pick<Config, 'temporal'>,
  fn: (client: Client) => Promise<T>,
  options: { connectTimeoutMs?: number } = {},
): Promise<T> {
  const temporalOptions = temporalConnectionOptions(config);
  const connection = await connectTemporal(temporalOptions, (o) =>
    Connection.connect({ ...o, ...(options.connectTimeoutMs ? { connectTimeout: options.connectTimeoutMs } : {}) }),
  );
  try {
    const { namespace } = config.temporal;
    return await withTemporalPermission(temporalOptions, 'client', namespace, () =>
      fn(new Client({ connection, namespace })),
    );
  } finally {
    await connection.close();
  }
}
