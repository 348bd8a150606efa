/**
 * A real Apache Kafka broker for the local stack, without Docker: one KRaft node (broker and controller
 * in one JVM) on loopback and free ports, run from jars that Maven resolves from Maven Central once
 * (`ops/kafka/pom.xml`) and caches under `~/.cache/expiry-reminder`, outside the repository.
 *
 * In the production profile (`secrets` given) it runs `ops/kafka/production.properties`, the file compose
 * mounts: a SASL_SSL listener with SCRAM-SHA-512 users created at format time (their passwords passed in a
 * file, never on a command line), TLS from the stack CA, and
 * the KRaft StandardAuthorizer with the ACLs of `ops/kafka/acls.sh`, set up with the broker's own tool.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { dropKafkajsNegativeTimeoutWarning } from '../../src/relay/kafkajs-workarounds';
import { ensureTopic } from '../../src/relay/kafka';
import { TOPIC } from '../../src/domain/names';
import { freePort } from '../../src/observability/ports';
import { cacheDir, writeExecutableScript } from './cache';
import { checkJava as checkJavaFor, ensureMavenJars, javaBinary, pomProperty, run, tail } from './maven';
import { productionFile } from './production-files';
import type { StackSecrets } from './secrets';
import { PortTakenError, retryOnTakenPort, saysAddressInUse } from './port-retry';

const OPS_DIR = path.resolve(__dirname, '..', '..', 'ops', 'kafka');
const POM = path.join(OPS_DIR, 'pom.xml');
const TOOLS_POM = path.join(OPS_DIR, 'tools-pom.xml');
const LOG4J_CONFIG = path.join(OPS_DIR, 'log4j2.properties');
/** The production profile's broker configuration, shared with docker-compose.yml. */
const PRODUCTION_PROPERTIES = productionFile('kafkaProperties');
/** Client settings of the broker's own tools as the admin (ACL set-up, the console consumer). */
export const ADMIN_CLIENT_PROPERTIES = productionFile('kafkaAdminClient');
const ACLS_SCRIPT = productionFile('kafkaAcls');

/**
 * The SCRAM users of the production profile. `broker` and `admin` are super users, named in
 * `ops/kafka/production.properties` (and `admin-client.properties`); `relay` has the ACLs of `acls.sh`.
 */
export const KAFKA_USERS = { broker: 'broker', relay: 'relay', admin: 'admin' } as const;

/**
 * The Kafka release the stack runs. Read from the `kafka.version` property of `ops/kafka/pom.xml` so
 * that the pom, which resolves the jars, stays the only place the version is written.
 */
export const KAFKA_VERSION: string = pomProperty(POM, 'kafka.version');

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const JVM_OPTS = ['-Xms128m', '-Xmx512m', '-XX:+ExitOnOutOfMemoryError', '-Djava.awt.headless=true'];

const INSTALL_HINT =
  'The Kafka broker needs Java 17+ and Maven: apt-get install openjdk-17-jre-headless maven ' +
  '(or put java and mvn on PATH; JAVA_HOME is honoured for java)';

/** How a client of the production profile logs in: TLS with the stack CA, SCRAM-SHA-512. */
interface ClientLogin {
  caPath: string;
  username: string;
  password: string;
}

/** One quiet client per use: kafkajs logs every refused connection at ERROR while the broker starts. */
function client(brokers: string, login?: ClientLogin, requestTimeout?: number): Kafka {
  dropKafkajsNegativeTimeoutWarning();
  return new Kafka({
    clientId: 'expiry-reminder-stack',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2_000,
    ...(requestTimeout ? { requestTimeout } : {}),
    retry: { retries: 0 },
    ...(login
      ? {
          ssl: { ca: [fs.readFileSync(login.caPath)] },
          sasl: { mechanism: 'scram-sha-512', username: login.username, password: login.password },
        }
      : {}),
  });
}

const checkJava = () => checkJavaFor(INSTALL_HINT);

/** The directory of every jar the broker needs, resolved by Maven into the user's cache on first use. */
export function ensureKafkaJars(log: (line: string) => void = () => {}): Promise<string> {
  return ensureMavenJars({
    pom: POM,
    cacheName: `kafka-${KAFKA_VERSION}`,
    what: `Kafka ${KAFKA_VERSION}`,
    mainJarPrefix: `kafka_2.13-${KAFKA_VERSION}`,
    installHint: INSTALL_HINT,
    log,
  });
}

/**
 * The Kafka command-line tools the production profile runs (`kafka-acls`, `kafka-console-consumer`, and
 * `kafka-broker-api-versions`, compose's health check of the broker), as
 * an executable launcher; their jars (`ops/kafka/tools-pom.xml`) are resolved on first use like the
 * broker's. Kafka's own tools, so that compose (whose image has them on PATH) runs the same commands.
 */
export async function kafkaTool(
  tool: 'kafka-acls' | 'kafka-console-consumer' | 'kafka-broker-api-versions',
  log: (line: string) => void = () => {},
): Promise<string> {
  const libs = await ensureMavenJars({
    pom: TOOLS_POM,
    cacheName: `kafka-tools-${KAFKA_VERSION}`,
    what: `Kafka ${KAFKA_VERSION} tools`,
    mainJarPrefix: `kafka-tools-${KAFKA_VERSION}`,
    installHint: INSTALL_HINT,
    properties: { 'kafka.version': KAFKA_VERSION, 'log4j.version': pomProperty(POM, 'log4j.version') },
    log,
  });
  const main = {
    'kafka-acls': 'org.apache.kafka.tools.AclCommand',
    'kafka-console-consumer': 'org.apache.kafka.tools.consumer.ConsoleConsumer',
    'kafka-broker-api-versions': 'org.apache.kafka.tools.BrokerApiVersionsCommand',
  }[tool];
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  const script =
    `#!/bin/sh\n# ${tool} of Kafka ${KAFKA_VERSION}, written by scripts/stack/kafka.ts.\n` +
    `exec ${quote(javaBinary())} -Xmx256m ${quote(`-Dlog4j2.configurationFile=${LOG4J_CONFIG}`)} ` +
    `-cp ${quote(path.join(libs, '*'))} ${main} "$@"\n`;
  // Named after its content: worktrees with another log4j2.properties path get launchers of their own.
  const digest = crypto.createHash('sha256').update(script).digest('hex').slice(0, 12);
  return writeExecutableScript(cacheDir('launchers', `${tool}-${KAFKA_VERSION}-${digest}.sh`), script);
}

/** A running single-node Kafka cluster of the local stack. */
export interface KafkaBroker {
  /** Bootstrap address for clients, `127.0.0.1:PORT`. */
  brokers: string;
  /** True for the production profile's broker (SASL_SSL, SCRAM, ACLs). */
  production: boolean;
  /**
   * The job's Kafka variables for `user` (default the relay's): KAFKA_BROKERS, and in the production
   * profile KAFKA_SSL, KAFKA_SSL_CA_PATH and KAFKA_SASL_* with that user's SCRAM password.
   */
  clientEnv(user?: 'relay' | 'admin'): Record<string, string>;
  /**
   * The environment `ops/kafka/admin-client.properties` reads (production profile only): run the
   * broker's tools with `--command-config`/`--consumer.config` set to that file and these variables.
   */
  toolEnv(): Record<string, string>;
  /** Holds server.properties, the log directories and broker.log (the broker's own output). */
  dataDir: string;
  /** Shuts the broker down cleanly (SIGTERM), killing it if it has not exited within 30 s. */
  stop(): Promise<void>;
  /**
   * Starts the stopped broker again on the same ports and data, so a test can take the broker away
   * and bring it back; resolves once clients can reach it.
   */
  start(): Promise<void>;
  /** Stops the broker and deletes its data directory. */
  destroy(): Promise<void>;
}

/** Options of {@link startKafka}. */
export interface KafkaOptions {
  log?: (line: string) => void;
  /**
   * Where the broker keeps its configuration, data and output. Default: a fresh temporary directory.
   * A directory that already holds a broker of this module is resumed on its old ports and data.
   */
  dataDir?: string;
  /**
   * The production profile: the stack's certificates and passwords (`prepareStackSecrets`). The broker
   * runs `ops/kafka/production.properties`, and its ACLs are set up after the first start.
   */
  secrets?: StackSecrets;
  /**
   * Chooses the broker's two ports (client and controller), again for each start of a new cluster after one
   * whose port was taken (default a port free right now): a test hands out a port it holds, as another
   * process would take one.
   */
  choosePort?: () => Promise<number>;
}

/** Where the production broker's variables come from: `ops/kafka/production.properties` lists them. */
function productionBrokerEnv(
  secrets: StackSecrets,
  dataDir: string,
  ports: { port: number; controllerPort: number },
): Record<string, string> {
  return {
    BROKER_HOST: '127.0.0.1',
    BROKER_ADVERTISED_HOST: '127.0.0.1',
    BROKER_PORT: String(ports.port),
    BROKER_CONTROLLER_PORT: String(ports.controllerPort),
    BROKER_DATA_DIR: path.join(dataDir, 'logs'),
    BROKER_TLS_DIR: path.dirname(secrets.caPath),
    BROKER_SCRAM_PASSWORD: secrets.passwords.kafkaBroker,
  };
}

/**
 * Writes the storage tool's `--add-scram` arguments (every user of {@link KAFKA_USERS}, with its password)
 * to a file of its own (0600) in `dir` and returns `@<file>`: the tool reads arguments from a file named
 * so (its parser's `@` prefix), which keeps the passwords out of its command line, readable by anyone on
 * the host in `ps` and /proc/<pid>/cmdline. The caller deletes the file once the tool is done.
 */
function writeScramArguments(dir: string, secrets: StackSecrets): { argument: string; file: string } {
  const { kafkaBroker, kafkaRelay, kafkaTest } = secrets.passwords;
  const lines = [
    [KAFKA_USERS.broker, kafkaBroker],
    [KAFKA_USERS.relay, kafkaRelay],
    [KAFKA_USERS.admin, kafkaTest],
  ].flatMap(([name, password]) => ['--add-scram', `SCRAM-SHA-512=[name=${name},password=${password}]`]);
  const file = path.join(dir, `scram-users-${crypto.randomBytes(6).toString('hex')}.args`);
  // One argument per line; `wx`: never through a file or link that someone else put there.
  fs.writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600, flag: 'wx' });
  return { argument: `@${file}`, file };
}

function serverProperties(dataDir: string, port: number, controllerPort: number): string {
  return [
    '# Written by scripts/stack/kafka.ts: a single KRaft node, broker and controller in one process.',
    'process.roles=broker,controller',
    'node.id=1',
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    `controller.quorum.bootstrap.servers=127.0.0.1:${controllerPort}`,
    `log.dirs=${path.join(dataDir, 'logs')}`,
    // Topics are created explicitly (createTopic), as in production; a typo must not invent a topic.
    'auto.create.topics.enable=false',
    'num.partitions=1',
    'default.replication.factor=1',
    'min.insync.replicas=1',
    'offsets.topic.replication.factor=1',
    // One partition each instead of 50: the internal topics appear on first use, and faster.
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    // A consumer group's first join otherwise waits 3 s for more members that never come.
    'group.initial.rebalance.delay.ms=0',
    '',
  ].join('\n');
}

function readPorts(propertiesFile: string): { port: number; controllerPort: number } | undefined {
  const text = fs.readFileSync(propertiesFile, 'utf8');
  if (propertiesFile.endsWith('.json')) return JSON.parse(text) as { port: number; controllerPort: number };
  const port = /^listeners=.*PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/m.exec(text);
  const controllerPort = /^listeners=.*CONTROLLER:\/\/127\.0\.0\.1:(\d+)/m.exec(text);
  return port && controllerPort ? { port: Number(port[1]), controllerPort: Number(controllerPort[1]) } : undefined;
}

/** A Kafka cluster id: 16 random bytes in unpadded base64url, never starting with "-" (like Uuid.randomUuid). */
function clusterId(): string {
  for (;;) {
    const id = crypto.randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function readLogTail(logFile: string): string {
  try {
    return tail(fs.readFileSync(logFile, 'utf8')) || '(empty)';
  } catch {
    return '(no output)';
  }
}

async function reachable(brokers: string, login?: ClientLogin): Promise<boolean> {
  // Not kafkajs's 30 s: whatever took the broker's port may accept a connection and never answer.
  const admin: Admin = client(brokers, login, 3_000).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/**
 * Starts a single-node Kafka broker and resolves once a client can describe the cluster. On failure
 * it kills what it started and throws with the tail of the broker's output, leaving the data
 * directory for a closer look.
 */
export async function startKafka(options: KafkaOptions = {}): Promise<KafkaBroker> {
  const log = options.log ?? (() => {});
  const libs = await ensureKafkaJars(log);
  // Again on a warm cache: a missing java should say so, not surface as "spawn java ENOENT".
  await checkJava();
  const classpath = path.join(libs, '*');
  const createdDir = !options.dataDir;
  const dataDir = options.dataDir
    ? path.resolve(options.dataDir)
    : fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-kafka-'));
  fs.mkdirSync(dataDir, { recursive: true });
  const { secrets } = options;
  // The production broker runs the shared file as it is; its ports live next to the data instead.
  const propertiesFile = secrets ? PRODUCTION_PROPERTIES : path.join(dataDir, 'server.properties');
  const portsFile = secrets ? path.join(dataDir, 'ports.json') : propertiesFile;
  const logFile = path.join(dataDir, 'broker.log');
  const log4j = `-Dlog4j2.configurationFile=${LOG4J_CONFIG}`;

  const choosePort = options.choosePort ?? freePort;
  const resumed = fs.existsSync(portsFile) ? readPorts(portsFile) : undefined;
  const formatted = fs.existsSync(path.join(dataDir, 'logs', 'meta.properties'));
  const freshCluster = !(resumed && formatted);
  /** A new cluster on ports chosen now. */
  const formatCluster = async (): Promise<{ port: number; controllerPort: number }> => {
    const port = await choosePort();
    let controllerPort = await choosePort();
    while (controllerPort === port) controllerPort = await choosePort();
    const ports = { port, controllerPort };
    if (secrets) fs.writeFileSync(portsFile, JSON.stringify(ports));
    else fs.writeFileSync(propertiesFile, serverProperties(dataDir, port, controllerPort));
    // SCRAM users must exist before the broker starts: it authenticates to itself as `broker`.
    const scram = secrets ? writeScramArguments(dataDir, secrets) : undefined;
    // --standalone: a one-voter dynamic quorum (KIP-853), the form Kafka 4 documents for a single node.
    const format = await run(
      javaBinary(),
      [
        ...JVM_OPTS,
        log4j,
        '-cp',
        classpath,
        'kafka.tools.StorageTool',
        'format',
        '--cluster-id',
        clusterId(),
        '--config',
        propertiesFile,
        '--standalone',
        ...(scram ? [scram.argument] : []),
      ],
      secrets && productionBrokerEnv(secrets, dataDir, ports),
    ).finally(() => {
      if (scram) fs.rmSync(scram.file, { force: true });
    });
    if (format.error || format.code !== 0) {
      if (createdDir) fs.rmSync(dataDir, { recursive: true, force: true });
      throw new Error(
        `Formatting Kafka storage in ${dataDir} failed (exit ${format.code ?? format.signal}):\n` +
          tail(format.error?.message ?? format.output),
      );
    }
    return ports;
  };
  let ports = resumed && !freshCluster ? resumed : await formatCluster();
  let brokers = `127.0.0.1:${ports.port}`;
  let brokerEnv = secrets ? productionBrokerEnv(secrets, dataDir, ports) : undefined;
  const login = (user: 'relay' | 'admin'): ClientLogin | undefined =>
    secrets && {
      caPath: secrets.caPath,
      username: KAFKA_USERS[user],
      password: user === 'relay' ? secrets.passwords.kafkaRelay : secrets.passwords.kafkaTest,
    };
  const toolEnv = (): Record<string, string> => {
    if (!secrets) throw new Error('the dev broker has no admin tools settings: it runs without SASL');
    return { BROKER_TLS_DIR: path.dirname(secrets.caPath), BROKER_ADMIN_PASSWORD: secrets.passwords.kafkaTest };
  };
  const clientEnv = (user: 'relay' | 'admin' = 'relay'): Record<string, string> => {
    const l = login(user);
    return l
      ? {
          KAFKA_BROKERS: brokers,
          KAFKA_SSL: 'true',
          KAFKA_SSL_CA_PATH: l.caPath,
          KAFKA_SASL_MECHANISM: 'scram-sha-512',
          KAFKA_SASL_USERNAME: l.username,
          KAFKA_SASL_PASSWORD: l.password,
        }
      : { KAFKA_BROKERS: brokers };
  };

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  // A test runner that exits without stop() must not leave a JVM holding ports behind.
  const killOnExit = () => child?.kill('SIGKILL');

  const launch = (): ChildProcess => {
    fs.appendFileSync(
      logFile,
      `[expiry-reminder] starting Kafka ${KAFKA_VERSION} on ${brokers}${secrets ? ' (SASL_SSL)' : ''}\n`,
    );
    const out = fs.openSync(logFile, 'a');
    try {
      const proc = spawn(javaBinary(), [...JVM_OPTS, log4j, '-cp', classpath, 'kafka.Kafka', propertiesFile], {
        cwd: dataDir,
        stdio: ['ignore', out, out],
        ...(brokerEnv ? { env: { ...process.env, ...brokerEnv } } : {}),
      });
      child = proc;
      exited = new Promise<void>((resolve) => {
        proc.on('error', (err) => {
          fs.appendFileSync(logFile, `could not start java: ${err.message}\n`);
          resolve();
        });
        proc.on('exit', (code, signal) => {
          fs.appendFileSync(logFile, `[expiry-reminder] broker exited (${signal ?? `code ${code}`})\n`);
          resolve();
        });
      }).then(() => {
        if (child === proc) child = undefined;
        process.off('exit', killOnExit);
      });
      process.on('exit', killOnExit);
      return proc;
    } finally {
      fs.closeSync(out);
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc) return;
    proc.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      log(`Kafka broker did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`);
      proc.kill('SIGKILL');
      await exited;
    }
  };

  const start = async (): Promise<void> => {
    if (child) return;
    const began = Date.now();
    const logged = fs.existsSync(logFile) ? fs.statSync(logFile).size : 0;
    const proc = launch();
    while (Date.now() - began < READY_TIMEOUT_MS) {
      // Only this start's output: an earlier start's taken port must not make a later failure look like one.
      if (saysAddressInUse(fs.readFileSync(logFile).subarray(logged).toString('utf8'))) {
        // Said while the broker shuts down: gone before the next start formats its folder again.
        await stop();
        throw new PortTakenError(
          `a port of the broker on ${brokers} (controller port ${ports.controllerPort}) was taken; ${logFile}:\n${readLogTail(logFile)}`,
        );
      }
      if (child !== proc) {
        const how = proc.signalCode ?? (proc.exitCode === null ? 'could not run java' : `exit code ${proc.exitCode}`);
        throw new Error(`The Kafka broker exited during start (${how}); ${logFile}:\n${readLogTail(logFile)}`);
      }
      if (await reachable(brokers, login('admin'))) {
        log(
          `Kafka ${KAFKA_VERSION} broker on ${brokers}${secrets ? ' (SASL_SSL)' : ''} ` +
            `(ready in ${((Date.now() - began) / 1000).toFixed(1)} s)`,
        );
        return;
      }
      await sleep(250);
    }
    await stop();
    throw new Error(
      `The Kafka broker on ${brokers} was not ready within ${READY_TIMEOUT_MS / 1000} s; ${logFile}:\n${readLogTail(logFile)}`,
    );
  };

  try {
    let first = true;
    await retryOnTakenPort('the Kafka broker', log, async () => {
      // Only a new cluster gets here again, after a port was taken: formatted anew on other ports, since its
      // quorum's voter names the controller's port.
      if (!first) {
        fs.rmSync(path.join(dataDir, 'logs'), { recursive: true, force: true });
        ports = await formatCluster();
        brokers = `127.0.0.1:${ports.port}`;
        brokerEnv = secrets ? productionBrokerEnv(secrets, dataDir, ports) : undefined;
      }
      first = false;
      try {
        await start();
      } catch (err) {
        // A resumed cluster's ports are its own (its quorum's voter names them): no other port will do.
        throw err instanceof PortTakenError && !freshCluster ? new Error(err.message) : err;
      }
    });
    // ACLs live in the cluster's metadata: once per cluster, by the admin, with the broker's own tool.
    if (secrets && freshCluster) await applyAcls(brokers, toolEnv(), log);
  } catch (err) {
    // The data directory stays: its broker.log is what explains the failure.
    await stop().catch(() => {});
    throw err;
  }

  return {
    brokers,
    production: Boolean(secrets),
    clientEnv,
    toolEnv,
    dataDir,
    stop,
    start,
    destroy: async () => {
      await stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `ops/kafka/acls.sh` (the file compose runs) with the broker's `kafka-acls` tool. */
async function applyAcls(brokers: string, env: Record<string, string>, log: (line: string) => void): Promise<void> {
  const acls = await kafkaTool('kafka-acls', log);
  const res = await run('bash', [ACLS_SCRIPT, brokers, TOPIC, KAFKA_USERS.relay], { ...env, KAFKA_ACLS: acls });
  if (res.error || res.code !== 0) {
    throw new Error(
      `Setting up the Kafka ACLs (ops/kafka/acls.sh) failed (exit ${res.code ?? res.signal}):\n` +
        tail(res.error?.message ?? res.output),
    );
  }
  log(`Kafka ACLs: ${KAFKA_USERS.relay} may create, describe and write ${TOPIC}`);
}

/** Options of {@link createTopic}. */
export interface TopicOptions {
  partitions?: number;
  replicationFactor?: number;
}

/**
 * Creates `topic` unless it exists, then waits until every partition has a leader: the broker refuses
 * auto-creation, and a produce right after creation can otherwise fail with "This server does not host
 * this topic-partition" while the new partitions are still being loaded.
 */
export async function createTopic(brokers: string, topic: string, opts: TopicOptions = {}): Promise<void> {
  const admin = client(brokers).admin();
  await admin.connect();
  try {
    await ensureTopic(admin, topic, opts.partitions ?? 1, opts.replicationFactor ?? 1);
  } finally {
    await admin.disconnect();
  }
}
