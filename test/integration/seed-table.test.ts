/**
 * The seed's test table (docs/DESIGN.md#tests), one named test per row, each running the real workflow on the
 * real dev server against real PostgreSQL and checking the ledger and the outbox.
 */
import crypto from 'node:crypto';
import type { CycleInput, CycleResult } from '../../src/domain/cycle';
import { addDays } from '../../src/domain/dates';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../src/domain/names';
import { countDueDocuments } from '../../src/db/candidates';
import { previewCycle } from '../../src/operations/cycles';
import { documentsFingerprint, insertDocuments, markers, outbox } from '../support/data';
import { historyBytes } from '../support/history';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const AS_OF = '2026-09-02T03:00:00.000Z';
const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('seed-table', { worker: 'test' });

const cycle = (input: CycleInput = {}) => stack.cycle({ asOf: AS_OF, ...input });

async function insertMarker(documentId: string, ownerUserId: string, thresholdDays: number, expiresAt: string) {
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminders
       (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     values (gen_random_uuid(), $1, $2, 'ForeignPassport', $3, $4, now() - interval '20 days')`,
    [documentId, ownerUserId, thresholdDays, expiresAt],
  );
}

function expectCounts(result: CycleResult, counts: Partial<CycleResult>) {
  expect(result).toEqual(expect.objectContaining({ status: 'completed', failedOwners: 0, ...counts }));
}

test('empty batch', async () => {
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { daysLeft: 31 },
    { daysLeft: null },
    { daysLeft: 5, status: 'Archived' },
    { daysLeft: 5, isDeleted: true },
    { daysLeft: -91 },
  ]);

  const result = await cycle();

  // Nothing due: the day's plan finds none, and the cycle reads no page (docs/DESIGN.md#partitions).
  expectCounts(result, { remindersSent: 0, ownersNotified: 0, documentsSeen: 0, pages: 0, pruned: 0 });
  expect(await markers(stack.db.admin)).toEqual([]);
  expect(await outbox(stack.db.admin)).toEqual([]);
});

test('threshold crossing', async () => {
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7, type: 'ForeignPassport' }]);
  await insertMarker(doc.id, doc.ownerUserId, 30, doc.expiresAt!);

  const handle = await stack.startCycle({ asOf: AS_OF });
  const result = await handle.result();

  expectCounts(result, { remindersSent: 1, ownersNotified: 1 });
  expect((await markers(stack.db.admin)).map((m) => [m.document_id, m.threshold_days])).toEqual([
    [doc.id, 30],
    [doc.id, 7],
  ]);
  const rows = await outbox(stack.db.admin);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toEqual({
    id: expect.any(String),
    aggregate_type: AGGREGATE_TYPE,
    aggregate_id: doc.ownerUserId,
    topic: TOPIC,
    message_key: doc.ownerUserId,
    event_type: EVENT_TYPE,
    contract_version: CONTRACT_VERSION,
    correlation_id: handle.workflowId,
    payload: {
      ownerUserId: doc.ownerUserId,
      remindedAt: AS_OF,
      documents: [
        {
          documentId: doc.id,
          type: 'ForeignPassport',
          numberMask: doc.numberMask,
          expiresAt: addDays(AS_OF_DATE, 7),
          thresholdDays: 7,
          daysLeft: 7,
        },
      ],
    },
  });
});

test('expired document', async () => {
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: -3 }]);

  expectCounts(await cycle(), { remindersSent: 1 });
  const [event] = await outbox(stack.db.admin);
  expect(event.payload.documents).toEqual([
    expect.objectContaining({ documentId: doc.id, thresholdDays: 0, daysLeft: -3 }),
  ]);

  // The next days it stays expired and stays quiet: the expiry reminder goes out once.
  for (const day of [1, 2]) {
    expectCounts(await cycle({ asOf: addDays(AS_OF_DATE, day) }), { remindersSent: 0 });
  }
  expect(await outbox(stack.db.admin)).toHaveLength(1);
  expect((await markers(stack.db.admin)).map((m) => m.threshold_days)).toEqual([30, 7, 1, 0]);
});

test('fresh almost-expired document', async () => {
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 5 }]);

  expectCounts(await cycle(), { remindersSent: 1, ownersNotified: 1 });

  expect((await markers(stack.db.admin)).map((m) => [m.document_id, m.threshold_days])).toEqual([
    [doc.id, 30],
    [doc.id, 7],
  ]);
  const rows = await outbox(stack.db.admin);
  expect(rows).toHaveLength(1);
  expect(rows[0].payload.documents).toEqual([
    expect.objectContaining({ documentId: doc.id, thresholdDays: 7, daysLeft: 5 }),
  ]);
});

test('idempotency on restart', async () => {
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { daysLeft: 30 },
    { daysLeft: 7 },
    { daysLeft: 1 },
    { daysLeft: 0 },
    { daysLeft: -10 },
  ]);
  expectCounts(await cycle(), { remindersSent: 5, ownersNotified: 5 });
  const markersBefore = await markers(stack.db.admin);
  const outboxBefore = await outbox(stack.db.admin);

  // A new worker process (same task queue), the same cycle again.
  await stack.worker.stop();
  await stack.startWorker({ taskQueue: stack.worker.taskQueue });
  const again = await cycle();

  expectCounts(again, { remindersSent: 0, ownersNotified: 0, skippedAlreadyMarked: 0, documentsSeen: 0 });
  expect(await markers(stack.db.admin)).toEqual(markersBefore);
  expect(await outbox(stack.db.admin)).toEqual(outboxBefore);
});

test('parallel instances', async () => {
  const docs = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 150 }, () => ({ daysLeft: 7 })),
  );
  const second = await stack.startWorker({ taskQueue: stack.worker.taskQueue });
  try {
    const [a, b] = await Promise.all([
      stack.startCycle({ asOf: AS_OF, ownerConcurrency: 20 }),
      stack.startCycle({ asOf: AS_OF, ownerConcurrency: 20 }),
    ]);
    const results = await Promise.all([a.result(), b.result()]);

    expect(results[0].remindersSent + results[1].remindersSent).toBe(docs.length);
    const ledger = await markers(stack.db.admin);
    expect(ledger.filter((m) => m.threshold_days === 7)).toHaveLength(docs.length);
    expect(ledger.filter((m) => m.threshold_days === 30)).toHaveLength(docs.length);
    const rows = await outbox(stack.db.admin);
    expect(rows).toHaveLength(docs.length);
    const reminded = rows.flatMap((r) => r.payload.documents.map((d) => d.documentId)).sort();
    expect(reminded).toEqual(docs.map((d) => d.id).sort());
  } finally {
    await second.stop();
  }
});

test('grouping', async () => {
  const owner = crypto.randomUUID();
  const docs = await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owner, daysLeft: 30, type: 'ForeignPassport' },
    { ownerUserId: owner, daysLeft: 7, type: 'DriverLicense' },
    { ownerUserId: owner, daysLeft: 0, type: 'ResidencePermit' },
  ]);

  expectCounts(await cycle(), { remindersSent: 3, ownersNotified: 1 });

  const rows = await outbox(stack.db.admin);
  expect(rows).toHaveLength(1);
  expect(rows[0].aggregate_id).toBe(owner);
  expect(rows[0].payload.documents.map((d) => [d.documentId, d.type, d.thresholdDays, d.daysLeft])).toEqual([
    [docs[2].id, 'ResidencePermit', 0, 0],
    [docs[1].id, 'DriverLicense', 7, 7],
    [docs[0].id, 'ForeignPassport', 30, 30],
  ]);
});

test('read-only and no PII', async () => {
  const docs = await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { daysLeft: 7, numberMask: '**** 918273' },
    { daysLeft: 0, numberMask: '**** 564738' },
    { daysLeft: 45, numberMask: '**** 102938' },
  ]);
  const before = await documentsFingerprint(stack.db.admin);

  const handle = await stack.startCycle({ asOf: AS_OF });
  await handle.result();

  // person_documents untouched.
  expect(await documentsFingerprint(stack.db.admin)).toBe(before);
  // The event carries the documented fields only.
  for (const row of await outbox(stack.db.admin)) {
    expect(Object.keys(row.payload).sort()).toEqual(['documents', 'ownerUserId', 'remindedAt']);
    for (const d of row.payload.documents) {
      expect(Object.keys(d).sort()).toEqual([
        'daysLeft',
        'documentId',
        'expiresAt',
        'numberMask',
        'thresholdDays',
        'type',
      ]);
    }
  }
  // No document value in the logs or in the workflow history, which every operator can read; a small day's
  // claims keep even the owner ids out of it (they stay in the claimPage activity).
  const history = await historyBytes(handle);
  expect(history.includes(handle.workflowId)).toBe(true);
  expect(history.includes(docs[0].ownerUserId)).toBe(false);
  for (const doc of docs) {
    expect(history.includes(doc.numberMask)).toBe(false);
    expect(stack.worker.logs.raw.join('\n')).not.toContain(doc.numberMask);
    expect(history.includes(`cipher-${doc.id}`)).toBe(false);
  }
  const queued = stack.worker.logs.messages('reminder queued');
  expect(queued.map((l) => l.documentId).sort()).toEqual([docs[0].id, docs[1].id].sort());
  for (const line of queued) {
    expect(line).toEqual(
      expect.objectContaining({
        ownerUserId: expect.any(String),
        type: 'ForeignPassport',
        thresholdDays: expect.any(Number),
        daysLeft: expect.any(Number),
      }),
    );
    expect(line).not.toHaveProperty('numberMask');
  }
});

test('never-expiring document', async () => {
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { daysLeft: null, type: 'Passport' },
    { daysLeft: null, type: 'Inn' },
    { daysLeft: null, type: 'Snils' },
  ]);

  expectCounts(await cycle(), { remindersSent: 0, documentsSeen: 0 });
  expect(await markers(stack.db.admin)).toEqual([]);
  expect(await outbox(stack.db.admin)).toEqual([]);
});

test('prune', async () => {
  const old1 = crypto.randomUUID();
  const old2 = crypto.randomUUID();
  const edge = crypto.randomUUID();
  const live = crypto.randomUUID();
  const owner = crypto.randomUUID();
  await insertMarker(old1, owner, 0, addDays(AS_OF_DATE, -91));
  await insertMarker(old2, owner, 0, addDays(AS_OF_DATE, -400));
  await insertMarker(edge, owner, 0, addDays(AS_OF_DATE, -90));
  await insertMarker(live, owner, 30, addDays(AS_OF_DATE, 20));

  expectCounts(await cycle(), { pruned: 2 });

  expect((await markers(stack.db.admin)).map((m) => m.document_id).sort()).toEqual([edge, live].sort());
});

test('threshold added', async () => {
  // Reminded under [30, 7, 1, 0]: A at 30 (10 days left now), B at 30 and 7 (5 days left now).
  const [a, b, c] = await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { daysLeft: 10 },
    { daysLeft: 5 },
    { daysLeft: 12 },
  ]);
  await insertMarker(a.id, a.ownerUserId, 30, a.expiresAt!);
  await insertMarker(b.id, b.ownerUserId, 30, b.expiresAt!);
  await insertMarker(b.id, b.ownerUserId, 7, b.expiresAt!);
  await insertMarker(c.id, c.ownerUserId, 30, c.expiresAt!);

  const result = await cycle({ thresholdsDays: [30, 14, 7, 1, 0] });

  // 14 fires for the documents whose current threshold it is, never after a more urgent one was sent.
  expectCounts(result, { remindersSent: 2, ownersNotified: 2 });
  const rows = await outbox(stack.db.admin);
  expect(rows.flatMap((r) => r.payload.documents.map((d) => [d.documentId, d.thresholdDays])).sort()).toEqual(
    [
      [a.id, 14],
      [c.id, 14],
    ].sort(),
  );
  expect((await markers(stack.db.admin)).filter((m) => m.document_id === b.id).map((m) => m.threshold_days)).toEqual([
    30, 7,
  ]);
});

test('threshold removed', async () => {
  // Under [30, 7, 1, 0], D was reminded at 30 and 7; now 7 is removed.
  const [d, e] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 5 }, { daysLeft: 3 }]);
  await insertMarker(d.id, d.ownerUserId, 30, d.expiresAt!);
  await insertMarker(d.id, d.ownerUserId, 7, d.expiresAt!);

  const result = await cycle({ thresholdsDays: [30, 1, 0] });

  // D: current is 30, already marked; E (never reminded) is reminded at 30, not at the removed 7.
  expectCounts(result, { remindersSent: 1 });
  const rows = await outbox(stack.db.admin);
  expect(rows.flatMap((r) => r.payload.documents.map((x) => [x.documentId, x.thresholdDays]))).toEqual([[e.id, 30]]);
  const ledger = await markers(stack.db.admin);
  expect(ledger.filter((m) => m.document_id === d.id).map((m) => m.threshold_days)).toEqual([30, 7]);
  expect(ledger.filter((m) => m.document_id === e.id).map((m) => m.threshold_days)).toEqual([30]);
});

/**
 * What `cycle preview` and the backlog gauge say is due under `thresholdsDays` on `asOfDate`, as
 * "documentId:threshold" pairs and a count: before a cycle they must name what it is about to send.
 */
async function dueViews(asOfDate: string, thresholdsDays: number[]) {
  const window = { asOfDate, thresholdsDays, retentionDays: 90 };
  const preview = await previewCycle(stack.db.worker, window, 500);
  return {
    preview: preview.owners.flatMap((o) => o.documents.map((d) => `${d.documentId}:${d.thresholdDays}`)).sort(),
    backlog: await countDueDocuments(stack.db.worker, window),
  };
}

/** The (document, threshold) pairs of the outbox events written after the first `skip` rows. */
async function sentSince(skip: number): Promise<string[]> {
  return (await outbox(stack.db.admin))
    .slice(skip)
    .flatMap((r) => r.payload.documents.map((d) => `${d.documentId}:${d.thresholdDays}`))
    .sort();
}

test('threshold removed after a more urgent reminder: 30,3,0 then back to 30,7,1,0 sends no "7 days"', async () => {
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 2 }]);
  expect(await dueViews(AS_OF_DATE, [30, 3, 0])).toEqual({ preview: [`${doc.id}:3`], backlog: 1 });
  expectCounts(await cycle({ thresholdsDays: [30, 3, 0] }), { remindersSent: 1 });
  expect(await sentSince(0)).toEqual([`${doc.id}:3`]);

  // Back to the defaults: current(d) is 7, which has no marker, but 3 (more urgent) was sent.
  expect(await dueViews(AS_OF_DATE, [30, 7, 1, 0])).toEqual({ preview: [], backlog: 0 });
  expectCounts(await cycle({ thresholdsDays: [30, 7, 1, 0] }), { remindersSent: 0, documentsSeen: 0 });
  expect(await outbox(stack.db.admin)).toHaveLength(1);

  // The next day 1 is current, more urgent than 3: that one is sent.
  const tomorrow = addDays(AS_OF_DATE, 1);
  expect(await dueViews(tomorrow, [30, 7, 1, 0])).toEqual({ preview: [`${doc.id}:1`], backlog: 1 });
  expectCounts(await cycle({ asOf: tomorrow, thresholdsDays: [30, 7, 1, 0] }), { remindersSent: 1 });
  expect(await sentSince(1)).toEqual([`${doc.id}:1`]);
  expect((await markers(stack.db.admin)).map((m) => m.threshold_days)).toEqual([30, 7, 3, 1]);
});

test('thresholds changed to 14,2 after an expired document was reminded at 0: no "2 days" reminder', async () => {
  const [expired, fresh] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: -3 }, { daysLeft: 20 }]);
  expectCounts(await cycle(), { remindersSent: 2 });
  expect(await sentSince(0)).toEqual([`${expired.id}:0`, `${fresh.id}:30`].sort());

  // Under 14,2 the expired document's current threshold is 2; 0 was already sent. The fresh one is
  // due at 14 only once it is 14 days out.
  expect(await dueViews(AS_OF_DATE, [14, 2])).toEqual({ preview: [], backlog: 0 });
  expectCounts(await cycle({ thresholdsDays: [14, 2] }), { remindersSent: 0, documentsSeen: 0 });
  const later = addDays(AS_OF_DATE, 6);
  expect(await dueViews(later, [14, 2])).toEqual({ preview: [`${fresh.id}:14`], backlog: 1 });
  expectCounts(await cycle({ asOf: later, thresholdsDays: [14, 2] }), { remindersSent: 1 });
  expect(await sentSince(2)).toEqual([`${fresh.id}:14`]);
});

test('renewal', async () => {
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }]);
  expectCounts(await cycle(), { remindersSent: 1 });

  // The investor renews before the next cycle: a new expiry a year out.
  await stack.db.admin.query(
    `update profile.person_documents set expires_at = expires_at + 365, updated_at = now() where id = $1`,
    [doc.id],
  );
  expectCounts(await cycle({ asOf: addDays(AS_OF_DATE, 1) }), { remindersSent: 0, documentsSeen: 0 });

  expect(await outbox(stack.db.admin)).toHaveLength(1);
  expect((await markers(stack.db.admin)).map((m) => [m.threshold_days, m.expires_at])).toEqual([
    [30, doc.expiresAt],
    [7, doc.expiresAt],
  ]);
});

test('cancellation', async () => {
  const docs = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: 400 }, () => ({ daysLeft: 7 })),
  );
  // A claim per page of 50: the cancel lands between claims (one claim of up to 8 pages may finish the day).
  const handle = await stack.startCycle({ asOf: AS_OF, ownerConcurrency: 2, batchSize: 50, pagesPerClaim: 1 });
  await waitFor(async () => (await outbox(stack.db.admin)).length >= 5);

  await handle.cancel();
  const result = await handle.result();

  expect(result.status).toBe('cancelled');
  expect(result.remindersSent).toBeGreaterThan(0);
  expect(result.remindersSent).toBeLessThan(docs.length);
  // Every owner transaction committed whole or not at all: each marker at 7 has its event, and back.
  const rows = await outbox(stack.db.admin);
  const ledger = await markers(stack.db.admin);
  expect(rows).toHaveLength(result.remindersSent);
  expect(
    ledger
      .filter((m) => m.threshold_days === 7)
      .map((m) => m.document_id)
      .sort(),
  ).toEqual(rows.map((r) => r.payload.documents[0].documentId).sort());
  expect(ledger.filter((m) => m.threshold_days === 30)).toHaveLength(rows.length);

  // The next cycle reminds the rest, nobody twice.
  const next = await cycle({ ownerConcurrency: 20 });
  expect(next.remindersSent).toBe(docs.length - result.remindersSent);
  const all = await outbox(stack.db.admin);
  expect(new Set(all.map((r) => r.aggregate_id)).size).toBe(docs.length);
  expect(all).toHaveLength(docs.length);
});
