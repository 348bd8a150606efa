/**
 * The operator's cycle commands against the dev server and a real database, through the in-process CLI:
 * cycle preview (what the next cycle would send, read only) and cycle status.
 */
import crypto from 'node:crypto';
import { eventually } from '../support/wait';
import type { CycleResult } from '../../src/domain/cycle';
import { withReadOnlySnapshot, type CyclePreview, type CycleStatusRow } from '../../src/operations/cycles';
import { documentsFingerprint, insertDocuments, markers, outbox } from '../support/data';
import { testConfig } from '../support/stack';
import { useOperatorStack } from '../support/cli';

const { stack, taskQueue, operator } = useOperatorStack('cycle-operations');
const { run: cli, error: cliError } = operator;

function sentOwner(row: Awaited<ReturnType<typeof outbox>>[number]) {
  return {
    ownerUserId: row.payload.ownerUserId,
    documents: row.payload.documents.map(({ documentId, type, thresholdDays, daysLeft }) => ({
      documentId,
      type,
      thresholdDays,
      daysLeft,
    })),
  };
}

test('cycle preview on seeded data lists exactly what the next cycle run then sends, and writes nothing', async () => {
  const asOf = '2025-05-10';
  const owner = () => crypto.randomUUID();
  const [a, b, c, e] = [owner(), owner(), owner(), owner()];
  const docs = await insertDocuments(stack.db.admin, asOf, [
    // Owner a: two due documents, far apart in the scan, so they land on different pages (batch size 2).
    { ownerUserId: a, daysLeft: 0, type: 'InternalPassport' },
    { ownerUserId: a, daysLeft: 30, type: 'ForeignPassport' },
    { ownerUserId: b, daysLeft: 7 },
    { ownerUserId: b, daysLeft: 31 }, // not due yet
    { ownerUserId: c, daysLeft: -5 }, // expired: current threshold 0
    { ownerUserId: c, daysLeft: -91 }, // beyond retention
    { ownerUserId: c, daysLeft: 1, status: 'Archived' },
    { ownerUserId: c, daysLeft: 1, isDeleted: true },
    { ownerUserId: e, daysLeft: 6 }, // current threshold 7, already sent
    { ownerUserId: e, daysLeft: 2 }, // only its 30 marker exists: due at 7
    { daysLeft: null },
  ]);
  const marked = [
    { doc: docs[8], threshold: 7 },
    { doc: docs[8], threshold: 30 },
    { doc: docs[9], threshold: 30 },
  ];
  for (const m of marked) {
    await stack.db.admin.query(
      `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
       values (gen_random_uuid(), $1, $2, $3, $4, $5, now())`,
      [m.doc.id, m.doc.ownerUserId, m.doc.type, m.threshold, m.doc.expiresAt],
    );
  }
  operator.use(
    testConfig({ TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: stack.db.workerUrl, REMINDER_BATCH_SIZE: '2' }),
  );
  const fingerprint = await documentsFingerprint(stack.db.admin);
  const markersBefore = await markers(stack.db.admin);

  const preview = await cli<CyclePreview>('cycle', 'preview', '--as-of', asOf);

  expect(await markers(stack.db.admin)).toEqual(markersBefore);
  expect(await outbox(stack.db.admin)).toEqual([]);
  expect(await documentsFingerprint(stack.db.admin)).toBe(fingerprint);
  expect(JSON.stringify(preview)).not.toMatch(/numberMask|\*\*\*\*/);
  expect(preview).toEqual(
    expect.objectContaining({
      asOfDate: asOf,
      thresholdsDays: [30, 7, 1, 0],
      retentionDays: 90,
      ownerCount: 4,
      documentCount: 5,
    }),
  );
  // In scan order (expires_at, id): c (-5), a (0), e (2), b (7); a's second document comes with its first.
  expect(preview.owners).toEqual([
    {
      ownerUserId: c,
      documents: [{ documentId: docs[4].id, type: 'ForeignPassport', thresholdDays: 0, daysLeft: -5 }],
    },
    {
      ownerUserId: a,
      documents: [
        { documentId: docs[0].id, type: 'InternalPassport', thresholdDays: 0, daysLeft: 0 },
        { documentId: docs[1].id, type: 'ForeignPassport', thresholdDays: 30, daysLeft: 30 },
      ],
    },
    { ownerUserId: e, documents: [{ documentId: docs[9].id, type: 'ForeignPassport', thresholdDays: 7, daysLeft: 2 }] },
    { ownerUserId: b, documents: [{ documentId: docs[2].id, type: 'ForeignPassport', thresholdDays: 7, daysLeft: 7 }] },
  ]);

  const run = await cli<{ result: CycleResult }>('cycle', 'run', '--as-of', asOf, '--wait');

  expect(run.result.remindersSent).toBe(preview.documentCount);
  const byOwner = (x: { ownerUserId: string }, y: { ownerUserId: string }) =>
    x.ownerUserId.localeCompare(y.ownerUserId);
  expect((await outbox(stack.db.admin)).map(sentOwner).sort(byOwner)).toEqual([...preview.owners].sort(byOwner));
  // Nothing is left to preview once the cycle sent it.
  expect(await cli<CyclePreview>('cycle', 'preview', '--as-of', asOf)).toEqual(
    expect.objectContaining({ owners: [], documentCount: 0 }),
  );
});

test('cycle preview takes --thresholds and --retention-days, and needs the worker connection', async () => {
  const asOf = '2025-06-01';
  const [soon, old] = await insertDocuments(stack.db.admin, asOf, [{ daysLeft: 3 }, { daysLeft: -20 }]);

  const preview = await cli<CyclePreview>(
    'cycle',
    'preview',
    '--as-of',
    asOf,
    '--thresholds',
    '14,3',
    '--retention-days',
    '10',
  );

  expect(preview).toEqual(expect.objectContaining({ thresholdsDays: [14, 3], retentionDays: 10 }));
  expect(preview.owners).toEqual([
    {
      ownerUserId: soon.ownerUserId,
      documents: [{ documentId: soon.id, type: 'ForeignPassport', thresholdDays: 3, daysLeft: 3 }],
    },
  ]);
  expect(preview.owners.some((o) => o.ownerUserId === old.ownerUserId)).toBe(false);

  expect((await cliError('cycle', 'preview', '--thresholds', '3,14')).message).toMatch(/descending order/);
  operator.use(testConfig({ TEMPORAL_TASK_QUEUE: taskQueue }));
  expect((await cliError('cycle', 'preview', '--as-of', asOf)).message).toMatch(/DATABASE_URL=\(unset\)/);
});

test('the preview transaction is read only: PostgreSQL refuses a write in it', async () => {
  await expect(
    withReadOnlySnapshot(stack.db.worker, (tx) =>
      tx.query(`delete from profile.document_expiry_reminders where threshold_days = -1`),
    ),
  ).rejects.toThrow(/read-only transaction/);
});

test('cycle status lists recent cycles with AsOf, outcome, reminders sent and the counts of their result', async () => {
  await insertDocuments(stack.db.admin, '2025-07-01', [{ daysLeft: 1 }, { daysLeft: 30 }]);
  const { workflowId } = await cli<{ workflowId: string }>('cycle', 'run', '--as-of', '2025-07-01', '--wait');

  const row = await eventually(async () => {
    const rows = await cli<CycleStatusRow[]>('cycle', 'status', '--limit', '50');
    const found = rows.find((r) => r.workflowId === workflowId);
    return found?.outcome === 'completed' ? found : undefined;
  }, 'the cycle in visibility');

  expect(row).toEqual({
    workflowId,
    runId: expect.any(String),
    status: 'COMPLETED',
    startTime: expect.any(String),
    closeTime: expect.any(String),
    asOf: '2025-07-01T00:00:00.000Z',
    outcome: 'completed',
    remindersSent: 2,
    result: expect.objectContaining({
      status: 'completed',
      remindersSent: 2,
      ownersNotified: 2,
      failedOwners: 0,
      documentsSeen: 2,
    }),
  });
  const limited = await cli<CycleStatusRow[]>('cycle', 'status', '--limit', '1');
  expect(limited).toHaveLength(1);
  expect((await cliError('cycle', 'status', '--limit', '0')).message).toMatch(/expected a whole number from 1 to 1000/);
});
