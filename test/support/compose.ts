/**
 * docker-compose.yml and docker-compose.support.yml as the tests read them: the scripts and settings of their
 * services, so a test can run what compose would run without a Docker engine; and the files as compose itself
 * reads them, its interpolation included, for what a given environment makes of them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '../..');

/** The compose files of the project: the deployment, and the support desk's file of its own. */
export type ComposeFile = 'docker-compose.yml' | 'docker-compose.support.yml';

export interface ComposeService {
  image?: string;
  entrypoint?: string[];
  command?: string[];
  volumes?: string[];
  networks?: string[] | Record<string, unknown>;
  environment?: Record<string, string | number>;
  healthcheck?: { test?: string[] | string; disable?: boolean };
  depends_on?: Record<string, unknown> | string[];
  profiles?: string[];
}

export interface ComposeModel {
  name?: string;
  services: Record<string, ComposeService>;
  networks?: Record<string, { external?: boolean; name?: string } | null>;
  volumes?: Record<string, { external?: boolean; name?: string } | null>;
  [extension: `x-${string}`]: unknown;
}

/** A compose file as written: its text, for what it references before any interpolation. */
export const composeText = (file: ComposeFile = 'docker-compose.yml'): string =>
  fs.readFileSync(path.join(ROOT, file), 'utf8');

/** A compose file as written, its YAML merge keys resolved (compose resolves them before it interpolates). */
export const composeModel = (file: ComposeFile = 'docker-compose.yml'): ComposeModel =>
  parse(composeText(file), { merge: true }) as ComposeModel;

/** One service of a compose file, with its YAML merge keys resolved. */
export function composeService(name: string, file: ComposeFile = 'docker-compose.yml'): ComposeService {
  const service = composeModel(file).services[name];
  if (!service) throw new Error(`${file} has no service ${name}`);
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

/*
 * Compose's interpolation, ported from compose-go v2.9.0 (template/template.go, interpolation/interpolation.go),
 * the loader of Docker Compose v2 that scripts/check-compose.sh builds and runs on the same files: the tests
 * then see what `docker compose` would make of a file in a given environment, with no Docker here. Every
 * string of the file is interpolated, extension fields (`x-…`) and services outside the active profiles
 * included: one missing required variable anywhere fails every command of the file.
 */

/** Compose's pattern (template.DefaultPattern): `$$`, `$NAME`, `${NAME…}`, or a `${` that is none of them. */
const TEMPLATE =
  /\$(?:(?<escaped>\$)|(?<named>[_a-z][_a-z0-9]*)|\{(?:(?<braced>[_a-z][_a-z0-9]*(?::?[-+?].*)?)\}|(?<invalid>)))/gi;
const OPERATORS = [':?', '?', ':-', '-', ':+', '+'] as const;
type Operator = (typeof OPERATORS)[number];

/** Compose's MissingRequiredError: `${NAME:?reason}` with NAME unset or empty, `${NAME?reason}` with NAME unset. */
class MissingRequiredError extends Error {
  constructor(variable: string, reason: string) {
    super(`required variable ${variable} is missing a value${reason ? `: ${reason}` : ''}`);
  }
}

class InvalidTemplateError extends Error {}

/** What a variable holds: undefined when unset, which compose tells apart from empty. */
type Lookup = (variable: string) => string | undefined;

/** The index of the `}` closing the first `${`, as compose counts braces (the character after a `{` is skipped). */
function firstBraceClosingIndex(s: string): number {
  let open = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '}') {
      open--;
      if (open === 0) return i;
    }
    if (s[i] === '{') {
      open++;
      i++;
    }
  }
  return -1;
}

/** The operator compose applies: the first one the match holds (getSubstitutionFunctionForTemplate). */
function operatorOf(match: string): Operator | undefined {
  const found = OPERATORS.map((op) => [op, match.indexOf(op)] as const).filter(([, at]) => at >= 0);
  found.sort((a, b) => a[1] - b[1]);
  return found[0]?.[0];
}

/** `${NAME<op>arg}`: its value, or undefined when `substitution` does not hold `op` (compose's "not applied"). */
function applyOperator(
  op: Operator | undefined,
  substitution: string,
  lookup: Lookup,
  warnings: string[],
): string | undefined {
  if (op === undefined || !substitution.includes(op)) return undefined;
  const at = substitution.indexOf(op);
  const variable = substitution.slice(0, at);
  const arg = substitute(substitution.slice(at + op.length), lookup, warnings);
  const value = lookup(variable);
  const set = value !== undefined;
  const nonEmpty = set && value !== '';
  switch (op) {
    case ':?':
    case '?':
      if (!(op === ':?' ? nonEmpty : set)) throw new MissingRequiredError(variable, arg);
      return value;
    case ':-':
      return nonEmpty ? value : arg;
    case '-':
      return set ? value : arg;
    case ':+':
      return nonEmpty ? arg : (value ?? '');
    case '+':
      return set ? arg : '';
  }
}

/** One match of TEMPLATE replaced (DefaultReplacementAppliedFunc): what follows its closing brace is interpolated too. */
function replacement(match: string, lookup: Lookup, warnings: string[]): string {
  const op = operatorOf(match);
  const close = firstBraceClosingIndex(match);
  const rest = close > -1 ? match.slice(close + 1) : '';
  const head = close > -1 ? match.slice(0, close + 1) : match;
  const groups = new RegExp(TEMPLATE.source, 'i').exec(head)?.groups ?? {};
  if (groups.escaped) return groups.escaped;
  const braced = !groups.named;
  const substitution = groups.named || groups.braced;
  if (!substitution) throw new InvalidTemplateError();
  if (braced) {
    const value = applyOperator(op, substitution, lookup, warnings);
    if (value !== undefined) return value + substitute(rest, lookup, warnings);
  }
  const value = lookup(substitution);
  if (value === undefined) warnings.push(`The "${substitution}" variable is not set. Defaulting to a blank string.`);
  return value ?? '';
}

/** One string interpolated as compose does (template.Substitute); the first error, if any, is thrown. */
function substitute(template: string, lookup: Lookup, warnings: string[]): string {
  let error: unknown;
  const result = template.replace(TEMPLATE, (match) => {
    try {
      return replacement(match, lookup, warnings);
    } catch (err) {
      error ??= err;
      return '';
    }
  });
  if (error !== undefined) throw error;
  return result;
}

/** One string as compose interpolates it with exactly the variables of `env`; throws compose's error. */
export function interpolateString(
  template: string,
  env: Readonly<Record<string, string | undefined>>,
): { value: string; warnings: string[] } {
  const warnings: string[] = [];
  return { value: substitute(template, lookupIn(env), warnings), warnings };
}

const lookupIn =
  (env: Readonly<Record<string, string | undefined>>): Lookup =>
  (variable) =>
    Object.hasOwn(env, variable) ? env[variable] : undefined;

/** Every string of a parsed file interpolated, keys left as written; an error names the path, as compose's does. */
function interpolateTree(value: unknown, where: string, lookup: Lookup, warnings: string[]): unknown {
  const next = (part: string) => (where ? `${where}.${part.replaceAll('.', '👻')}` : part);
  if (typeof value === 'string') {
    try {
      return substitute(value, lookup, warnings);
    } catch (err) {
      if (err instanceof InvalidTemplateError) {
        throw new Error(
          `invalid interpolation format for ${where}.\nYou may need to escape any $ with another $.\n${value}`,
        );
      }
      throw new Error(`error while interpolating ${where}: ${(err as Error).message}`);
    }
  }
  if (Array.isArray(value)) return value.map((item) => interpolateTree(item, next('[]'), lookup, warnings));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateTree(item, next(key), lookup, warnings)]),
    );
  }
  return value;
}

/**
 * A compose file as `docker compose` reads it with exactly the variables of `env` (its shell and .env together):
 * the model it would run, and the "variable is not set" warnings it would print; throws compose's error when
 * a required variable is missing, e.g. `error while interpolating services.support.environment.SUPPORT_DATABASE_URL:
 * required variable SUPPORT_DB_PASSWORD is missing a value: …`.
 */
export function readCompose(
  file: ComposeFile,
  env: Readonly<Record<string, string | undefined>>,
): { model: ComposeModel; warnings: string[] } {
  const warnings: string[] = [];
  const model = interpolateTree(composeModel(file), '', lookupIn(env), warnings) as ComposeModel;
  return { model, warnings };
}

/** The variables a file requires (`${NAME:?…}`, `${NAME?…}`): compose refuses to read it without them. */
export const requiredVariables = (file: ComposeFile): string[] => [
  ...new Set([...composeText(file).matchAll(/(?<!\$)\$\{(\w+):?\?/g)].map((m) => m[1])),
];

/**
 * A service's environment as compose would give it, for src/config to load: read with every variable the file
 * requires set to `placeholder-<name in lower case>` and no other (so `${X:-d}` is d), and `/certs/` as
 * `certsDir` (a folder with files of the same names).
 */
export function composedEnv(
  name: string,
  certsDir: string,
  file: ComposeFile = 'docker-compose.yml',
): NodeJS.ProcessEnv {
  const env = Object.fromEntries(requiredVariables(file).map((v) => [v, `placeholder-${v.toLowerCase()}`]));
  const service = readCompose(file, env).model.services[name];
  if (!service) throw new Error(`${file} has no service ${name}`);
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([variable, value]) => [
      variable,
      String(value).replaceAll('/certs/', `${certsDir}/`),
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
