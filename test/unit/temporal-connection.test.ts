/**
 * Temporal connection settings read the way the `temporal` CLI reads them: temporal.toml profiles, the
 * standard TEMPORAL_* names, and this job's older TLS names as aliases.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { temporalConnectionOptions } from '../../src/temporal/connection';

let dir: string;
let files: { cert: string; key: string; ca: string };

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-connection-'));
  files = { cert: path.join(dir, 'client.pem'), key: path.join(dir, 'client.key'), ca: path.join(dir, 'ca.pem') };
  for (const [name, file] of Object.entries(files)) fs.writeFileSync(file, `${name} bytes`);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A temporal.toml with `text`, returned as its path. */
function toml(text: string): string {
  const file = path.join(dir, `temporal-${Math.random().toString(36).slice(2)}.toml`);
  fs.writeFileSync(file, text);
  return file;
}

const options = (env: NodeJS.ProcessEnv) => temporalConnectionOptions(loadConfig(env));

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('standard names and the aliases', () => {
  it('reads mutual TLS from the standard names', () => {
    const tls = options({
      TEMPORAL_TLS_CLIENT_CERT_PATH: files.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: files.key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    }).tls;
    expect(tls).toEqual({
      serverNameOverride: 'temporal.internal',
      serverRootCACertificate: Buffer.from('ca bytes'),
      clientCertPair: { crt: Buffer.from('cert bytes'), key: Buffer.from('key bytes') },
    });
  });

  it('reads the same from the aliases TEMPORAL_TLS_CERT_PATH, TEMPORAL_TLS_KEY_PATH and TEMPORAL_TLS_CA_PATH', () => {
    const standard = options({
      TEMPORAL_TLS_CLIENT_CERT_PATH: files.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: files.key,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca,
    });
    const aliases = options({
      TEMPORAL_TLS_CERT_PATH: files.cert,
      TEMPORAL_TLS_KEY_PATH: files.key,
      TEMPORAL_TLS_CA_PATH: files.ca,
    });
    expect(aliases).toEqual(standard);
    expect(aliases.tls).toEqual(expect.objectContaining({ clientCertPair: expect.anything() }));
  });

  it('accepts an alias and its standard name together when they agree, and refuses them when they differ', () => {
    expect(() =>
      loadConfig({ TEMPORAL_TLS_CA_PATH: files.ca, TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca }),
    ).not.toThrow();
    expect(problems({ TEMPORAL_TLS_CA_PATH: files.ca, TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.cert })).toEqual([
      'TEMPORAL_TLS_CA_PATH and TEMPORAL_TLS_SERVER_CA_CERT_PATH: two names of one setting with different values; keep one',
    ]);
  });

  it.each([
    ['a certificate without its key (standard name)', { TEMPORAL_TLS_CLIENT_CERT_PATH: 'c' }],
    ['a key without its certificate (alias)', { TEMPORAL_TLS_KEY_PATH: 'k' }],
  ])('refuses %s', (_label, env) => {
    expect(problems(env)).toEqual([expect.stringContaining('expected both (mutual TLS) or neither')]);
  });

  it('turns TLS on for an API key, and TEMPORAL_TLS=false turns it off again', () => {
    expect(options({ TEMPORAL_API_KEY: 'secret' })).toEqual({ address: '127.0.0.1:7233', apiKey: 'secret', tls: true });
    expect(options({ TEMPORAL_API_KEY: 'secret', TEMPORAL_TLS: 'false' }).tls).toBe(false);
    expect(options({ TEMPORAL_TLS: 'true' }).tls).toEqual(expect.objectContaining({ clientCertPair: undefined }));
  });

  it('passes TEMPORAL_GRPC_META_* as gRPC metadata', () => {
    expect(options({ TEMPORAL_GRPC_META_X_TENANT: 'profile' }).metadata).toEqual({ 'x-tenant': 'profile' });
  });

  it('says which setting names a certificate file it cannot read, at connection time', () => {
    const config = loadConfig({
      TEMPORAL_TLS_CERT_PATH: path.join(dir, 'missing.pem'),
      TEMPORAL_TLS_KEY_PATH: files.key,
    });
    expect(() => temporalConnectionOptions(config)).toThrow(/TEMPORAL_TLS_\*_PATH or the profile's tls.*missing\.pem/);
  });
});

describe('temporal.toml profiles', () => {
  const file = () =>
    toml(`
[profile.default]
address = "temporal.internal:7233"
namespace = "profile-prod"
api_key = "from-file"

[profile.staging]
address = "temporal-staging.internal:7233"
namespace = "profile-staging"
`);

  it('takes address, namespace and API key from the default profile of TEMPORAL_CONFIG_FILE', () => {
    const config = loadConfig({ TEMPORAL_CONFIG_FILE: file() });
    expect(config.temporal).toEqual(
      expect.objectContaining({ address: 'temporal.internal:7233', namespace: 'profile-prod' }),
    );
    expect(temporalConnectionOptions(config)).toEqual({
      address: 'temporal.internal:7233',
      apiKey: 'from-file',
      tls: true,
    });
  });

  it('selects a profile with TEMPORAL_PROFILE, and a variable overrides the file', () => {
    const config = loadConfig({
      TEMPORAL_CONFIG_FILE: file(),
      TEMPORAL_PROFILE: 'staging',
      TEMPORAL_NAMESPACE: 'override',
    });
    expect(config.temporal).toEqual(
      expect.objectContaining({ address: 'temporal-staging.internal:7233', namespace: 'override' }),
    );
  });

  it('finds the default file where the temporal CLI keeps it', () => {
    const home = fs.mkdtempSync(path.join(dir, 'home-'));
    fs.mkdirSync(path.join(home, '.config', 'temporalio'), { recursive: true });
    fs.writeFileSync(path.join(home, '.config', 'temporalio', 'temporal.toml'), fs.readFileSync(file()));
    expect(loadConfig({ HOME: home }).temporal.address).toBe('temporal.internal:7233');
    expect(loadConfig({ HOME: path.join(dir, 'nobody') }).temporal.address).toBe('127.0.0.1:7233');
  });

  it.each([
    [
      'a profile that is not in the file',
      { TEMPORAL_PROFILE: 'stagign' },
      /TEMPORAL_PROFILE="stagign": no such profile/,
    ],
    [
      'a file that does not exist',
      { TEMPORAL_CONFIG_FILE: '/etc/temporal/tempral.toml' },
      /TEMPORAL_CONFIG_FILE=.*: no such file/,
    ],
  ])('refuses %s, naming it', (_label, env, message) => {
    const found = problems({ TEMPORAL_CONFIG_FILE: file(), ...env });
    expect(found).toEqual([expect.stringMatching(message)]);
  });

  it.each([
    ['broken TOML', '[profile.default\naddress = "x:1"'],
    ['an unknown key (a typo of a setting)', '[profile.default]\nadress = "temporal.internal:7233"'],
  ])('refuses a file with %s, naming the file', (_label, text) => {
    const path_ = toml(text);
    expect(problems({ TEMPORAL_CONFIG_FILE: path_ })).toEqual([
      expect.stringContaining(`TEMPORAL_CONFIG_FILE=${JSON.stringify(path_)}`),
    ]);
  });

  it('checks the address in the file like the variable, unless the variable overrides it', () => {
    const bad = toml('[profile.default]\naddress = "https://temporal.internal"');
    expect(problems({ TEMPORAL_CONFIG_FILE: bad })).toEqual([
      expect.stringMatching(/^address "https:\/\/temporal\.internal" in profile "default" of .*: expected host:port/),
    ]);
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: bad, TEMPORAL_ADDRESS: 'ok.internal:7233' }).temporal.address).toBe(
      'ok.internal:7233',
    );
  });
});

test('checks the address in the default file too', () => {
  const home = fs.mkdtempSync(path.join(dir, 'home-'));
  fs.mkdirSync(path.join(home, '.config', 'temporalio'), { recursive: true });
  fs.writeFileSync(path.join(home, '.config', 'temporalio', 'temporal.toml'), '[profile.default]\naddress = "no port"');
  expect(problems({ HOME: home })).toEqual([
    `address "no port" in profile "default" of the temporal CLI's temporal.toml: expected host:port, e.g. 127.0.0.1:7233`,
  ]);
});
