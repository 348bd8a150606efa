/**
 * Who may hold which secret in docker-compose.yml and docker-compose.support.yml; run by
 * scripts/check-compose.sh, or alone:
 *
 *     npx tsx scripts/check-compose-secrets.ts [docker-compose.yml docker-compose.support.yml]
 *
 * The files are checked as one set of containers: the support file's `support` mounts a volume that
 * docker-compose.yml's `certs` fills, so its keys are known only with both. A service named in two files is
 * refused: each container has one definition to judge.
 *
 * 1. Each container mounts its own keys only. The `certs` job issues every certificate into its own volume
 *    `certs` (with the CA's key) and copies, per volume `certs-<name>`, ca.pem and the files its
 *    `issue <name> <owner> <file>...` line names. A container sees the files of the volumes it mounts; they
 *    must be exactly its row of KEY_FILES below. Only `certs` may mount `certs`.
 * 2. No password on a command line. A service's command, entrypoint or health check must not hold a password
 *    compose interpolates, nor expand a variable holding one (its name says PASSWORD, or its value
 *    interpolates one) except in `printf` (a shell builtin: no process, nothing in `ps`) writing it to a
 *    file, or in `unset`.
 *
 * Reads the file as written (YAML merge keys resolved), so it needs no Docker and no docker-compose; the
 * `yaml` package reads it, so the unit tests need nothing beside npm's packages.
 */
import fs from 'node:fs';
import { parse } from 'yaml';

/**
 * The files of ops/tls/make-certs.sh each container may see: its own certificate and key, and the CA
 * certificate to check its peers by. Containers not listed may see none; the issuer sees everything.
 */
const KEY_FILES: Record<string, string[]> = {
  postgres: ['ca.pem', 'postgres.pem', 'postgres-key.pem'],
  'temporal-postgres': ['ca.pem', 'temporal-postgres.pem', 'temporal-postgres-key.pem'],
  'temporal-db-role': ['ca.pem'],
  'temporal-schema': ['ca.pem'],
  temporal: ['ca.pem', 'temporal.pem', 'temporal-key.pem'],
  'temporal-namespace': ['ca.pem', 'cli.pem', 'cli-key.pem'],
  'temporal-ui': ['ca.pem', 'ui-client.pem', 'ui-client-key.pem'],
  kafka: ['ca.pem', 'kafka-keystore.pem'],
  'kafka-acls': ['ca.pem'],
  migrate: ['ca.pem'],
  worker: ['ca.pem', 'worker.pem', 'worker-key.pem'],
  relay: ['ca.pem'],
  'schedule-apply': ['ca.pem', 'client.pem', 'client-key.pem'],
  'deployment-current': ['ca.pem', 'client.pem', 'client-key.pem'],
  client: ['ca.pem', 'client.pem', 'client-key.pem'],
  // A support desk's `explain` (docker-compose.support.yml): Temporal's reader (ops/temporal/identities.yaml),
  // never `client`'s admin key.
  support: ['ca.pem', 'support.pem', 'support-key.pem'],
};
const ISSUER = 'certs';
const ISSUER_VOLUME = 'certs';

type Mount = string | { source?: string; target?: string; type?: string };
interface Service {
  volumes?: Mount[];
  entrypoint?: string | unknown[];
  command?: string | unknown[];
  healthcheck?: { test?: string | unknown[] };
  environment?: Record<string, unknown> | string[];
}

/** Source, target and kind of each mount, short or long syntax. */
function volumesOf(svc: Service): { source: string; target: string; kind: string }[] {
  return (svc.volumes ?? []).map((vol) => {
    if (typeof vol === 'object')
      return { source: vol.source ?? '', target: vol.target ?? '', kind: vol.type ?? 'volume' };
    const [source, target = ''] = vol.split(':');
    return { source, target, kind: source.startsWith('/') || source.startsWith('.') ? 'bind' : 'volume' };
  });
}

const asLines = (value: string | unknown[] | undefined): string[] =>
  value === undefined || value === null ? [] : typeof value === 'string' ? [value] : value.map(String);

/** The service's command, entrypoint and health check as shell text, one logical line per line. */
function textOf(svc: Service): string {
  return [...asLines(svc.entrypoint), ...asLines(svc.command), ...asLines(svc.healthcheck?.test)]
    .join('\n')
    .replaceAll('\\\n', ' ');
}

function envOf(svc: Service): Record<string, string> {
  const env = svc.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((item) =>
        item.includes('=') ? [item.slice(0, item.indexOf('=')), item.slice(item.indexOf('=') + 1)] : [item, ''],
      ),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
}

/** The issuer's volumes (by mount target under /issued) and the files each one receives. */
function issuedVolumes(issuer: Service, problems: string[]): Map<string, Set<string>> {
  const issuedAt = new Map(
    volumesOf(issuer)
      .filter((m) => m.kind === 'volume')
      .map((m) => [m.target, m.source]),
  );
  const contents = new Map<string, Set<string>>();
  for (const m of textOf(issuer).matchAll(/^\s*issue (\S+) \S+((?: \S+)*)\s*$/gm)) {
    const volume = issuedAt.get(`/issued/${m[1]}`);
    if (volume === undefined) {
      problems.push(`${ISSUER}: issues into /issued/${m[1]}, where no volume is mounted`);
      continue;
    }
    contents.set(volume, new Set(['ca.pem', ...m[2].split(' ').filter(Boolean)]));
  }
  for (const [target, volume] of issuedAt) {
    if (target.startsWith('/issued/') && !contents.has(volume)) {
      problems.push(`${ISSUER}: mounts ${volume} at ${target} but issues nothing into it`);
    }
  }
  return contents;
}

function keyProblems(services: Record<string, Service>, problems: string[]): void {
  const issuer = services[ISSUER];
  if (!issuer) {
    problems.push(`no service '${ISSUER}' issues the certificates`);
    return;
  }
  const contents = issuedVolumes(issuer, problems);
  for (const [name, svc] of Object.entries(services)) {
    if (name === ISSUER) continue;
    const sees = new Set<string>();
    for (const { source, target, kind } of volumesOf(svc)) {
      if (kind !== 'volume') continue;
      if (source === ISSUER_VOLUME) {
        problems.push(`${name}: mounts ${ISSUER_VOLUME} (every key and the CA's) at ${target}; only ${ISSUER} may`);
      } else if (contents.has(source)) {
        for (const file of contents.get(source)!) sees.add(file);
      } else if (source.startsWith('certs')) {
        problems.push(`${name}: mounts ${source}, which ${ISSUER} does not fill`);
      }
    }
    const allowed = new Set(KEY_FILES[name] ?? []);
    const extra = [...sees].filter((f) => !allowed.has(f)).sort();
    const missing = [...allowed].filter((f) => !sees.has(f)).sort();
    if (extra.length > 0) {
      const allows = [...allowed].sort().join(', ') || 'none';
      problems.push(`${name}: sees ${extra.join(', ')}, which are not its own (KEY_FILES allows ${allows})`);
    }
    if (missing.length > 0) problems.push(`${name}: lacks ${missing.join(', ')}, its own (KEY_FILES)`);
  }
  for (const name of Object.keys(KEY_FILES)) {
    if (!(name in services)) problems.push(`KEY_FILES names ${name}, which is no service`);
  }
}

function passwordProblems(services: Record<string, Service>, problems: string[]): void {
  const interpolated = /\$\{[A-Z_]*PASSWORD/;
  for (const [name, svc] of Object.entries(services)) {
    const secretVars = new Set(
      Object.entries(envOf(svc))
        .filter(([variable, value]) => variable.includes('PASSWORD') || interpolated.test(value))
        .map(([variable]) => variable),
    );
    for (const line of textOf(svc).split('\n')) {
      if (interpolated.test(line)) {
        problems.push(`${name}: its command line holds a password compose interpolates: ${line.trim()}`);
        continue;
      }
      const used = new Set(
        [...line.matchAll(/\$\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)]
          .map((m) => m[1])
          .filter((v) => secretVars.has(v) || v.includes('PASSWORD')),
      );
      const first = line.split(/\s+/).find(Boolean);
      if (used.size > 0 && first !== 'printf' && first !== 'unset') {
        problems.push(
          `${name}: passes ${[...used].sort().join(', ')} as an argument, visible to anyone in ps: ${line.trim()}`,
        );
      }
    }
  }
}

/** Every problem with secrets in a compose file as parsed (merge keys resolved); empty when there is none. */
export function composeSecretProblems(compose: { services?: Record<string, Service> }): string[] {
  const services = compose.services ?? {};
  const problems: string[] = [];
  keyProblems(services, problems);
  passwordProblems(services, problems);
  return problems;
}

/** The services of several compose files as one compose file; a service defined twice is a problem. */
function servicesOf(files: string[], problems: string[]): { services: Record<string, Service> } {
  const services: Record<string, Service> = {};
  const definedIn: Record<string, string> = {};
  for (const file of files) {
    const compose = parse(fs.readFileSync(file, 'utf8'), { merge: true }) as { services?: Record<string, Service> };
    for (const [name, svc] of Object.entries(compose.services ?? {})) {
      if (name in definedIn) problems.push(`${name}: defined in ${definedIn[name]} and in ${file}`);
      definedIn[name] = file;
      services[name] = svc;
    }
  }
  return { services };
}

function main(): void {
  const files = process.argv.length > 2 ? process.argv.slice(2) : ['docker-compose.yml', 'docker-compose.support.yml'];
  const problems: string[] = [];
  const compose = servicesOf(files, problems);
  problems.push(...composeSecretProblems(compose));
  if (problems.length > 0) {
    for (const p of problems) console.error(`  ${p}`);
    console.error(`  ${problems.length} problems with secrets in ${files.join(', ')}`);
    process.exit(1);
  }
  console.log(
    `  SUCCESS: each container mounts its own keys only (${Object.keys(KEY_FILES).length + 1} in the table), ` +
      'no password on a command line',
  );
}

if (require.main === module) main();
