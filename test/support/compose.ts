/**
 * docker-compose.yml as the production tests read it: the scripts and settings of its services, so a test
 * can run what compose would run without a Docker engine.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const COMPOSE_FILE = path.resolve(__dirname, '../../docker-compose.yml');

export interface ComposeService {
  entrypoint?: string[];
  volumes?: string[];
  environment?: Record<string, string | number>;
  healthcheck?: { test?: string[] | string };
}

/** One service of docker-compose.yml, with its YAML merge keys resolved. */
export function composeService(name: string): ComposeService {
  const compose = parse(fs.readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const service = compose.services[name];
  if (!service) throw new Error(`docker-compose.yml has no service ${name}`);
  return service;
}

/** The shell script a one-shot service runs (`entrypoint: [sh|bash, -c, <script>]`), with compose's `$$` as `$`. */
export function composeScript(name: string): string {
  const entrypoint = composeService(name).entrypoint;
  if (!entrypoint || entrypoint[1] !== '-c') throw new Error(`${name}: expected entrypoint [sh|bash, -c, script]`);
  return entrypoint[2].replaceAll('$$', '$');
}

/** A service's environment, without the variables compose interpolates (those the test gives itself). */
export function composeEnv(name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(composeService(name).environment ?? {})
      .filter(([, value]) => !String(value).includes('${'))
      .map(([variable, value]) => [variable, String(value)]),
  );
}

/**
 * A service's environment as compose would give it, for src/config to load: `${X:-d}` → d, `${X:?…}` → a
 * placeholder, and `/certs/` → `certsDir` (a folder with files of the same names).
 */
export function composedEnv(name: string, certsDir: string): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(composeService(name).environment ?? {}).map(([variable, value]) => [
      variable,
      String(value)
        .replace(/\$\{(\w+):\?[^}]*\}/g, (_, v: string) => `placeholder-${v.toLowerCase()}`)
        .replace(/\$\{\w+:-([^}]*)\}/g, '$1')
        .replaceAll('/certs/', `${certsDir}/`),
    ]),
  );
}

/** A service's health check as one shell command (`CMD` arguments quoted, `CMD-SHELL` as written). */
export function composeHealthCommand(name: string): string {
  const test = composeService(name).healthcheck?.test;
  if (Array.isArray(test) && test[0] === 'CMD-SHELL') return test[1];
  if (Array.isArray(test) && test[0] === 'CMD')
    return test
      .slice(1)
      .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
      .join(' ');
  throw new Error(`${name}: expected a CMD or CMD-SHELL health check`);
}
