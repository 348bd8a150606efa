/**
 * What every fault scenario stands on: the local stack and a Temporal client, a paced and seeded
 * database of its own, cycles started on a task queue of its own, polling, and Toxiproxy in front of
 * PostgreSQL.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Kafka } from 'kafkajs';
import pg from 'pg';
import type { Proxy, ToxicType } from 'toxiproxy-node-client';
import { createPool } from '../../src/db/pool';
import type { CycleInput } from '../../src/domain/cycle';
import { WORKFLOW_TYPE } from '../../src/domain/names';
import type { CycleWorkflow } from '../../src/workflows';
import type { Stack } from '../stack';
import { createMigratedDatabase, stackRolePasswords, type MigratedDatabase } from '../stack/database';
import type { RunningToxiproxy } from '../toxiproxy';

/** The date every cycle of the suite runs as of; the seed spreads expiry dates around it. */
export const AS_OF = '2026-09-02';
export const THRESHOLDS = [30, 7, 1, 0];

/**
 * How the scenarios' cycles run: small owner groups, several in flight, so a fault lands between many
 * groups, some committed, some in flight, some not started.
 */
export const FAULT_CYCLE: CycleInput = { ownerConcurrency: 20, ownerGroupSize: 5 };

/**
 * Every marker statement sleeps this long, so a cycle over `--owners 1000` lasts seconds and the faults
 * land mid-cycle: the grouped cycle claims 1,000 owners in well under a second on its own.
 */
const PACE_SECONDS = 0.08;

/** The running suite, handed to every scenario. */
export interface Harness {
  stack: Stack;
  client: Client;
  /** `--owners`: how many owners a scenario seeds. */
  owners: number;
  /** `--partitions`: every cycle the scenarios start runs its day in this many partitions. */
  partitions?: number;
  /** `--seed` (or `FAULTS_SEED`): the seed of every random choice of the chaos scenario (s11), so a run replays. */
  seed: number;
  /**
   * What the invariants read the topic with: the brokers of the plaintext dev stack, or on the production
   * profile a client logged in as its admin over SASL_SSL (the relay's user may only write).
   */
  topicReader: string | Kafka;
  /** Everything the child processes printed, for the closing scan for secrets. */
  output: string[];
  say(line: string): void;
}

export interface FaultDb extends MigratedDatabase {
  /** Owner connection; replaced after a server restart. */
  admin: pg.Pool;
  /** Ends `admin`; the database stays (the stack's own server goes, data and all, when the suite stops). */
  close(): Promise<void>;
}

/** A migrated database named after `label`, with the pacing trigger on the marker table. */
export async function newDb(h: Harness, label: string): Promise<FaultDb> {
  // The roles' passwords of the stack (the production profile's own), so its workers' URLs log in.
  const created = await createMigratedDatabase(h.stack.postgres.adminUrl, {
    prefix: `faults_${label}`,
    rolePasswords: stackRolePasswords(h.stack.env),
  });
  const pace = new pg.Client({ connectionString: created.ownerUrl });
  await pace.connect();
  await pace.query(`
    create function profile.faults_pace() returns trigger language plpgsql as $$
    begin perform pg_sleep(${PACE_SECONDS}); return null; end $$;
    create trigger faults_pace after insert on profile.document_expiry_reminders
      for each statement execute function profile.faults_pace();`);
  await pace.end();
  const db: FaultDb = {
    ...created,
    admin: createPool({ connectionString: created.ownerUrl, max: 4 }),
    // A scenario that failed between ending the pool and replacing it must not fail again here.
    close: async () => {
      if (!db.admin.ended) await db.admin.end();
    },
  };
  return db;
}

/** `owners` investors with 1–3 documents each, spread over the window and around it, set-based. */
export async function seed(db: FaultDb, owners: number): Promise<number> {
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

/** A task queue no other scenario's workers poll. */
export const newTaskQueue = (): string => `faults-${crypto.randomUUID()}`;

/** Starts a cycle as of {@link AS_OF} on `taskQueue`, with `input`'s overrides. */
export function startCycle(
  h: Harness,
  taskQueue: string,
  input: CycleInput = {},
): Promise<WorkflowHandle<CycleWorkflow>> {
  return h.client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue,
    workflowId: `faults-${crypto.randomUUID()}`,
    args: [{ asOf: AS_OF, ...(h.partitions ? { partitions: h.partitions } : {}), ...input }],
  });
}

export { sleep };

/** Polls `check` every `everyMs` until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 180_000,
  everyMs = 200,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * A proxy in front of `db`'s server and the worker variables that send a worker through it, with short
 * session limits so an orphaned transaction ends within seconds: idle in transaction 3 s, statements
 * 5 s (the client gives up 5 s later).
 */
export async function proxyToPostgres(
  toxiproxy: RunningToxiproxy,
  db: FaultDb,
  label: string,
): Promise<{ proxy: Proxy; workerEnv: Record<string, string> }> {
  const pgUrl = new URL(db.workerUrl);
  const { proxy, port } = await toxiproxy.proxy(`postgres-${label}`, `${pgUrl.hostname}:${pgUrl.port}`);
  const viaProxy = new URL(db.workerUrl);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(port);
  return {
    proxy,
    workerEnv: {
      DATABASE_URL: viaProxy.toString(),
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '3s',
      DATABASE_STATEMENT_TIMEOUT: '5s',
      DATABASE_TCP_KEEPALIVE_IDLE: '5s',
    },
  };
}

/**
 * Adds a toxic of `type` to every connection through `proxy`, server to client (`<name>-down`) first, then
 * client to server (`<name>-up`); resolves with a function that removes both in that order.
 */
export async function toxicBothWays<T>(
  proxy: Proxy,
  name: string,
  type: ToxicType,
  attributes: T,
): Promise<() => Promise<void>> {
  const down = await proxy.addToxic<T>({ name: `${name}-down`, type, stream: 'downstream', toxicity: 1, attributes });
  const up = await proxy.addToxic<T>({ name: `${name}-up`, type, stream: 'upstream', toxicity: 1, attributes });
  return async () => {
    await down.remove();
    await up.remove();
  };
}
