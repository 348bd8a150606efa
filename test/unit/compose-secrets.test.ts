/**
 * scripts/check-compose-secrets.ts (run by scripts/check-compose.sh): docker-compose.yml and
 * docker-compose.support.yml give each container its own keys only and put no password on a command line, and
 * the check fails, naming the service and what it holds, on a compose file that plants an extra key mount, a
 * mount of the issuer's volume, an extra key in a service's volume, or a password passed as an argument.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { composeSecretProblems } from '../../scripts/check-compose-secrets';

const ROOT = path.resolve(__dirname, '..', '..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const SUPPORT_FILE = path.join(ROOT, 'docker-compose.support.yml');
const SCRIPT = path.join(ROOT, 'scripts', 'check-compose-secrets.ts');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');

interface Service {
  volumes?: string[];
  entrypoint?: string[];
  healthcheck?: { test?: string[] };
}
type Compose = { services: Record<string, Service> };

const read = (file: string): Compose => parse(fs.readFileSync(file, 'utf8'), { merge: true }) as Compose;

/** Both files' services, as the check sees them together. */
const composeFile = (): Compose => ({
  services: { ...read(COMPOSE_FILE).services, ...read(SUPPORT_FILE).services },
});

/** Runs the check as scripts/check-compose.sh does, on `files`: its exit status and what it printed. */
function runCheck(...files: string[]): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync(TSX, [SCRIPT, ...files], { encoding: 'utf8' });
  if (res.error) throw res.error;
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** The check's problems with `compose`, one line each. */
const check = (compose: Compose): { output: string } => ({ output: composeSecretProblems(compose).join('\n') });

test('docker-compose.yml with docker-compose.support.yml passes: its own keys per container, no password on a command line', () => {
  const res = runCheck(COMPOSE_FILE, SUPPORT_FILE);
  expect(res.stderr).toBe('');
  expect(res.status).toBe(0);
  expect(res.stdout).toContain('SUCCESS');
});

test('a compose file with a problem fails the command, naming it on stderr', () => {
  const compose = read(COMPOSE_FILE);
  compose.services.worker.volumes!.push('certs-kafka:/kafka-certs:ro');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-secrets-'));
  try {
    const file = path.join(dir, 'docker-compose.yml');
    fs.writeFileSync(file, stringify(compose));
    const res = runCheck(file, SUPPORT_FILE);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('worker: sees kafka-keystore.pem, which are not its own');
    expect(res.stderr).toContain(`1 problems with secrets in ${file}, ${SUPPORT_FILE}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the support service is judged with the volume docker-compose.yml fills: either file alone fails', () => {
  expect(runCheck(COMPOSE_FILE).stderr).toContain('KEY_FILES names support, which is no service');
  expect(runCheck(SUPPORT_FILE).stderr).toContain("no service 'certs' issues the certificates");
});

test('a service defined in both files is refused', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compose-secrets-'));
  try {
    const file = path.join(dir, 'docker-compose.support.yml');
    const support = read(SUPPORT_FILE);
    support.services.worker = read(COMPOSE_FILE).services.worker;
    fs.writeFileSync(file, stringify(support));
    expect(runCheck(COMPOSE_FILE, file).stderr).toContain(`worker: defined in ${COMPOSE_FILE} and in ${file}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a worker that also mounts the broker’s key volume is refused, naming the key', () => {
  const compose = composeFile();
  compose.services.worker.volumes!.push('certs-kafka:/kafka-certs:ro');
  expect(check(compose).output).toContain('worker: sees kafka-keystore.pem, which are not its own');
});

test('a relay that mounts the issuer’s volume (every key and the CA’s) is refused', () => {
  const compose = composeFile();
  compose.services.relay.volumes = ['certs:/certs:ro'];
  expect(check(compose).output).toContain("relay: mounts certs (every key and the CA's) at /certs; only certs may");
});

test('a support service that also mounts the client’s volume (an admin certificate) is refused', () => {
  const compose = composeFile();
  compose.services.support.volumes!.push('certs-client:/client-certs:ro');
  expect(check(compose).output).toContain('support: sees client-key.pem, client.pem, which are not its own');
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
  ['temporal-schema', 'temporal-sql-tool --password "$$SQL_PASSWORD" create-database', 'SQL_PASSWORD'],
])('%s passing a password as an argument is refused', (service, line, variable) => {
  const compose = composeFile();
  const entrypoint = compose.services[service].entrypoint!;
  entrypoint[2] = `${line}\n${entrypoint[2]}`;
  expect(check(compose).output).toContain(`${service}: passes ${variable} as an argument, visible to anyone in ps`);
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
