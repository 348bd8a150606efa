/**
 * The plan of the candidate page on the seeded data, written next to the report
 * (bench/explain-<workload>.txt): whether the scan touches only the window's index entries is what
 * decides the idle day's cost.
 */
import type pg from 'pg';
import { PAGE_PLAN_BEGIN, selectCandidatePage } from '../../../src/db/candidates';
import { withTransaction } from '../../../src/db/pool';
import type { Queryable } from '../../../src/db/pool';
import type { CycleSettings } from './settings';

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the first candidate page, with the exact text `selectCandidatePage` sends,
 * in a transaction opened as the page's is (the plan pinned).
 */
export async function explainCandidatePage(admin: pg.Pool, s: CycleSettings): Promise<string> {
  let captured: { text: string; values: unknown[] } | undefined;
  const spy = {
    query: async (text: string, values: unknown[]) => {
      captured = { text, values };
      return { rows: [] };
    },
  } as unknown as Queryable;
  await selectCandidatePage(spy, s.window, null, s.batchSize);
  const explain = () =>
    withTransaction(
      admin,
      (tx) => tx.query(`explain (analyze, buffers) ${captured!.text}`, captured!.values),
      PAGE_PLAN_BEGIN,
    );
  const { rows } = await explain();
  const firstParams = captured!.values;
  // The same page with the first cursor at the window's lower bound instead of -infinity: shows whether
  // the row comparison, not the window, decides where the index scan starts.
  const start = new Date(Date.parse(`${s.asOf}T00:00:00Z`) - (s.window.retentionDays + 1) * 86_400_000)
    .toISOString()
    .slice(0, 10);
  await selectCandidatePage(
    spy,
    s.window,
    { expiresAt: start, id: '00000000-0000-0000-0000-000000000000' },
    s.batchSize,
  );
  const { rows: bounded } = await explain();
  const plan = (r: { 'QUERY PLAN': string }[]) => r.map((x) => x['QUERY PLAN']).join('\n');
  return `-- candidate page, asOf ${s.asOf}, batch ${s.batchSize}\n${captured!.text}\n-- params (first page, as the cycle sends it) ${JSON.stringify(firstParams)}\n\n${plan(rows)}\n\n-- the same first page with the cursor at the window's lower bound (${start}, nil uuid)\n\n${plan(bounded)}\n`;
}
