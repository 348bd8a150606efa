/**
 * Java programs of the local stack (the Kafka broker, and any other tool Maven Central ships as jars): the
 * JDK check, and the jars of a pom resolved by Maven once into the user's cache, outside the repository.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const INSTALL_HINT =
  'The local stack needs Java 17+ and Maven: apt-get install openjdk-17-jre-headless maven ' +
  '(or put java and mvn on PATH; JAVA_HOME is honoured for java)';

/** `java` of JAVA_HOME, else the one on PATH. */
export function javaBinary(): string {
  return process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  error?: Error;
}

/** Runs a command to completion without blocking the event loop (a cold Maven run takes a while). */
export function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', (error) => resolve({ code: null, signal: null, output: '', error }));
    child.on('close', (code, signal) => resolve({ code, signal, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** The last `lines` lines of a program's output, for an error message. */
export function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Fails with how to install them unless Java 17+ is there. */
export async function checkJava(): Promise<void> {
  const res = await run(javaBinary(), ['-version']);
  if (res.error || res.code !== 0) {
    throw new Error(
      `${INSTALL_HINT}. Running ${javaBinary()} -version failed: ${res.error?.message ?? tail(res.output, 5)}`,
    );
  }
  // "17.0.15" and "21" name the major version first; Java 8 and older say "1.8.0_…".
  const version = /version "(\d+)(?:\.(\d+))?/.exec(res.output);
  const major = version ? (version[1] === '1' ? Number(version[2]) : Number(version[1])) : NaN;
  if (!(major >= 17)) {
    throw new Error(`${INSTALL_HINT}. Found: ${res.output.split('\n')[0].trim()}`);
  }
}

/** What {@link ensureMavenJars} resolves. */
export interface MavenJars {
  /** The pom whose runtime dependencies are wanted. */
  pom: string;
  /** The cache folder's name under `~/.cache/expiry-reminder`, e.g. `kafka-4.1.1`. */
  cacheName: string;
  /** What it is, for the first-run line and errors: `Kafka 4.1.1`. */
  what: string;
  /** A jar file name prefix that must be among the copied jars, so an empty resolution is caught. */
  mustContain: string;
}

/**
 * The directory of every jar of `pom`, resolved by Maven into the user's cache on first use. The marker is
 * written only after a complete copy, and records the pom's digest, so an interrupted copy or an edited pom
 * means a fresh copy rather than a program that dies on a missing class. Later calls cost a file read.
 */
export async function ensureMavenJars(jars: MavenJars, log: (line: string) => void = () => {}): Promise<string> {
  const cacheRoot = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.join(cacheRoot, 'expiry-reminder', jars.cacheName);
  const libs = path.join(dir, 'libs');
  const marker = path.join(dir, '.complete');
  const digest = crypto.createHash('sha256').update(fs.readFileSync(jars.pom)).digest('hex');
  const complete = () =>
    fs.existsSync(libs) && fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').trim() === digest;
  if (complete()) return libs;

  await checkJava();
  const mvn = await run('mvn', ['-v']);
  if (mvn.error || mvn.code !== 0) {
    throw new Error(`${INSTALL_HINT}. Running mvn -v failed: ${mvn.error?.message ?? tail(mvn.output, 5)}`);
  }
  log(`resolving ${jars.what} from Maven Central into ${libs} (first run only)`);
  fs.mkdirSync(dir, { recursive: true });
  // A private directory, renamed into place, so two starts racing on a cold cache never share a half copy.
  const staging = fs.mkdtempSync(path.join(dir, 'libs-'));
  try {
    const res = await run('mvn', [
      '-B',
      '-q',
      '-f',
      jars.pom,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${staging}`,
      '-DincludeScope=runtime',
    ]);
    if (res.error || res.code !== 0) {
      throw new Error(
        `Maven could not resolve the ${jars.what} jars (exit ${res.code ?? res.signal}); ` +
          `is Maven Central reachable?\n${tail(res.output)}`,
      );
    }
    if (!fs.readdirSync(staging).some((f) => f.startsWith(jars.mustContain))) {
      throw new Error(`Maven finished but copied no ${jars.mustContain}* jar into ${staging}`);
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
