/**
 * Temporal's time-skipping test server (part of the Java SDK), for the workflow tests. The SDK's
 * `TestWorkflowEnvironment.createTimeSkipping()` would download a native build of it from the internet;
 * instead its jars come from Maven Central once (`ops/temporal-test-server/pom.xml`) into
 * `~/.cache/expiry-reminder/temporal-test-server-<version>`, next to a launcher script that the SDK
 * runs as an `existing-path` executable.
 */
import path from 'node:path';
import { writeExecutableScript } from './cache';
import { checkJava, ensureMavenJars, pomProperty } from './maven';

const POM = path.resolve(__dirname, '..', '..', 'ops', 'temporal-test-server', 'pom.xml');

/** The Java SDK release whose test server runs: the `temporal.version` property of the pom. */
const TEMPORAL_TEST_SERVER_VERSION: string = pomProperty(POM, 'temporal.version');

const INSTALL_HINT =
  "Temporal's time-skipping test server needs Java 17+ and Maven: apt-get install openjdk-17-jre-headless maven " +
  '(or put java and mvn on PATH; JAVA_HOME is honoured for java), or set TEMPORAL_TEST_SERVER_PATH to a test server';

/**
 * JVM options for a small, short-lived server: the SDK gives it 5 s to answer, and every test file
 * starts its own. The client compiler alone and the serial collector start fastest on few cores.
 */
const JVM_OPTS = ['-Xms64m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-XX:+ExitOnOutOfMemoryError'];

const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;

/**
 * The path of an executable that starts the test server (`<path> <port>`, as the SDK calls it), for
 * `createTimeSkipping({ server: { executable: { type: 'existing-path', path } } })`:
 * TEMPORAL_TEST_SERVER_PATH when set, else the cached launcher, resolving the jars with Maven first
 * when the cache has none (tens of seconds, once; `log` says so).
 */
export async function ensureTemporalTestServer(log: (line: string) => void = () => {}): Promise<string> {
  const fromEnv = process.env.TEMPORAL_TEST_SERVER_PATH;
  if (fromEnv) return path.resolve(fromEnv);
  const libs = await ensureMavenJars({
    pom: POM,
    cacheName: `temporal-test-server-${TEMPORAL_TEST_SERVER_VERSION}`,
    what: `Temporal's test server ${TEMPORAL_TEST_SERVER_VERSION}`,
    mainJarPrefix: `temporal-test-server-${TEMPORAL_TEST_SERVER_VERSION}`,
    installHint: INSTALL_HINT,
    log,
  });
  // Again on a warm cache: a missing java should say so, not surface as a server that never answers.
  await checkJava(INSTALL_HINT);
  // `exec`: the SDK stops the server by killing the process it started, which must be the JVM itself.
  // JAVA_HOME is read when the server starts, as javaBinary() reads it.
  const script = [
    '#!/bin/sh',
    `# Written by scripts/stack/temporal-test-server.ts: Temporal's time-skipping test server ${TEMPORAL_TEST_SERVER_VERSION}.`,
    `exec "\${JAVA_HOME:+$JAVA_HOME/bin/}java" ${JVM_OPTS.join(' ')} -cp ${shellQuote(path.join(libs, '*'))} \\`,
    '  io.temporal.testserver.TestServer "$@"',
    '',
  ].join('\n');
  return writeExecutableScript(path.join(path.dirname(libs), 'temporal-test-server.sh'), script);
}
