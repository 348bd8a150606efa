/**
 * Per-stack secrets of the production profile: the certificates of `ops/tls/make-certs.sh` and random
 * passwords, under the stack's own folder (0700), never in the repository. Kept when the folder is
 * reused, so a restarted service still trusts what the stack issued.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { productionFile } from './production-files';

const MAKE_CERTS = productionFile('makeCerts');

/** File paths of one certificate and its key (PEM). */
interface CertPair {
  cert: string;
  key: string;
}

/** The names `make-certs.sh` issues, servers first. */
export type CertName =
  | 'postgres'
  | 'temporal-postgres'
  | 'temporal'
  | 'kafka'
  | 'ui'
  | 'worker'
  | 'relay'
  | 'client'
  | 'cli'
  | 'ui-client'
  | 'support';

/** Passwords of the profile's principals: PostgreSQL roles and Kafka SCRAM users. */
export interface StackPasswords {
  postgresAdmin: string;
  /** The superuser of Temporal's own PostgreSQL cluster. */
  temporalPostgresAdmin: string;
  worker: string;
  relay: string;
  /** The support role's (`explain`); added to a passwords file written before it existed. */
  support: string;
  temporal: string;
  kafkaBroker: string;
  kafkaRelay: string;
  kafkaTest: string;
}

export interface StackSecrets {
  /** The stack's folder (0700). */
  dir: string;
  /** The stack CA every server and client trusts. */
  caPath: string;
  cert(name: CertName): CertPair;
  passwords: StackPasswords;
}

const randomPassword = () => crypto.randomBytes(18).toString('base64url');

/** Every password a stack folder holds. */
export const STACK_PASSWORD_NAMES: readonly (keyof StackPasswords)[] = [
  'postgresAdmin',
  'temporalPostgresAdmin',
  'worker',
  'relay',
  'support',
  'temporal',
  'kafkaBroker',
  'kafkaRelay',
  'kafkaTest',
];

/** Creates (or reuses) the certificates and passwords under `dir`. */
export function prepareStackSecrets(dir: string): StackSecrets {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const certDir = path.join(dir, 'tls');
  execFileSync('bash', [MAKE_CERTS, certDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  const passwordFile = path.join(dir, 'passwords.json');
  const kept = fs.existsSync(passwordFile)
    ? (JSON.parse(fs.readFileSync(passwordFile, 'utf8')) as Partial<StackPasswords>)
    : {};
  const names = STACK_PASSWORD_NAMES;
  // A folder of an older stack keeps its passwords and gets the ones it lacks.
  const passwords = {} as StackPasswords;
  for (const name of names) passwords[name] = kept[name] ?? randomPassword();
  if (names.some((n) => kept[n] === undefined)) {
    fs.writeFileSync(passwordFile, JSON.stringify(passwords, null, 2), { mode: 0o600 });
  }
  return {
    dir,
    caPath: path.join(certDir, 'ca.pem'),
    cert: (name) => ({ cert: path.join(certDir, `${name}.pem`), key: path.join(certDir, `${name}-key.pem`) }),
    passwords,
  };
}
