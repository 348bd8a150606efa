/**
 * s7: bad input. Invalid configuration, odd documents and broken databases must each be refused or
 * handled with a clear message, an exit code that says why, no password printed and nothing half written.
 */
import crypto from 'node:crypto';
import { createMigratedDatabase, LOCAL_ROLE_PASSWORDS } from '../../stack/database';
import { databaseUrl } from '../../stack/postgres';
import { AS_OF, newDb, newTaskQueue, startCycle, type FaultDb, type Harness } from '../harness';
import { invariants, outboxCount } from '../invariants';
import { startProcess, startWorker } from '../processes';
import type { Scenario } from '../runner';

/** One bad value a variable at a time; each must stop both processes at start. */
const BAD_CONFIGURATION: Record<string, string> = {
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

/** Invalid configuration: every process refuses to start, exit 78, names the variable, writes nothing. */
async function invalidConfiguration(h: Harness, db: FaultDb): Promise<string[]> {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(BAD_CONFIGURATION)) {
    for (const entry of ['worker', 'relay'] as const) {
      const p = startProcess(h, entry, { DATABASE_URL: db.workerUrl, [name]: value });
      const code = await p.exited;
      const out = p.output.join('');
      if (code !== 78) problems.push(`${entry} with ${name}=${value} exited ${code}`);
      if (!out.includes(name)) problems.push(`${entry} with ${name}=${value} did not name the variable`);
    }
  }
  return problems;
}

/** Extreme dates, unknown types, maximal lengths: one reminder (the odd type), the invariants hold. */
async function oddDocuments(h: Harness, db: FaultDb): Promise<string[]> {
  const problems: string[] = [];
  const owner = crypto.randomUUID();
  await db.admin.query(
    `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, payload_cipher) values
       (gen_random_uuid(), $1, gen_random_uuid(), 'Passport', '*', '0001-01-01', 'Active', '\\x00'),
       (gen_random_uuid(), $1, gen_random_uuid(), 'Passport', '*', '9999-12-31', 'Active', '\\x00'),
       (gen_random_uuid(), $1, gen_random_uuid(), 'InterplanetaryPermitOfMarsColony', repeat('*', 64), $2::date + 3, 'Active', '\\x00')`,
    [owner, AS_OF],
  );
  const tq = newTaskQueue();
  const worker = startWorker(h, db, tq);
  try {
    const result = await (await startCycle(h, tq)).result();
    if (result.remindersSent !== 1) problems.push(`extreme data: expected 1 reminder, got ${result.remindersSent}`);
    problems.push(...(await invariants(db)));
  } finally {
    await worker.kill('SIGTERM');
  }
  return problems;
}

/**
 * A database without the schema, one that lost its dedupe index, and a wrong password: the worker
 * refuses to start, says why, prints no password, and nothing is written.
 */
async function brokenDatabases(h: Harness, db: FaultDb): Promise<string[]> {
  const problems: string[] = [];
  const empty = await createMigratedDatabase(h.stack.postgres.adminUrl, { prefix: 'faults_empty', migrate: false });
  const misMigrated = await newDb(h, 's7b');
  try {
    await misMigrated.admin.query('drop index profile.ux_document_expiry_reminders_dedupe');
    for (const [label, url, code, expect] of [
      ['missing schema', empty.workerUrl, 69, /person_documents/],
      ['mis-migrated schema', misMigrated.workerUrl, 69, /ux_document_expiry_reminders_dedupe/],
      [
        'wrong password',
        databaseUrl(db.workerUrl, { password: 'not-the-password' }),
        1,
        /password authentication failed/,
      ],
    ] as const) {
      const before = await outboxCount(db);
      const w = startWorker(h, db, newTaskQueue(), { DATABASE_URL: url });
      const exit = await w.exited;
      const out = w.output.join('');
      if (exit !== code) problems.push(`${label}: worker exited ${exit}, expected ${code}`);
      if (!expect.test(out)) problems.push(`${label}: unclear message: ${out.slice(0, 300)}`);
      if (out.includes('not-the-password') || out.includes(LOCAL_ROLE_PASSWORDS.worker))
        problems.push(`${label}: password printed`);
      if ((await outboxCount(db)) !== before) problems.push(`${label}: rows written`);
    }
  } finally {
    await misMigrated.close();
  }
  return problems;
}

export const badInput: Scenario = {
  id: 's7',
  name: 'bad input: invalid configuration, extreme dates, unknown types, maximal lengths, missing or mis-migrated schema, wrong password',
  checks: 'exit code, message, no partial writes',
  async run(h) {
    const db = await newDb(h, 's7');
    try {
      const problems = [
        ...(await invalidConfiguration(h, db)),
        ...(await oddDocuments(h, db)),
        ...(await brokenDatabases(h, db)),
      ];
      return {
        size: `${Object.keys(BAD_CONFIGURATION).length * 2} bad configurations, 3 odd documents, 3 broken databases`,
        detail: `${problems.length} problems`,
        problems,
      };
    } finally {
      await db.close();
    }
  },
};
