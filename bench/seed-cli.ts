/**
 * `npm run bench:seed -- --documents N --owners M [--due-today K] [--due-owners O] [--as-of YYYY-MM-DD]
 *                        [--database URL] [--drop-indexes true|false]`
 *
 * Fills `profile.person_documents` of an already migrated database (owner connection: --database, else
 * MIGRATION_DATABASE_URL, else DATABASE_URL) with the benchmark mix of bench/seed.ts, set-based, one
 * statement per ~1M documents with a progress line each, then ANALYZE.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { seedDocuments } from './seed';

const { values: a } = parseArgs({
  options: {
    documents: { type: 'string', default: '1000000' },
    owners: { type: 'string' },
    'due-today': { type: 'string', default: '0' },
    'due-owners': { type: 'string' },
    'as-of': { type: 'string', default: new Date().toISOString().slice(0, 10) },
    database: { type: 'string' },
    'drop-indexes': { type: 'string' },
  },
});

async function main(): Promise<void> {
  const url = a.database ?? process.env.MIGRATION_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!url) throw new Error('give --database URL (or MIGRATION_DATABASE_URL / DATABASE_URL) of a migrated database');
  const documents = Number(a.documents);
  const owners = Number(a.owners ?? Math.ceil(documents / 5.5));
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    const r = await seedDocuments(pool, {
      documents,
      owners,
      dueDocuments: Number(a['due-today']),
      dueOwners: a['due-owners'] ? Number(a['due-owners']) : undefined,
      asOfDate: a['as-of']!,
      dropIndexes: a['drop-indexes'] === undefined ? undefined : a['drop-indexes'] === 'true',
      log: (l) => process.stdout.write(`${l}\n`),
    });
    process.stdout.write(`${JSON.stringify(r)}\n`);
  } finally {
    await pool.end();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`bench-seed failed: ${err.message}\n`);
  process.exit(1);
});
