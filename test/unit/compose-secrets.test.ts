/**
 * scripts/check-compose-secrets.py (run by scripts/check-compose.sh): docker-compose.yml gives each container
 * its own keys only and puts no password on a command line, and the check fails, naming the service and what
 * it holds, on a compose file that plants an extra key mount, a mount of the issuer's volume, an extra key
 * in a service's volume, or a password passed as an argument.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = path.resolve(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'check-compose-secrets.py');

interface Service {
  volumes?: string[];
  entrypoint?: string[];
  healthcheck?: { test?: string[] };
}
type Compose = { services: Record<string, Service> };

const composeFile = (): Compose =>
  parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-secrets-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs the check on `compose` written to a file; its exit status and what it printed. */
function check(compose: Compose): { status: number | null; output: string } {
  const file = path.join(dir, `compose-${Math.random().toString(36).slice(2)}.yml`);
  fs.writeFileSync(file, stringify(compose));
  const res = spawnSync('python3', [SCRIPT, file], { encoding: 'utf8' });
  if (res.error) throw new Error(`python3 with PyYAML is needed for this check: ${res.error.message}`);
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

test('docker-compose.yml passes: its own keys per container, no password on a command line', () => {
  const res = spawnSync('python3', [SCRIPT, path.join(ROOT, 'docker-compose.yml')], { encoding: 'utf8' });
  expect(res.stderr).toBe('');
  expect(res.status).toBe(0);
  expect(res.stdout).toContain('SUCCESS');
});

test('a worker that also mounts the broker’s key volume is refused, naming the key', () => {
  const compose = composeFile();
  compose.services.worker.volumes!.push('certs-kafka:/kafka-certs:ro');
  const { status, output } = check(compose);
  expect(status).not.toBe(0);
  expect(output).toContain('worker: sees kafka-keystore.pem, which are not its own');
});

test('a relay that mounts the issuer’s volume (every key and the CA’s) is refused', () => {
  const compose = composeFile();
  compose.services.relay.volumes = ['certs:/certs:ro'];
  expect(check(compose).output).toContain("relay: mounts certs (every key and the CA's) at /certs; only certs may");
});

test('the certs job copying another identity’s key into the worker’s volume is refused', () => {
  const compose = composeFile();
  const script = compose.services.certs.entrypoint!;
  script[2] = script[2].replace(
    'issue worker 1000:1000 worker.pem worker-key.pem',
    'issue worker 1000:1000 worker.pem worker-key.pem client-key.pem',
  );
  expect(script[2]).toContain('client-key.pem\n');
  expect(check(compose).output).toContain('worker: sees client-key.pem, which are not its own');
});

test.each([
  [
    'kafka',
    '/opt/kafka/bin/kafka-storage.sh format --add-scram "SCRAM-SHA-512=[name=relay,password=$$RELAY_SCRAM_PASSWORD]"',
    'RELAY_SCRAM_PASSWORD',
  ],
  ['temporal-db-role', 'psql -v password="$$TEMPORAL_DB_PASSWORD" -c "select 1"', 'TEMPORAL_DB_PASSWORD'],
])('%s passing a password as an argument is refused', (service, line, variable) => {
  const compose = composeFile();
  const entrypoint = compose.services[service].entrypoint!;
  entrypoint[2] = `${line}\n${entrypoint[2]}`;
  const { status, output } = check(compose);
  expect(status).not.toBe(0);
  expect(output).toContain(`${service}: passes ${variable} as an argument, visible to anyone in ps`);
});

test('a password compose interpolates into a health check is refused', () => {
  const compose = composeFile();
  compose.services.postgres.healthcheck!.test = [
    'CMD',
    'psql',
    'postgres://postgres:${POSTGRES_PASSWORD}@127.0.0.1/profile',
  ];
  expect(check(compose).output).toContain('postgres: its command line holds a password compose interpolates');
});
