/**
 * A database whose DateStyle is `SQL, DMY` (the server's or the database's setting, not the job's): every
 * session the job opens asks for ISO, so dates read the same and the sliced first page keeps expiry order.
 */
import pg from 'pg';
import { selectCandidatePage } from '../../src/db/candidates';
import { createPool } from '../../src/db/pool';
import { relaySchemaProblems, workerSchemaProblems } from '../../src/db/schema-check';
import { insertDocuments } from '../support/data';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';
const WINDOW = { asOfDate: AS_OF_DATE, thresholdsDays: [30, 7, 1, 0], retentionDays: 90 };

const stack = useIntegration('datestyle', { resetEachTest: false });

beforeAll(async () => {
  // Expiring from 2026-08-20 to 2026-09-24: as `dd/mm/yyyy` text, 05/09 sorts before 30/08.
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 120 }, (_, i) => ({ daysLeft: (i % 36) - 13 })),
  );
  await stack.db.admin.query(`alter database ${stack.db.name} set datestyle = 'SQL, DMY'`);
});

/** A pool opened after the database's DateStyle changed, as the job opens them. */
async function withJobPool<T>(url: string, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = createPool({ connectionString: url, max: 4 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

test('the database really answers SQL, DMY to a session that does not ask for ISO', async () => {
  const raw = new pg.Client({ connectionString: stack.db.workerUrl });
  await raw.connect();
  try {
    expect((await raw.query(`select '2026-08-30'::date::text as d`)).rows[0].d).toBe('30/08/2026');
    expect(await workerSchemaProblems(raw)).toEqual([expect.stringContaining('DateStyle is "SQL, DMY"')]);
  } finally {
    await raw.end();
  }
});

test('on a database whose DateStyle is SQL, DMY the first page scanned in slices holds the earliest due documents, in expiry order', async () => {
  const { rows: expected } = await stack.db.admin.query<{ id: string; expires_at: string }>(
    `select id, to_char(expires_at, 'YYYY-MM-DD') as expires_at from profile.person_documents
      where expires_at >= $1::date - 90 and expires_at <= $1::date + 30
      order by expires_at, id limit 25`,
    [AS_OF_DATE],
  );
  const page = await withJobPool(stack.db.workerUrl, (pool) => selectCandidatePage(pool, WINDOW, null, 25, 4));

  expect(page.map((r) => [r.expires_at, r.id])).toEqual(expected.map((r) => [r.expires_at, r.id]));
  expect(page[0].expires_at).toBe('2026-08-20');
});

test("the worker's and the relay's sessions ask for ISO dates, and their start-up checks pass", async () => {
  await withJobPool(stack.db.workerUrl, async (pool) => {
    expect((await pool.query('show DateStyle')).rows[0].DateStyle).toMatch(/^ISO,/);
    expect(await workerSchemaProblems(pool)).toEqual([]);
  });
  await withJobPool(stack.db.relayUrl, async (pool) => {
    expect(await relaySchemaProblems(pool)).toEqual([]);
  });
});
