/**
 * `npx tsx bench/cleanup-index.ts [rows]`: the relay's cleanup (issue 19, item 4) at `rows` published rows
 * (default 1,000,000, spread over 7.35 days so that ~5 % are past a 7-day retention), before and after
 * `ix_outbox_messages_published` (migration 012): a pass (5,000-row deletes until one deletes none) and a
 * pass that finds nothing. Needs STACK_DATABASE_ADMIN_URL (a running `npm run stack`); drops its database.
 */
import pg from 'pg';
import { createMigratedDatabase } from '../scripts/stack/database';
import { DELETE_PUBLISHED_SQL } from '../src/db/outbox';

const RETENTION_S = 7 * 86_400;
/** The statement before issue 19: the ids through the index (if any), joined back by id. */
const OLD_SQL = `delete from profile.outbox_messages
  where id in (select id from profile.outbox_messages where published_at < now() - make_interval(secs => $1) limit $2)`;

async function seedOld(db: pg.Client, rows: number, from: number) {
  await db.query(
    `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id, created_at, published_at)
     select gen_random_uuid(), 'Profile', gen_random_uuid(), 't', md5(i::text), 'Bench', 1, '{"k":1}', 'c',
            now() - make_interval(secs => i * $3::float8), now() - make_interval(secs => i * $3::float8)
       from generate_series($1::int, $2::int) i`,
    [from, rows, (RETENTION_S * 1.05) / rows],
  );
}

async function pass(db: pg.Client, sql: string): Promise<{ ms: number; deleted: number; statements: number }> {
  const t0 = performance.now();
  let deleted = 0;
  let statements = 0;
  for (let n = -1; n !== 0;) {
    n = (await db.query(sql, [RETENTION_S, 5_000])).rowCount ?? 0;
    deleted += n;
    statements += 1;
  }
  return { ms: Math.round(performance.now() - t0), deleted, statements };
}

async function main() {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const adminUrl = process.env.STACK_DATABASE_ADMIN_URL;
  if (!adminUrl) throw new Error('STACK_DATABASE_ADMIN_URL is not set: start `npm run stack` first');
  const database = await createMigratedDatabase(adminUrl, { prefix: 'bench_cleanup' });
  const db = new pg.Client({ connectionString: database.ownerUrl });
  await db.connect();
  try {
    const firstOld = Math.floor(rows / 1.05);
    await seedOld(db, rows, 1);
    await db.query('drop index profile.ix_outbox_messages_published');
    await db.query('vacuum analyze profile.outbox_messages');
    const before = { pass: await pass(db, OLD_SQL), empty: await pass(db, OLD_SQL) };
    await seedOld(db, rows, firstOld + 1);
    const t0 = performance.now();
    await db.query(
      'create index ix_outbox_messages_published on profile.outbox_messages (published_at) where published_at is not null',
    );
    const buildMs = Math.round(performance.now() - t0);
    await db.query('vacuum analyze profile.outbox_messages');
    const after = { pass: await pass(db, DELETE_PUBLISHED_SQL), empty: await pass(db, DELETE_PUBLISHED_SQL) };
    process.stdout.write(`${JSON.stringify({ rows, before, after, indexBuildMs: buildMs }, null, 1)}\n`);
  } finally {
    await db.end();
    await database.drop();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
