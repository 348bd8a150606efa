/**
 * The owner statement reaches documents by owner: each owner's few documents through the owner index,
 * whatever the group size and however many documents the window holds. With the window's bounds written
 * as indexable subqueries, the planner guessed the window selective and, from about 250 owners a group,
 * read every document of the window through the expires_at index for each group: 45 ms instead of 18 ms
 * for 250 owners over a 100k-document window, and growing with the window (bench/REPORT-HISTORY.md, "The owner
 * statement's plan").
 */
import { explainClaimLockedOwners } from '../../src/activities/claim/sql/claim-owners';
import { useIntegration } from '../support/harness';

const stack = useIntegration('owner-claim-plan', { resetEachTest: false });

const AS_OF = '2026-06-01';

/** `owners` owners with two documents each in the window (expiring in 0–29 days), and the window's owners. */
async function seedWindow(owners: number): Promise<string[]> {
  await stack.db.admin.query(
    `insert into profile.person_documents
            (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted, payload_cipher)
     select gen_random_uuid(), md5('owner' || (n / 2)::text)::uuid, gen_random_uuid(), 'Passport', '**12',
            $2::date + (n % 30), 'Active', false, '\\x00'::bytea
       from generate_series(0, $1::int * 2 - 1) as n`,
    [owners, AS_OF],
  );
  await stack.db.admin.query('analyze profile.person_documents');
  const { rows } = await stack.db.admin.query<{ id: string }>(
    `select distinct owner_user_id as id from profile.person_documents order by 1`,
  );
  return rows.map((r) => r.id);
}

const claimPlan = (ownerUserIds: string[]) =>
  explainClaimLockedOwners(stack.db.admin, {
    ownerUserIds,
    asOfDate: AS_OF,
    thresholdsDays: [30, 7, 1, 0],
    retentionDays: 90,
    asOf: `${AS_OF}T00:00:00.000Z`,
    jobRunId: 'plan-test',
    traceContext: undefined,
    queuedBy: 'plan-test',
  });

let owners: string[];
beforeAll(async () => {
  owners = await seedWindow(50_000);
}, 120_000);

test.each([1, 100, 250, 500])(
  'a group of %i owners reads its owners’ documents by the owner index, not the 100k-document window',
  async (size) => {
    const plan = await claimPlan(owners.slice(0, size));
    expect(plan).toMatch(/(Scan using|Bitmap Index Scan on) ix_person_documents_owner_user_id\b/);
    expect(plan).not.toMatch(/ix_person_documents_expires_at/);
    expect(plan).not.toMatch(/Seq Scan on person_documents/);
  },
);
