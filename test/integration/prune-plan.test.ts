/**
 * The prune's delete at 2,000,000 ledger rows (issue 28, item 1.6), as the relay's cleanup is checked in
 * relay-resilience: it walks the expiry index and reads only the rows it deletes, whatever the statistics say.
 */
import { DELETE_EXPIRED_MARKERS_SQL } from '../../src/db/reminders';
import { useIntegration } from '../support/harness';

const stack = useIntegration('prune-plan', { resetEachTest: false });

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** The delete's plan as it ran on `cutoff`, rolled back so that every case sees the same ledger. */
async function runPlan(cutoff: string): Promise<{ nodes: PlanNode[]; blocks: number }> {
  const client = await stack.db.admin.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `explain (analyze, buffers, format json) ${DELETE_EXPIRED_MARKERS_SQL}`,
      [cutoff, 5_000],
    );
    const plan = rows[0]['QUERY PLAN'][0].Plan;
    return { nodes: nodes(plan), blocks: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] };
  } finally {
    await client.query('rollback');
    client.release();
  }
}

beforeAll(async () => {
  // 2,000,000 markers whose expiries (400 days back from 2026-09-01) have nothing to do with where they lie
  // in the heap, as in a ledger written by reminders of every threshold; statistics that know it. Autovacuum
  // stays off, so the statistics stay as they are after the deletes of the last test.
  await stack.db.admin.query(`alter table profile.document_expiry_reminders set (autovacuum_enabled = false)`);
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminders
            (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     select u, u, u, 'Passport', 30, date '2026-09-01' - ((i::bigint * 7919) % 400)::int, timestamptz '2026-01-01'
       from generate_series(1, 2000000) i, lateral (select lpad(to_hex(i), 32, '0')::uuid as u) x`,
  );
  await stack.db.admin.query('analyze profile.document_expiry_reminders');
}, 120_000);

test.each([
  ['nothing past the cutoff', '2025-07-01'],
  ['1 % past it', '2025-08-01'],
  ['10 % past it', '2025-09-10'],
  ['80 % past it', '2026-06-01'],
])(
  'with %s, the delete walks ix_document_expiry_reminders_expires_at and never scans the ledger',
  async (_, cutoff) => {
    const { nodes: plan } = await runPlan(cutoff);
    expect(plan.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    expect(plan.find((n) => n['Node Type'] === 'Index Scan')?.['Index Name']).toBe(
      'ix_document_expiry_reminders_expires_at',
    );
  },
);

test('the last pass of a prune, on statistics that still count the rows the earlier passes deleted, reads only what it deletes', async () => {
  // Earlier passes deleted all but a few of the 10 % past the cutoff; the statistics have not heard of it.
  await stack.db.admin.query(
    `delete from profile.document_expiry_reminders where expires_at < '2025-09-10' and expires_at > '2025-07-29'`,
  );
  const { nodes: plan, blocks } = await runPlan('2025-09-10');
  expect(plan.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  // About three blocks for each of the ~5,000 rows it deletes (the index entry, the heap page to read its
  // ctid, the page again to delete it), the rows lying anywhere in the heap; not the ledger's pages.
  const { rows } = await stack.db.admin.query<{ pages: number }>(
    `select pg_relation_size('profile.document_expiry_reminders') / 8192 as pages`,
  );
  expect(blocks).toBeLessThan(3.5 * 5_000);
  expect(Number(rows[0].pages)).toBeGreaterThan(20_000);
});
