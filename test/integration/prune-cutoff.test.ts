/**
 * The prune's cutoff is raised for good, so the worker's own clock bounds it (issue 28, item 1.6): a cycle
 * whose AsOf came from a clock that jumped ahead prunes no further than the worker's today − retention.
 */
import crypto from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { addDays, utcDate } from '../../src/domain/dates';
import { CapturedLogs, testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';

const stack = useIntegration('prune-cutoff');

/** A marker of a document that expired on `expiresAt`. */
async function insertMarker(expiresAt: string): Promise<string> {
  const id = crypto.randomUUID();
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminders
            (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     values ($1, $1, $1, 'Passport', 0, $2::date, now())`,
    [id, expiresAt],
  );
  return id;
}

async function ledgerState(): Promise<{ cutoff: string | null; markers: string[] }> {
  const { rows: cut } = await stack.db.admin.query<{ cutoff: string }>(
    'select cutoff::text as cutoff from profile.document_expiry_reminder_prune_cutoff',
  );
  const { rows } = await stack.db.admin.query<{ id: string }>(
    'select id from profile.document_expiry_reminders order by expires_at',
  );
  return { cutoff: cut[0]?.cutoff ?? null, markers: rows.map((r) => r.id) };
}

test("a prune as of a day after the worker's today raises the cutoff to the worker's today − retention only, and says so", async () => {
  const today = utcDate(new Date());
  await insertMarker(addDays(today, -40));
  const recent = await insertMarker(addDays(today, -10));
  const logs = new CapturedLogs();
  const activities = createActivities({ pool: stack.db.worker, logger: logs.logger, config: testConfig() });

  const pruned = await new MockActivityEnvironment().run(activities.pruneReminders, {
    asOfDate: addDays(today, 365),
    retentionDays: 30,
  });

  expect(pruned).toBe(1);
  expect(await ledgerState()).toEqual({ cutoff: addDays(today, -30), markers: [recent] });
  expect(
    logs.messages("prune cutoff held back to the worker's today: the cycle's AsOf lies after it (a clock ahead?)"),
  ).toEqual([expect.objectContaining({ level: 40, cutoff: addDays(today, -30), heldBackFrom: addDays(today, 335) })]);
});

test('the mirror: a prune as of today or a past day uses its own AsOf, and logs nothing', async () => {
  const today = utcDate(new Date());
  await insertMarker(addDays(today, -40));
  const recent = await insertMarker(addDays(today, -10));
  const logs = new CapturedLogs();
  const activities = createActivities({ pool: stack.db.worker, logger: logs.logger, config: testConfig() });

  await new MockActivityEnvironment().run(activities.pruneReminders, { asOfDate: today, retentionDays: 30 });
  await new MockActivityEnvironment().run(activities.pruneReminders, {
    asOfDate: addDays(today, -5),
    retentionDays: 30,
  });

  // The past day's cutoff is lower: the ledger's cutoff is never lowered.
  expect(await ledgerState()).toEqual({ cutoff: addDays(today, -30), markers: [recent] });
  expect(logs.lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
});
