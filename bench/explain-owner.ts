/**
 * `npx tsx bench/explain-owner.ts [outboxRows] [documents]`: `explain`'s database part (issue 38, item 3) on
 * a steady-sized database: the steady workload's documents (default 1,000,000 over 400,000 owners), a year
 * of markers for 1,000,000 documents, `outboxRows` outbox rows (default 1,000,000: a week of events keyed by
 * those owners, 95 % published) and one owner with a year of markers and a week of events. Prints the plan
 * of the owner's outbox read (EXPLAIN ANALYZE) and its time before and after `ix_outbox_messages_key`
 * (migration 017), and the median time of explain's reads as the support role: the snapshot (owner,
 * documents, markers, next cycle) and the outbox. Temporal's part is not measured. Exits non-zero when the
 * outbox read still scans the table with the index in place. Needs STACK_DATABASE_ADMIN_URL (a running
 * `npm run stack`); drops its database.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { createMigratedDatabase } from '../scripts/stack/database';
import { loadConfig } from '../src/config';
import type { CandidateWindow } from '../src/db/candidates';
import { selectOwnerEvents } from '../src/db/explain';
import type { Queryable } from '../src/db/pool';
import { addDays } from '../src/domain/dates';
import { readDatabase, readOutbox } from '../src/operations/explain';
import { seedDocuments } from './seed';

const AS_OF_DATE = '2026-09-02';
const ROUNDS = 7;
const OWNER = crypto.randomUUID();

/** The statement `selectOwnerEvents` runs, as it sends it (text and parameters), without running it. */
async function outboxStatement(): Promise<{ text: string; values: unknown[] }> {
  let sent: { text: string; values: unknown[] } | undefined;
  const capture = {
    query: (text: string, values: unknown[]) => {
      sent = { text, values };
      return Promise.resolve({ rows: [] });
    },
  } as unknown as Queryable;
  await selectOwnerEvents(capture, [OWNER]);
  return sent!;
}

/** The owner's documents over a year (expiring from 200 days before AsOf to 160 after) and their markers. */
async function seedOwner(db: pg.Client): Promise<{ documents: number; markers: number }> {
  const { rowCount: documents } = await db.query(
    `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, payload_cipher)
     select gen_random_uuid(), $1, $1, 'ForeignPassport', '**** ' || i, $2::date + (i * 45 - 200), 'Active', '\\x00'
       from generate_series(0, 7) i`,
    [OWNER, AS_OF_DATE],
  );
  const { rowCount: markers } = await db.query(
    `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at, queued_by)
     select gen_random_uuid(), d.id, d.owner_user_id, d.type, t, d.expires_at, (d.expires_at - t)::timestamptz,
            gen_random_uuid() || '/7'
       from profile.person_documents d, unnest(array[30, 7, 1, 0]) t
      where d.owner_user_id = $1 and d.expires_at - t <= $2::date`,
    [OWNER, AS_OF_DATE],
  );
  return { documents: documents ?? 0, markers: markers ?? 0 };
}

/** A year of other owners' markers: `n` rows for documents that are not in the table (the ledger's size only). */
async function seedMarkers(db: pg.Client, n: number): Promise<void> {
  await db.query(
    `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at, queued_by)
     select gen_random_uuid(), gen_random_uuid(), md5('bench-owner-' || (i % 400000))::uuid, 'Inn', (array[30, 7, 1, 0])[1 + i % 4],
            $2::date - (i % 365), ($2::date - (i % 365))::timestamptz, gen_random_uuid() || '/3'
       from generate_series(1, $1::int) i`,
    [n, AS_OF_DATE],
  );
}

/** `n` outbox rows over the last 7 days, keyed by the bench's owners (95 % published), and 7 of the owner's. */
async function seedOutbox(db: pg.Client, n: number): Promise<void> {
  const insert = `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id, created_at, published_at)`;
  await db.query(
    `${insert}
     select gen_random_uuid(), 'Profile', gen_random_uuid(), 't', md5('bench-owner-' || (i % 400000))::uuid::text, 'Bench', 1,
            jsonb_build_object('documents', jsonb_build_array(jsonb_build_object('documentId', gen_random_uuid(), 'thresholdDays', 7))),
            'cycle-' || (i % 7), now() - make_interval(secs => i * 604800.0 / $1),
            case when i % 20 <> 0 then now() - make_interval(secs => i * 604800.0 / $1 - 5) end
       from generate_series(1, $1::int) i`,
    [n],
  );
  await db.query(
    `${insert}
     select gen_random_uuid(), 'Profile', $1, 't', $1::text, 'Bench', 1,
            jsonb_build_object('documents', jsonb_build_array(jsonb_build_object('documentId', d.id, 'thresholdDays', 7))),
            'cycle-' || i, now() - make_interval(days => i), now() - make_interval(days => i)
       from generate_series(0, 6) i, lateral (select id from profile.person_documents where owner_user_id = $1 limit 1) d`,
    [OWNER],
  );
}

/** The median of `rounds` timed calls of `fn`, in ms (one call first, unmeasured: a warm cache). */
async function medianMs(
  fn: () => Promise<unknown>,
  rounds = ROUNDS,
): Promise<{ median: number; min: number; max: number }> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < rounds; i += 1) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { median: round(times[Math.floor(times.length / 2)]), min: round(times[0]), max: round(times.at(-1)!) };
}

async function plan(db: pg.Client, statement: { text: string; values: unknown[] }): Promise<string> {
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(
    `explain (analyze, buffers, costs off) ${statement.text}`,
    statement.values,
  );
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

async function main() {
  const outboxRows = Number(process.argv[2] ?? 1_000_000);
  const documents = Number(process.argv[3] ?? 1_000_000);
  const adminUrl = process.env.STACK_DATABASE_ADMIN_URL;
  if (!adminUrl) throw new Error('STACK_DATABASE_ADMIN_URL is not set: start `npm run stack` first');
  const database = await createMigratedDatabase(adminUrl, { prefix: 'bench_explain' });
  const pool = new pg.Pool({ connectionString: database.ownerUrl, max: 2 });
  const db = new pg.Client({ connectionString: database.ownerUrl });
  await db.connect();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  try {
    log(`seeding ${documents} documents, 1000000 markers, ${outboxRows} outbox rows`);
    await seedDocuments(pool, {
      documents,
      owners: Math.round(documents * 0.4),
      dueDocuments: 10_000,
      dueOwners: 8_000,
      asOfDate: AS_OF_DATE,
    });
    const owner = await seedOwner(db);
    await seedMarkers(db, 1_000_000);
    await seedOutbox(db, outboxRows);
    await db.query('vacuum analyze');
    const statement = await outboxStatement();
    const window: CandidateWindow = { asOfDate: AS_OF_DATE, ...pickWindow() };
    const read = () => readOutbox(database.supportUrl, 'SUPPORT_DATABASE_URL', [OWNER]);

    await db.query('drop index profile.ix_outbox_messages_key');
    await db.query('analyze profile.outbox_messages');
    const before = { plan: await plan(db, statement), outboxMs: await medianMs(read, 3) };
    const t0 = performance.now();
    await db.query(
      'create index ix_outbox_messages_key on profile.outbox_messages (message_key, created_at, id) where published_at is not null',
    );
    const indexBuildMs = Math.round(performance.now() - t0);
    await db.query('analyze profile.outbox_messages');
    const after = { plan: await plan(db, statement), outboxMs: await medianMs(read) };
    const snapshotMs = await medianMs(() => readDatabase(database.supportUrl, { ownerUserId: OWNER }, window));
    const both = await medianMs(async () => {
      await readDatabase(database.supportUrl, { ownerUserId: OWNER }, window);
      await read();
    });
    const events = (await read()).length;
    const { rows: sizes } = await db.query<{ relation: string; size: string }>(
      `select c.relname as relation, pg_size_pretty(pg_total_relation_size(c.oid)) as size
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'profile' and c.relkind = 'r' order by c.relname`,
    );
    process.stdout.write(
      `${JSON.stringify(
        {
          outboxRows,
          documents,
          owner: {
            ...owner,
            events,
            asOfDate: AS_OF_DATE,
            window: addDays(AS_OF_DATE, -200) + '…' + addDays(AS_OF_DATE, 160),
          },
          before: { outboxMs: before.outboxMs },
          after: { outboxMs: after.outboxMs, snapshotMs, databasePartMs: both },
          indexBuildMs,
          sizes,
        },
        null,
        1,
      )}\n\n-- the owner's outbox read without ix_outbox_messages_key\n${before.plan}\n\n-- with it\n${after.plan}\n`,
    );
    if (/Seq Scan on outbox_messages/.test(after.plan)) {
      throw new Error('the owner outbox read still scans outbox_messages with ix_outbox_messages_key in place');
    }
  } finally {
    await db.end();
    await pool.end();
    await database.drop();
  }
}

/** The thresholds and retention `explain` judges with when no cycle recorded any: the configuration's defaults. */
function pickWindow(): Pick<CandidateWindow, 'thresholdsDays' | 'retentionDays'> {
  const { thresholdsDays, retentionDays } = loadConfig({}).cycle;
  return { thresholdsDays, retentionDays };
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
