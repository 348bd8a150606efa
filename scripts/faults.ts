/**
 * `npm run test:faults [-- --owners N --repeat K --only s1,s9 --report docs/RELIABILITY.md]`
 *
 * The fault suite: real worker and relay processes, a real PostgreSQL, Temporal dev server and Kafka
 * broker, and faults injected into them (SIGKILL, server restarts, broker outages, bad input). After
 * each scenario it checks the invariants:
 *   I1 every due (document, current threshold) has exactly one marker (nothing is left due);
 *   I2 every current-threshold marker carried an event, in exactly one outbox row;
 *   I3 no outbox row names a (document, threshold) without its marker;
 *   I4 every outbox row reached Kafka at least once (scenarios with a relay).
 * It prints a table and a closing "N passed, N failed" line, and exits non-zero on any failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { countDueDocuments } from '../src/db/candidates';
import { runMigrations } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import type { CycleInput } from '../src/domain/cycle';
import { RELAY_ROLE, WORKER_ROLE, WORKFLOW_TYPE } from '../src/domain/names';
import { LOCAL_ROLE_PASSWORDS, startStack, type Stack } from './stack';
import { consumeUntil } from './stack/consume';
import { createDatabase, databaseUrl } from './stack/postgres';
import type { Proxy } from 'toxiproxy-node-client';
import { startToxiproxy } from './toxiproxy';
import type { CycleWorkflow } from '../src/workflows';

const { values: args } = parseArgs({
  options: {
    owners: { type: 'string', default: '3000' },
    repeat: { type: 'string', default: '1' },
    only: { type: 'string' },
    report: { type: 'string' },
  },
});
const OWNERS = Number(args.owners);
const REPEAT = Number(args.repeat);
const AS_OF = '2026-09-02';
const THRESHOLDS = [30, 7, 1, 0];
const root = path.resolve(__dirname, '..');
const say = (line: string) => process.stdout.write(`${line}\n`);

interface Row {
  scenario: string;
  repetitions: number;
  dataSize: string;
  checks: string;
  result: string;
  seconds: number;
  ok: boolean;
}

interface Db {
  name: string;
  ownerUrl: string;
  /** Owner connection; replaced after a server restart. */
  admin: pg.Pool;
  workerUrl: string;
  relayUrl: string;
  close(): Promise<void>;
}

interface Proc {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

let stack: Stack;
let client: Client;
const allOutput: string[] = [];

/**
 * How the scenarios' cycles run: small owner groups, several in flight, so a fault lands between many
 * groups, some committed, some in flight, some not started.
 */
const FAULT_CYCLE: CycleInput = { ownerConcurrency: 20, ownerGroupSize: 5 };

/**
 * Every marker statement sleeps this long, so a cycle over `--owners 1000` lasts seconds and the faults
 * land mid-cycle: the grouped cycle claims 1,000 owners in well under a second on its own.
 */
const PACE_SECONDS = 0.08;

async function newDb(label: string): Promise<Db> {
  const name = `faults_${label}_${crypto.randomBytes(3).toString('hex')}`;
  const ownerUrl = await createDatabase(stack.postgres.adminUrl, name);
  await runMigrations({ connectionString: ownerUrl, rolePasswords: LOCAL_ROLE_PASSWORDS });
  const pace = new pg.Client({ connectionString: ownerUrl });
  await pace.connect();
  await pace.query(`
    create function profile.faults_pace() returns trigger language plpgsql as $$
    begin perform pg_sleep(${PACE_SECONDS}); return null; end $$;
    create trigger faults_pace after insert on profile.document_expiry_reminders
      for each statement execute function profile.faults_pace();`);
  await pace.end();
  const db: Db = {
    name,
    ownerUrl,
    admin: createPool({ connectionString: ownerUrl, max: 4 }),
    workerUrl: databaseUrl(ownerUrl, { user: WORKER_ROLE, password: LOCAL_ROLE_PASSWORDS.worker }),
    relayUrl: databaseUrl(ownerUrl, { user: RELAY_ROLE, password: LOCAL_ROLE_PASSWORDS.relay }),
    close: () => db.admin.end(),
  };
  return db;
}

/** `owners` investors with 1–3 documents each, spread over the window and around it, set-based. */
async function seed(db: Db, owners: number): Promise<number> {
  const { rowCount } = await db.admin.query(
    `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted, payload_cipher)
     select gen_random_uuid(), o.owner, gen_random_uuid(),
            (array['Passport','ForeignPassport','DriverLicense','ResidencePermit'])[1 + (o.n + d) % 4],
            '**** ' || lpad(((o.n * 7 + d) % 1000000)::text, 6, '0'),
            case when (o.n + d) % 17 = 0 then null else $1::date + ((o.n * 13 + d * 5) % 50) - 12 end,
            case when (o.n + d) % 23 = 0 then 'Archived' else 'Active' end,
            (o.n + d) % 29 = 0,
            '\\x00'
       from (select gen_random_uuid() as owner, n from generate_series(1, $2) as n) o,
            generate_series(1, 1 + o.n % 3) as d`,
    [AS_OF, owners],
  );
  return rowCount ?? 0;
}

function startProcess(entry: 'worker' | 'relay', env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src', `${entry}.ts`)], {
    cwd: root,
    env: { ...process.env, ...stack.env, METRICS_PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    output.push(chunk.toString());
    allOutput.push(chunk.toString());
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let killed = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      // A process dying on its own is part of what the suite watches for: show why.
      if (!killed && code !== 78 && code !== 69) {
        const file = path.join(os.tmpdir(), `faults-${entry}-${child.pid}.log`);
        fs.writeFileSync(file, output.join(''));
        say(`  ${entry} exited on its own (${code ?? signal}); its output: ${file}`);
      }
      resolve(code);
    }),
  );
  return {
    child,
    output,
    exited,
    kill: async (signal) => {
      killed = true;
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

const startWorker = (db: Db, taskQueue: string, env: Record<string, string> = {}) =>
  startProcess('worker', { DATABASE_URL: db.workerUrl, TEMPORAL_TASK_QUEUE: taskQueue, ...env });
const startRelay = (db: Db, env: Record<string, string> = {}) =>
  startProcess('relay', {
    DATABASE_URL: db.relayUrl,
    KAFKA_BROKERS: stack.kafkaBrokers,
    RELAY_POLL_INTERVAL: '200ms',
    RELAY_MAX_BACKOFF: '2s',
    RELAY_SEND_TIMEOUT: '5s',
    ...env,
  });

function startCycle(taskQueue: string, input: CycleInput = {}) {
  return client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: `faults-${crypto.randomUUID()}`,
    args: [{ asOf: AS_OF, ...input }],
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 180_000, everyMs = 200): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

async function markerCount(db: Db): Promise<number> {
  const { rows } = await db.admin.query('select count(*)::int as n from profile.document_expiry_reminders');
  return rows[0].n;
}

async function outboxCount(db: Db, unpublishedOnly = false): Promise<number> {
  const { rows } = await db.admin.query(
    `select count(*)::int as n from profile.outbox_messages ${unpublishedOnly ? 'where published_at is null' : ''}`,
  );
  return rows[0].n;
}

/** I1–I4; returns the violations (empty when all hold). */
async function invariants(db: Db, options: { kafka?: boolean } = {}): Promise<string[]> {
  const problems: string[] = [];
  const due = await countDueDocuments(db.admin, { asOfDate: AS_OF, thresholdsDays: THRESHOLDS, retentionDays: 90 });
  if (due > 0) problems.push(`I1: ${due} documents still due`);
  const { rows: dup } = await db.admin.query(
    `select x->>'documentId' as doc, x->>'thresholdDays' as t, count(*)::int as n
       from profile.outbox_messages o, jsonb_array_elements(o.payload->'documents') x
      group by 1, 2 having count(*) <> 1`,
  );
  if (dup.length > 0) problems.push(`I2: ${dup.length} (document, threshold) pairs in more than one event`);
  const { rows: missing } = await db.admin.query(
    `select count(*)::int as n
       from profile.document_expiry_reminders r
       join profile.person_documents d on d.id = r.document_id
      where r.threshold_days = (select min(t) from unnest($1::int[]) t where d.expires_at - $2::date <= t)
        and not exists (select 1 from profile.outbox_messages o, jsonb_array_elements(o.payload->'documents') x
                         where x->>'documentId' = r.document_id::text and (x->>'thresholdDays')::int = r.threshold_days)`,
    [THRESHOLDS, AS_OF],
  );
  if (missing[0].n > 0) problems.push(`I2: ${missing[0].n} current-threshold markers without an event`);
  const { rows: orphan } = await db.admin.query(
    `select count(*)::int as n
       from profile.outbox_messages o, jsonb_array_elements(o.payload->'documents') x
      where not exists (select 1 from profile.document_expiry_reminders r
                         where r.document_id::text = x->>'documentId' and r.threshold_days = (x->>'thresholdDays')::int)`,
  );
  if (orphan[0].n > 0) problems.push(`I3: ${orphan[0].n} event documents without their marker`);
  if (options.kafka) {
    const { rows } = await db.admin.query<{ id: string }>('select id from profile.outbox_messages');
    const ids = new Set(rows.map((r) => r.id));
    const seen = new Set<string>();
    await consumeUntil(
      stack.kafkaBrokers,
      (ms) => {
        for (const m of ms.slice(-1)) if (ids.has(m.headers.messageId)) seen.add(m.headers.messageId);
        return seen.size === ids.size;
      },
      120_000,
    ).catch(() => undefined);
    if (seen.size !== ids.size)
      problems.push(`I4: ${ids.size - seen.size} of ${ids.size} outbox rows not on the topic`);
  }
  return problems;
}

/** Worker sessions left idle inside a transaction: orphans when the worker's path is cut. */
async function orphans(db: Db): Promise<number> {
  const { rows } = await db.admin.query(
    `select count(*)::int as n from pg_stat_activity
      where datname = $1 and application_name = 'expiry-reminder-worker' and state like 'idle in transaction%'`,
    [db.name],
  );
  return rows[0].n;
}

/**
 * A scenario whose worker reaches PostgreSQL through a Toxiproxy proxy, with short session limits so an
 * orphaned transaction ends within seconds: idle in transaction 3 s, statements 5 s (the client gives up
 * 5 s later). Toxiproxy is stopped whatever happens.
 */
async function throughToxiproxy(
  label: string,
  body: (ctx: { db: Db; proxy: Proxy; tq: string; worker: Proc }) => Promise<{ detail: string; problems: string[] }>,
): Promise<{ size: string; detail: string; problems: string[] }> {
  const toxiproxy = await startToxiproxy((l) => say(`[toxiproxy] ${l}`));
  const db = await newDb(label);
  let worker: Proc | undefined;
  try {
    const docs = await seed(db, OWNERS);
    const pgUrl = new URL(db.workerUrl);
    const { proxy, port } = await toxiproxy.proxy(`postgres-${label}`, `${pgUrl.hostname}:${pgUrl.port}`);
    const viaProxy = new URL(db.workerUrl);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(port);
    const tq = `faults-${crypto.randomUUID()}`;
    worker = startWorker(db, tq, {
      DATABASE_URL: viaProxy.toString(),
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '3s',
      DATABASE_STATEMENT_TIMEOUT: '5s',
      DATABASE_TCP_KEEPALIVE_IDLE: '5s',
    });
    const { detail, problems } = await body({ db, proxy, tq, worker });
    return { size: `${OWNERS} owners, ${docs} documents`, detail, problems };
  } finally {
    await worker?.kill('SIGTERM');
    await toxiproxy.stop();
    await db.close();
  }
}

type Scenario = {
  id: string;
  name: string;
  checks: string;
  run(): Promise<{ size: string; detail: string; problems: string[] }>;
};

const CORE = 'I1 I2 I3';

const scenarios: Scenario[] = [
  {
    id: 's1',
    name: 'worker killed with SIGKILL 3 times at random points of the cycle, restarted each time',
    checks: CORE,
    async run() {
      const db = await newDb('s1');
      const docs = await seed(db, OWNERS);
      const tq = `faults-${crypto.randomUUID()}`;
      const due = await countDueDocuments(db.admin, { asOfDate: AS_OF, thresholdsDays: THRESHOLDS, retentionDays: 90 });
      let worker = startWorker(db, tq);
      const handle = await startCycle(tq, FAULT_CYCLE);
      // Killed at random points of the cycle's progress (markers written), not of the clock, so the
      // kills land mid-cycle however fast the cycle is.
      for (const share of [0.1, 0.4, 0.7].map((s) => s + Math.random() * 0.2)) {
        await waitFor(
          `${Math.round(share * 100)} % of the markers`,
          async () => (await markerCount(db)) >= share * due,
          180_000,
          20,
        );
        await worker.kill('SIGKILL');
        worker = startWorker(db, tq);
      }
      const result = await handle.result();
      await worker.kill('SIGTERM');
      const problems = await invariants(db);
      if (result.status !== 'completed') problems.push(`cycle ended ${result.status}`);
      await db.close();
      return {
        size: `${OWNERS} owners, ${docs} documents`,
        detail: `${result.remindersSent} reminders, ${result.failedOwners} failed owners`,
        problems,
      };
    },
  },
  {
    id: 's2',
    name: 'PostgreSQL restarted mid-cycle (3 s down)',
    checks: CORE,
    async run() {
      const db = await newDb('s2');
      const docs = await seed(db, OWNERS);
      const tq = `faults-${crypto.randomUUID()}`;
      const worker = startWorker(db, tq);
      const handle = await startCycle(tq, FAULT_CYCLE);
      await waitFor('first events', async () => (await outboxCount(db)) > 0);
      await db.admin.end();
      await stack.postgres.restart(3_000);
      db.admin = createPool({ connectionString: db.ownerUrl, max: 4 });
      const result = await handle.result();
      // Owners whose retries ran out while the server was down are left for the next cycle.
      const rest = result.failedOwners > 0 ? await (await startCycle(tq)).result() : undefined;
      await worker.kill('SIGTERM');
      const problems = await invariants(db);
      if (result.status !== 'completed') problems.push(`cycle ended ${result.status}`);
      await db.close();
      return {
        size: `${OWNERS} owners, ${docs} documents`,
        detail: `${result.remindersSent} reminders, ${result.failedOwners} failed owners${rest ? `; next cycle reminded ${rest.remindersSent}` : ''}`,
        problems,
      };
    },
  },
  {
    id: 's3',
    name: 'Temporal dev server restarted mid-cycle (SQLite file, 2 s down)',
    checks: CORE,
    async run() {
      const db = await newDb('s3');
      const docs = await seed(db, OWNERS);
      const tq = `faults-${crypto.randomUUID()}`;
      const worker = startWorker(db, tq);
      const handle = await startCycle(tq, FAULT_CYCLE);
      await waitFor('first events', async () => (await outboxCount(db)) > 0);
      await stack.restartTemporal(2_000);
      const result = await handle.result();
      await worker.kill('SIGTERM');
      const problems = await invariants(db);
      if (result.status !== 'completed') problems.push(`cycle ended ${result.status}`);
      await db.close();
      return { size: `${OWNERS} owners, ${docs} documents`, detail: `${result.remindersSent} reminders`, problems };
    },
  },
  {
    id: 's4',
    name: 'three workers, two cycles started at once over the same data (allow-all)',
    checks: CORE,
    async run() {
      const db = await newDb('s4');
      const docs = await seed(db, OWNERS);
      const tq = `faults-${crypto.randomUUID()}`;
      const workers = [startWorker(db, tq), startWorker(db, tq), startWorker(db, tq)];
      const [a, b] = await Promise.all([startCycle(tq, FAULT_CYCLE), startCycle(tq, FAULT_CYCLE)]);
      const results = await Promise.all([a.result(), b.result()]);
      await Promise.all(workers.map((w) => w.kill('SIGTERM')));
      const problems = await invariants(db);
      const { rows } = await db.admin.query(
        `select count(*)::int as n from profile.outbox_messages o, jsonb_array_elements(o.payload->'documents') x`,
      );
      const sent = results[0].remindersSent + results[1].remindersSent;
      if (sent !== rows[0].n) problems.push(`results say ${sent} reminders, the outbox holds ${rows[0].n}`);
      await db.close();
      return {
        size: `${OWNERS} owners, ${docs} documents`,
        detail: `${results[0].remindersSent} + ${results[1].remindersSent} reminders, ${results[0].skippedAlreadyMarked + results[1].skippedAlreadyMarked} lost races`,
        problems,
      };
    },
  },
  {
    id: 's5',
    name: 'cancellation, then the time limit, mid-cycle; then a normal cycle',
    checks: CORE,
    async run() {
      const db = await newDb('s5');
      const docs = await seed(db, OWNERS);
      const tq = `faults-${crypto.randomUUID()}`;
      const worker = startWorker(db, tq);
      const cancelled = await startCycle(tq, { ownerConcurrency: 5 });
      await waitFor('first events', async () => (await outboxCount(db)) > 0);
      await cancelled.cancel();
      const c = await cancelled.result();
      const limited = await (await startCycle(tq, { ownerConcurrency: 1, maxRunDurationMs: 1_500 })).result();
      const normal = await (await startCycle(tq, FAULT_CYCLE)).result();
      await worker.kill('SIGTERM');
      const problems = await invariants(db);
      if (c.status !== 'cancelled') problems.push(`first cycle ended ${c.status}`);
      if (limited.status !== 'time-limit') problems.push(`second cycle ended ${limited.status}`);
      if (normal.status !== 'completed') problems.push(`third cycle ended ${normal.status}`);
      await db.close();
      return {
        size: `${OWNERS} owners, ${docs} documents`,
        detail: `${c.remindersSent} + ${limited.remindersSent} + ${normal.remindersSent} reminders`,
        problems,
      };
    },
  },
  {
    id: 's6',
    name: 'Kafka stopped during a cycle and the relay killed once with SIGKILL',
    checks: `${CORE} I4`,
    async run() {
      if (!stack.kafka) throw new Error("needs the stack's own broker (unset KAFKA_BROKERS)");
      const db = await newDb('s6');
      const owners = Math.min(OWNERS, 1_000);
      const docs = await seed(db, owners);
      const tq = `faults-${crypto.randomUUID()}`;
      const worker = startWorker(db, tq);
      let relay = startRelay(db);
      await stack.kafka.stop();
      const result = await (await startCycle(tq, FAULT_CYCLE)).result();
      await sleep(1_000);
      await relay.kill('SIGKILL');
      relay = startRelay(db);
      await sleep(2_000);
      await stack.kafka.start();
      await waitFor('the outbox to drain', async () => (await outboxCount(db, true)) === 0);
      await relay.kill('SIGTERM');
      await worker.kill('SIGTERM');
      const problems = await invariants(db, { kafka: true });
      const events = await outboxCount(db);
      await db.close();
      return {
        size: `${owners} owners, ${docs} documents`,
        detail: `${result.remindersSent} reminders in ${events} events, all on the topic`,
        problems,
      };
    },
  },
  {
    id: 's7',
    name: 'bad input: invalid configuration, extreme dates, unknown types, maximal lengths, missing or mis-migrated schema, wrong password',
    checks: 'exit code, message, no partial writes',
    async run() {
      const problems: string[] = [];
      const db = await newDb('s7');
      // Invalid configuration: every process refuses to start, exit 78, names the variable, writes nothing.
      const bad: Record<string, string> = {
        REMINDER_THRESHOLDS_DAYS: '7,30',
        REMINDER_BATCH_SIZE: '0',
        REMINDER_RETENTION_DAYS: '-1',
        REMINDER_MAX_RUN_DURATION: 'ten minutes',
        REMINDER_POLLING_INTERVAL: '24',
        REMINDER_OWNER_CONCURRENCY: '100000',
        TEMPORAL_ADDRESS: 'not an address',
        DATABASE_URL: 'mysql://x@y/z',
        KAFKA_BROKERS: 'nope',
        LOG_LEVEL: 'loud',
      };
      for (const [name, value] of Object.entries(bad)) {
        for (const entry of ['worker', 'relay'] as const) {
          const p = startProcess(entry, { DATABASE_URL: db.workerUrl, [name]: value });
          const code = await p.exited;
          const out = p.output.join('');
          if (code !== 78) problems.push(`${entry} with ${name}=${value} exited ${code}`);
          if (!out.includes(name)) problems.push(`${entry} with ${name}=${value} did not name the variable`);
        }
      }
      // Extreme dates, unknown types, maximal lengths.
      const owner = crypto.randomUUID();
      await db.admin.query(
        `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, payload_cipher) values
           (gen_random_uuid(), $1, gen_random_uuid(), 'Passport', '*', '0001-01-01', 'Active', '\\x00'),
           (gen_random_uuid(), $1, gen_random_uuid(), 'Passport', '*', '9999-12-31', 'Active', '\\x00'),
           (gen_random_uuid(), $1, gen_random_uuid(), 'InterplanetaryPermitOfMarsColony', repeat('*', 64), $2::date + 3, 'Active', '\\x00')`,
        [owner, AS_OF],
      );
      const tq = `faults-${crypto.randomUUID()}`;
      const worker = startWorker(db, tq);
      const result = await (await startCycle(tq)).result();
      if (result.remindersSent !== 1) problems.push(`extreme data: expected 1 reminder, got ${result.remindersSent}`);
      problems.push(...(await invariants(db)));
      await worker.kill('SIGTERM');
      // A database without the schema, one that lost its dedupe index, and a wrong password: the worker
      // refuses to start, says why, prints no password, and nothing is written.
      const emptyUrl = await createDatabase(
        stack.postgres.adminUrl,
        `faults_empty_${crypto.randomBytes(3).toString('hex')}`,
      );
      const misMigrated = await newDb('s7b');
      await misMigrated.admin.query('drop index profile.ux_document_expiry_reminders_dedupe');
      for (const [label, url, code, expect] of [
        [
          'missing schema',
          databaseUrl(emptyUrl, { user: WORKER_ROLE, password: LOCAL_ROLE_PASSWORDS.worker }),
          69,
          /person_documents/,
        ],
        ['mis-migrated schema', misMigrated.workerUrl, 69, /ux_document_expiry_reminders_dedupe/],
        [
          'wrong password',
          databaseUrl(db.workerUrl, { password: 'not-the-password' }),
          1,
          /password authentication failed/,
        ],
      ] as const) {
        const before = await outboxCount(db);
        const w = startWorker(db, `faults-${crypto.randomUUID()}`, { DATABASE_URL: url });
        const exit = await w.exited;
        const out = w.output.join('');
        if (exit !== code) problems.push(`${label}: worker exited ${exit}, expected ${code}`);
        if (!expect.test(out)) problems.push(`${label}: unclear message: ${out.slice(0, 300)}`);
        if (out.includes('not-the-password') || out.includes(LOCAL_ROLE_PASSWORDS.worker))
          problems.push(`${label}: password printed`);
        if ((await outboxCount(db)) !== before) problems.push(`${label}: rows written`);
      }
      await misMigrated.close();
      await db.close();
      return {
        size: `${Object.keys(bad).length * 2} bad configurations, 3 odd documents, 3 broken databases`,
        detail: `${problems.length} problems`,
        problems,
      };
    },
  },
  {
    id: 's9',
    name: "the worker's TCP path to PostgreSQL cut mid-group (Toxiproxy), the backend left holding its transaction; path back after 8 s",
    checks: CORE,
    async run() {
      return throughToxiproxy('s9', async ({ db, proxy, tq, worker }) => {
        const handle = await startCycle(tq, FAULT_CYCLE);
        await waitFor('first events', async () => (await outboxCount(db)) > 0);
        // Data stops both ways and the connections stay open: the backend of a group in flight keeps
        // its transaction and its owners' locks, and the worker hears nothing.
        const cutAt = Date.now();
        await proxy.addToxic({
          name: 'cut-down',
          type: 'timeout',
          stream: 'downstream',
          toxicity: 1,
          attributes: { timeout: 0 },
        });
        await proxy.addToxic({
          name: 'cut-up',
          type: 'timeout',
          stream: 'upstream',
          toxicity: 1,
          attributes: { timeout: 0 },
        });
        await waitFor('a worker backend idle in its transaction', async () => (await orphans(db)) > 0, 30_000);
        // PostgreSQL ends the orphans (idle-in-transaction timeout) while the path is still cut.
        let heldMs: number | undefined;
        while (Date.now() - cutAt < 8_000) {
          if (heldMs === undefined && (await orphans(db)) === 0) heldMs = Date.now() - cutAt;
          await sleep(100);
        }
        await (await proxy.getToxic('cut-down')).remove();
        await (await proxy.getToxic('cut-up')).remove();
        await waitFor('the orphaned transactions to end', async () => (await orphans(db)) === 0, 120_000);
        heldMs ??= Date.now() - cutAt;
        const result = await handle.result();
        // Owners whose retries ran out while the path was cut are left for the next cycle, as in s2.
        const rest = result.failedOwners > 0 ? await (await startCycle(tq)).result() : undefined;
        await worker.kill('SIGTERM');
        const problems = await invariants(db);
        if (result.status !== 'completed') problems.push(`cycle ended ${result.status}`);
        return {
          detail:
            `${result.remindersSent} reminders, ${result.ownersBusy} owners busy and retried, ${result.failedOwners} failed owners` +
            `${rest ? `; next cycle reminded ${rest.remindersSent}` : ''}; orphaned transactions ended ${(heldMs / 1000).toFixed(1)} s after the cut`,
          problems,
        };
      });
    },
  },
  {
    id: 's10',
    name: '200 ms of latency on every packet between the worker and PostgreSQL, for the whole cycle',
    checks: CORE,
    async run() {
      return throughToxiproxy('s10', async ({ db, proxy, tq, worker }) => {
        await proxy.addToxic({
          name: 'slow-down',
          type: 'latency',
          stream: 'downstream',
          toxicity: 1,
          attributes: { latency: 200, jitter: 0 },
        });
        await proxy.addToxic({
          name: 'slow-up',
          type: 'latency',
          stream: 'upstream',
          toxicity: 1,
          attributes: { latency: 200, jitter: 0 },
        });
        const started = Date.now();
        const result = await (await startCycle(tq, FAULT_CYCLE)).result();
        const seconds = Math.round((Date.now() - started) / 1000);
        await worker.kill('SIGTERM');
        const problems = await invariants(db);
        if (result.status !== 'completed') problems.push(`cycle ended ${result.status}`);
        if (result.failedOwners > 0) problems.push(`${result.failedOwners} failed owners`);
        return {
          detail: `${result.remindersSent} reminders in ${seconds} s, ${result.failedOwners} failed owners`,
          problems,
        };
      });
    },
  },
];

async function main(): Promise<void> {
  const only = args.only?.split(',');
  const selected = scenarios.filter((s) => !only || only.includes(s.id));
  const temporalDbFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'faults-temporal-')), 'temporal.db');
  say(`fault suite: ${selected.length} scenarios × ${REPEAT}, ${OWNERS} owners`);
  stack = await startStack({ ui: false, temporalDbFile, log: (l) => say(`[stack] ${l}`) });
  const connection = await Connection.connect({ address: stack.temporal.address });
  client = new Client({ connection });
  const rows: Row[] = [];
  try {
    for (const scenario of selected) {
      for (let i = 1; i <= REPEAT; i++) {
        const started = Date.now();
        let row: Row;
        try {
          const { size, detail, problems } = await scenario.run();
          row = {
            scenario: `${scenario.id}: ${scenario.name}`,
            repetitions: i,
            dataSize: size,
            checks: scenario.checks,
            result: problems.length ? `FAIL: ${problems.join('; ')}` : `pass (${detail})`,
            seconds: 0,
            ok: problems.length === 0,
          };
        } catch (err) {
          row = {
            scenario: `${scenario.id}: ${scenario.name}`,
            repetitions: i,
            dataSize: '',
            checks: scenario.checks,
            result: `FAIL: ${(err as Error).message}`,
            seconds: 0,
            ok: false,
          };
        }
        row.seconds = Math.round((Date.now() - started) / 1000);
        rows.push(row);
        say(`${row.ok ? 'PASS' : 'FAIL'} ${row.scenario} #${i} (${row.seconds} s): ${row.result}`);
      }
    }
    // Security: no secret or document value in anything the processes printed.
    const printed = allOutput.join('');
    const leaks = [
      LOCAL_ROLE_PASSWORDS.worker,
      LOCAL_ROLE_PASSWORDS.relay,
      new URL(stack.postgres.adminUrl).password,
    ].filter((s) => printed.includes(s));
    rows.push({
      scenario: 's8: no password in any process output of the suite',
      repetitions: 1,
      dataSize: `${printed.length} bytes of output`,
      checks: 'scan',
      result: leaks.length ? `FAIL: ${leaks.length} secrets printed` : 'pass',
      seconds: 0,
      ok: leaks.length === 0,
    });
  } finally {
    await connection.close();
    await stack.stop();
  }
  const table = [
    '| scenario | run | data size | invariant checks | result | seconds |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) => `| ${r.scenario} | ${r.repetitions} | ${r.dataSize} | ${r.checks} | ${r.result} | ${r.seconds} |`,
    ),
  ].join('\n');
  say(`\n${table}\n`);
  if (args.report) {
    const command = `npm run test:faults -- --owners ${OWNERS} --repeat ${REPEAT}${only ? ` --only ${only.join(',')}` : ''}`;
    const reportPath = path.resolve(root, args.report);
    const text = fs.existsSync(reportPath) ? fs.readFileSync(reportPath, 'utf8') : '';
    const block = `<!-- faults:start -->\nRun on ${new Date().toISOString()} with \`${command}\`:\n\n${table}\n<!-- faults:end -->`;
    fs.writeFileSync(
      reportPath,
      text.includes('<!-- faults:start -->')
        ? text.replace(/<!-- faults:start -->[\s\S]*<!-- faults:end -->/, block)
        : `${text}\n${block}\n`,
    );
  }
  const failed = rows.filter((r) => !r.ok).length;
  say(`${rows.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((err: Error) => {
  process.stderr.write(`fault suite failed: ${err.stack}\n`);
  process.exit(1);
});
