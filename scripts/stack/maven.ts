/**
 * Java programs of the stack and the tests (the Kafka broker, Temporal's time-skipping test server) run
 * from jars that Maven resolves from Maven Central once, into the user's cache, from a pom under `ops/`
 * that only lists dependencies. This module holds what they share: finding Java, running Maven, and the
 * cache directory with its completeness marker.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { cacheDir } from './cache';

/** `$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` from PATH. */
export function javaBinary(): string {
  return process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/** How a command run by {@link run} ended, with its stdout and stderr interleaved. */
export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  error?: Error;
}

/**
 * Runs a command to completion without blocking the event loop (a cold Maven run takes a while).
 * @param env variables on top of this process's environment.
 */
export function run(command: string, args: string[], env?: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env ? { env: { ...process.env, ...env } } : {}),
    });
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', (error) => resolve({ code: null, signal: null, output: '', error }));
    child.on('close', (code, signal) => resolve({ code, signal, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** The last `lines` lines of a command's output, for an error message. */
export function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Throws `hint` plus what was found unless `java -version` names Java 17 or newer. */
export async function checkJava(hint: string): Promise<void> {
  const res = await run(javaBinary(), ['-version']);
  if (res.error || res.code !== 0) {
    throw new Error(`${hint}. Running ${javaBinary()} -version failed: ${res.error?.message ?? tail(res.output, 5)}`);
  }
  // "17.0.15" and "21" name the major version first; Java 8 and older say "1.8.0_…".
  const version = /version "(\d+)(?:\.(\d+))?/.exec(res.output);
  const major = version ? (version[1] === '1' ? Number(version[2]) : Number(version[1])) : NaN;
  if (!(major >= 17)) {
    throw new Error(`${hint}. Found: ${res.output.split('\n')[0].trim()}`);
  }
}

/** The value of `<name>` in the pom's `<properties>`, so the pom stays the one place a version is written. */
export function pomProperty(pom: string, name: string): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`<${escaped}>\\s*([^<\\s]+)\\s*</${escaped}>`).exec(fs.readFileSync(pom, 'utf8'));
  if (!match) throw new Error(`${pom} has no <${name}> property`);
  return match[1];
}

/** What {@link ensureMavenJars} resolves. */
export interface MavenJars {
  /** The pom that lists the jars (runtime scope and its dependencies). */
  pom: string;
  /** The cache directory's name, with the version, e.g. `kafka-4.4.0`. */
  cacheName: string;
  /** What the jars are, for messages: `Kafka 4.4.0`. */
  what: string;
  /** The start of a jar file name that a complete copy must hold, e.g. `kafka_2.13-4.4.0`. */
  mainJarPrefix: string;
  /** What to install when Java or Maven is missing. */
  installHint: string;
  /** Properties the pom reads (`-Dname=value`), e.g. a version another pom owns. */
  properties?: Record<string, string>;
  log?: (line: string) => void;
}

/**
 * The directory of every jar the pom lists, resolved by Maven into the user's cache on first use.
 * The marker is written only after a complete copy, and records the pom's digest, so an interrupted
 * copy or an edited pom means a fresh copy rather than a program that dies on a missing class. Later
 * calls cost a file read and start nothing.
 */
export async function ensureMavenJars(jars: MavenJars): Promise<string> {
  const { pom, what, installHint } = jars;
  const dir = cacheDir(jars.cacheName);
  const libs = path.join(dir, 'libs');
  const marker = path.join(dir, '.complete');
  const defines = Object.entries(jars.properties ?? {}).map(([name, value]) => `-D${name}=${value}`);
  const digest = crypto
    .createHash('sha256')
    .update(fs.readFileSync(pom))
    .update(defines.length > 0 ? `\n${defines.join('\n')}` : '')
    .digest('hex');
  const complete = () =>
    fs.existsSync(libs) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').trim() === digest;
  if (complete()) return libs;

  await checkJava(installHint);
  const mvn = await run('mvn', ['-v']);
  if (mvn.error || mvn.code !== 0) {
    throw new Error(`${installHint}. Running mvn -v failed: ${mvn.error?.message ?? tail(mvn.output, 5)}`);
  }
  jars.log?.(`resolving ${what} from Maven Central into ${libs} (first run only)`);
  fs.mkdirSync(dir, { recursive: true });
  // A private directory, renamed into place, so two starts racing on a cold cache never share a half copy.
  const staging = fs.mkdtempSync(path.join(dir, 'libs-'));
  try {
    const res = await run('mvn', [
      '-B',
      '-q',
      '-f',
      pom,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${staging}`,
      '-DincludeScope=runtime',
      ...defines,
    ]);
    if (res.error || res.code !== 0) {
      throw new Error(
        `Maven could not resolve the ${what} jars (exit ${res.code ?? res.signal}); ` +
          `is Maven Central reachable?\n${tail(res.output)}`,
      );
    }
    if (!fs.readdirSync(staging).some((f) => f.startsWith(jars.mainJarPrefix))) {
      throw new Error(`Maven finished but copied no ${jars.mainJarPrefix} jar into ${staging}`);
    }
    // Another start won the race meanwhile, and its program may be loading classes from those jars.
    if (complete()) return libs;
    fs.rmSync(marker, { force: true });
    fs.rmSync(libs, { recursive: true, force: true });
    fs.chmodSync(staging, 0o755);
    fs.renameSync(staging, libs);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  fs.writeFileSync(marker, `${digest}\n`);
  return libs;
}
