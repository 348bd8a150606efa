/**
 * The scan's SQL against a real PostgreSQL: the current-threshold expression agrees with the domain
 * rule for every DaysLeft, and a page scanned in id slices is the same page as one scanned whole.
 */
import crypto from 'node:crypto';
import { currentThresholdSql, idRanges, selectCandidatePage } from '../../src/db/candidates';
import { withTransaction } from '../../src/db/pool';
import { claimOwners } from '../support/claims';
import { currentThreshold } from '../../src/domain/thresholds';
import { insertDocuments } from '../support/data';
import { resetData } from '../support/stack';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';
const WINDOW = { asOfDate: AS_OF_DATE, thresholdsDays: [30, 7, 1, 0], retentionDays: 90 };

const stack = useIntegration('candidates', { resetEachTest: false });

test.each([[[30, 7, 1, 0]], [[14, 3]], [[0]], [[90, 30, 7]], [[365, 1]]])(
  'the current-threshold SQL is min{t : DaysLeft <= t} for DaysLeft -120 … 400 with thresholds %j',
  async (thresholds) => {
    const { rows } = await stack.db.admin.query<{ days_left: number; current: number | null }>(
      `select d.days_left, ${currentThresholdSql('d', '$1', '$2')} as current
         from (select n as days_left, $1::date + n as expires_at from generate_series(-120, 400) as n) d`,
      [AS_OF_DATE, thresholds],
    );
    expect(rows).toHaveLength(521);
    for (const r of rows)
      expect([r.days_left, r.current]).toEqual([r.days_left, currentThreshold(r.days_left, thresholds) ?? null]);
  },
);

test('id slices split the UUID space into equal ranges that meet', () => {
  expect(idRanges(1)).toEqual([['00000000-0000-0000-0000-000000000000', null]]);
  expect(idRanges(2)).toEqual([
    ['00000000-0000-0000-0000-000000000000', '80000000-0000-0000-0000-000000000000'],
    ['80000000-0000-0000-0000-000000000000', null],
  ]);
  for (const slices of [3, 5, 16]) {
    const ranges = idRanges(slices);
    expect(ranges).toHaveLength(slices);
    for (let i = 1; i < ranges.length; i += 1) expect(ranges[i][0]).toBe(ranges[i - 1][1]);
  }
});

test('a page scanned in slices is the page scanned whole, page after page, with claimed documents in between', async () => {
  await resetData(stack.db);
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 400 }, (_, i) => ({
      daysLeft: (i % 125) - 92,
      ownerUserId: i % 3 === 0 ? undefined : crypto.randomUUID(),
    })),
  );
  // Some documents already reminded, so the pages skip them.
  const { rows: some } = await stack.db.admin.query<{ owner_user_id: string }>(
    `select owner_user_id from profile.person_documents order by id limit 60`,
  );
  await withTransaction(stack.db.worker, (tx) =>
    claimOwners(tx, {
      ...WINDOW,
      ownerUserIds: some.map((r) => r.owner_user_id),
      asOf: `${AS_OF_DATE}T03:00:00Z`,
      jobRunId: 'candidates-test',
    }),
  );

  for (const slices of [2, 3, 7]) {
    let whole = await selectCandidatePage(stack.db.worker, WINDOW, null, 37, 1);
    let sliced = await selectCandidatePage(stack.db.worker, WINDOW, null, 37, slices);
    let pages = 0;
    for (;;) {
      expect(sliced).toEqual(whole);
      pages += 1;
      if (whole.length < 37) break;
      const last = whole[whole.length - 1];
      const cursor = { expiresAt: last.expires_at, id: last.id };
      whole = await selectCandidatePage(stack.db.worker, WINDOW, cursor, 37, 1);
      sliced = await selectCandidatePage(stack.db.worker, WINDOW, cursor, 37, slices);
    }
    expect(pages).toBeGreaterThan(5);
  }
});
