/**
 * Resolution 2 end to end through PostgreSQL: a document is due only when it has no marker at any
 * threshold t ≤ current(d). Random threshold sets over random days run through the product's statements
 * (the page scan, the owner claim, the prune, `cycle preview` and the backlog count) and are checked
 * against a small model of the rule, in the style of test/unit/thresholds.test.ts; and the rule's TypeScript
 * form, as `explain` reads each document by it (src/domain/thresholds.ts), gives the SQL's answer.
 */
import crypto from 'node:crypto';
import {
  countDueDocuments,
  selectCandidatePage,
  selectPruneCutoff,
  type CandidateWindow,
} from '../../src/db/candidates';
import { explainDocument } from '../../src/domain/explain';
import { withTransaction } from '../../src/db/pool';
import { deleteExpiredMarkers, raisePruneCutoff } from '../../src/db/reminders';
import { claimOwners } from '../support/claims';
import { crossedThresholds, currentThreshold } from '../../src/domain/thresholds';
import { addDays, daysBetween } from '../../src/domain/dates';
import { previewCycle } from '../../src/operations/cycles';
import { mulberry32 } from '../../scripts/faults/model';
import { insertDocuments } from '../support/data';
import { resetData } from '../support/stack';
import { useIntegration } from '../support/harness';

const BASE_DATE = '2026-01-01';
const RETENTION_DAYS = 90;
const THRESHOLD_POOL = [0, 1, 2, 3, 5, 7, 10, 14, 30, 60];

const stack = useIntegration('due-rule');

interface ModelDocument {
  id: string;
  ownerUserId: string;
  expiresAt: string;
  markers: Set<number>;
  /** Archived or deleted: never due. */
  inactive?: 'Archived' | 'deleted';
}

/** The rule, written plainly: what is due on `asOfDate` under `thresholds`, as "documentId:threshold". */
function modelDue(
  docs: ModelDocument[],
  asOfDate: string,
  thresholds: number[],
): Map<string, { doc: ModelDocument; current: number }> {
  const due = new Map<string, { doc: ModelDocument; current: number }>();
  const max = Math.max(...thresholds);
  for (const doc of docs) {
    if (doc.inactive) continue;
    const daysLeft = daysBetween(asOfDate, doc.expiresAt);
    if (daysLeft < -RETENTION_DAYS || daysLeft > max) continue;
    const current = currentThreshold(daysLeft, thresholds);
    if (current === undefined) continue;
    if ([...doc.markers].some((t) => t <= current)) continue;
    due.set(doc.id, { doc, current });
  }
  return due;
}

function randomThresholds(next: () => number): number[] {
  const picked = THRESHOLD_POOL.filter(() => next() < 0.35);
  if (picked.length === 0) picked.push(THRESHOLD_POOL[Math.floor(next() * THRESHOLD_POOL.length)]);
  return picked.sort((a, b) => b - a);
}

/** Every page of the cycle's scan, as the workflow reads it: the distinct owners, in scan order. */
async function scanOwners(
  window: CandidateWindow,
  batchSize: number,
): Promise<{ owners: string[]; documents: Set<string> }> {
  const owners: string[] = [];
  const documents = new Set<string>();
  let cursor: { expiresAt: string; id: string } | null = null;
  for (;;) {
    const rows = await selectCandidatePage(stack.db.worker, window, cursor, batchSize);
    for (const r of rows) {
      documents.add(r.id);
      if (!owners.includes(r.owner_user_id)) owners.push(r.owner_user_id);
    }
    if (rows.length < batchSize) return { owners, documents };
    const last = rows[rows.length - 1];
    cursor = { expiresAt: last.expires_at, id: last.id };
  }
}

/** 25 seeded runs of `fn` from `firstSeed`, each on emptied tables with its own random source. */
function seeded(firstSeed: number, name: string, fn: (next: () => number, seed: number) => Promise<void>): void {
  test.each(Array.from({ length: 25 }, (_, i) => [firstSeed + i * 7_919]))(name, async (seed) => {
    await resetData(stack.db);
    await fn(mulberry32(seed), seed);
  });
}

const key = (documentId: string, threshold: number) => `${documentId}:${threshold}`;

/**
 * What `explain`'s reading (the rule's TypeScript form) says is due on `window`'s day, as "documentId:threshold":
 * every document of the table and its markers as the database holds them now, read one by one.
 */
async function explainedDue(window: CandidateWindow): Promise<string[]> {
  const { rows } = await stack.db.admin.query<{
    id: string;
    type: string;
    number_mask: string;
    status: string;
    is_deleted: boolean;
    expires_at: string | null;
    markers: { thresholdDays: number; remindedAt: string }[];
  }>(
    `select d.id, d.type, d.number_mask, d.status, d.is_deleted, d.expires_at,
            coalesce(jsonb_agg(jsonb_build_object('thresholdDays', r.threshold_days, 'remindedAt', r.reminded_at))
                     filter (where r.id is not null), '[]') as markers
       from profile.person_documents d
       left join profile.document_expiry_reminders r on r.document_id = d.id
      group by d.id`,
  );
  const pruneCutoff = await selectPruneCutoff(stack.db.admin);
  return rows.flatMap((r) => {
    const read = explainDocument(
      {
        documentId: r.id,
        type: r.type,
        numberMask: r.number_mask,
        status: r.status,
        isDeleted: r.is_deleted,
        expiresAt: r.expires_at,
      },
      r.markers.map((m) => ({ ...m, queuedBy: null })),
      { ...window, pruneCutoff },
    );
    return read.verdict === 'due' ? [key(r.id, read.currentThreshold!)] : [];
  });
}

seeded(
  1_000,
  'random thresholds over random days: the scan, the claim, preview and the backlog follow the model (seed %i)',
  async (next, seed) => {
    const owners = Array.from({ length: 5 }, () => crypto.randomUUID());
    const docs: ModelDocument[] = Array.from({ length: 24 }, () => {
      const odd = next();
      return {
        id: crypto.randomUUID(),
        ownerUserId: owners[Math.floor(next() * owners.length)],
        expiresAt: addDays(BASE_DATE, Math.floor(next() * 180) - 40),
        markers: new Set<number>(),
        ...(odd < 0.1 ? { inactive: 'Archived' as const } : odd < 0.15 ? { inactive: 'deleted' as const } : {}),
      };
    });
    await insertDocuments(
      stack.db.admin,
      BASE_DATE,
      docs.map((d) => ({
        id: d.id,
        ownerUserId: d.ownerUserId,
        daysLeft: daysBetween(BASE_DATE, d.expiresAt),
        ...(d.inactive === 'Archived' ? { status: 'Archived' as const } : {}),
        ...(d.inactive === 'deleted' ? { isDeleted: true } : {}),
      })),
    );
    /** Thresholds each document was reminded at, in the order sent. */
    const sent = new Map<string, number[]>();
    let day = 0;
    for (let step = 0; step < 8; step += 1) {
      day += Math.floor(next() * 12);
      const asOfDate = addDays(BASE_DATE, day);
      const thresholdsDays = randomThresholds(next);
      const window: CandidateWindow = { asOfDate, thresholdsDays, retentionDays: RETENTION_DAYS };
      const context = `seed ${seed}, step ${step}, ${asOfDate}, thresholds ${thresholdsDays.join(',')}`;
      const expected = modelDue(docs, asOfDate, thresholdsDays);
      const expectedKeys = [...expected.entries()].map(([id, e]) => key(id, e.current)).sort();

      // Read-only views first: the backlog, the scan and preview all see the model's due set.
      expect([context, await countDueDocuments(stack.db.worker, window)]).toEqual([context, expected.size]);
      const batchSize = 1 + Math.floor(next() * 6);
      const scan = await scanOwners(window, batchSize);
      expect([context, [...scan.documents].sort()]).toEqual([context, [...expected.keys()].sort()]);
      const preview = await previewCycle(stack.db.worker, window, batchSize);
      const sqlDue = preview.owners.flatMap((o) => o.documents.map((d) => key(d.documentId, d.thresholdDays))).sort();
      expect([context, sqlDue]).toEqual([context, expectedKeys]);
      // The rule's TypeScript form, as `explain` reads every document and its markers, says what the SQL says.
      expect([context, (await explainedDue(window)).sort()]).toEqual([context, sqlDue]);

      // The cycle: claim the scanned owners, then prune.
      const claims = await withTransaction(stack.db.worker, (tx) =>
        claimOwners(tx, {
          ...window,
          ownerUserIds: scan.owners,
          asOf: `${asOfDate}T03:00:00.000Z`,
          jobRunId: `due-rule-${seed}`,
        }),
      );
      const won = claims.owners.flatMap((c) => c.won.map((d) => key(d.documentId, d.thresholdDays))).sort();
      expect([context, won]).toEqual([context, expectedKeys]);
      await deleteExpiredMarkers(stack.db.worker, addDays(asOfDate, -RETENTION_DAYS), 10_000);

      for (const { doc, current } of expected.values()) {
        for (const t of crossedThresholds(daysBetween(asOfDate, doc.expiresAt), thresholdsDays)) doc.markers.add(t);
        sent.set(doc.id, [...(sent.get(doc.id) ?? []), current]);
      }
      for (const doc of docs) {
        if (doc.expiresAt < addDays(asOfDate, -RETENTION_DAYS)) doc.markers.clear();
      }
      const { rows } = await stack.db.admin.query<{ document_id: string; threshold_days: number }>(
        'select document_id, threshold_days from profile.document_expiry_reminders',
      );
      expect([context, rows.map((r) => key(r.document_id, r.threshold_days)).sort()]).toEqual([
        context,
        docs.flatMap((d) => [...d.markers].map((t) => key(d.id, t))).sort(),
      ]);
    }
    // The rule's point: per document, every reminder is more urgent than the one before it.
    for (const [id, thresholds] of sent) {
      for (let i = 1; i < thresholds.length; i += 1) {
        expect([seed, id, thresholds[i] < thresholds[i - 1]]).toEqual([seed, id, true]);
      }
    }
  },
);

seeded(
  2_000,
  'AsOf moving forward and back (backfills, manual runs) with prunes between: no (document, threshold) is sent twice, and no reminder is less urgent than an earlier one (seed %i)',
  async (next, seed) => {
    const owners = Array.from({ length: 4 }, () => crypto.randomUUID());
    const docs = Array.from({ length: 20 }, () => ({
      id: crypto.randomUUID(),
      ownerUserId: owners[Math.floor(next() * owners.length)],
      daysLeft: Math.floor(next() * 160) - 40,
    }));
    await insertDocuments(stack.db.admin, BASE_DATE, docs);
    const sent = new Map<string, number[]>();
    let day = 0;
    for (let step = 0; step < 12; step += 1) {
      // Mostly forward, by up to 60 days so prunes happen; one step in three goes back up to 20 days.
      day += next() < 0.33 ? -Math.floor(next() * 21) : Math.floor(next() * 60);
      const asOfDate = addDays(BASE_DATE, day);
      const window: CandidateWindow = {
        asOfDate,
        thresholdsDays: randomThresholds(next),
        retentionDays: RETENTION_DAYS,
      };
      const scan = await scanOwners(window, 7);
      // Below a prune cutoff, after a step back: `explain`'s reading still says what the SQL says.
      const preview = await previewCycle(stack.db.worker, window, 7);
      expect([seed, step, (await explainedDue(window)).sort()]).toEqual([
        seed,
        step,
        preview.owners.flatMap((o) => o.documents.map((d) => key(d.documentId, d.thresholdDays))).sort(),
      ]);
      const claims = await withTransaction(stack.db.worker, (tx) =>
        claimOwners(tx, {
          ...window,
          ownerUserIds: scan.owners,
          asOf: `${asOfDate}T03:00:00.000Z`,
          jobRunId: 'p',
        }),
      );
      for (const d of claims.owners.flatMap((c) => c.won)) {
        sent.set(d.documentId, [...(sent.get(d.documentId) ?? []), d.thresholdDays]);
      }
      // The prune as the cycle runs it: the cutoff first, then the deletes.
      const cutoff = addDays(asOfDate, -RETENTION_DAYS);
      await raisePruneCutoff(stack.db.worker, cutoff);
      await deleteExpiredMarkers(stack.db.worker, cutoff, 10_000);
    }
    for (const [id, thresholds] of sent) {
      for (let i = 1; i < thresholds.length; i += 1) {
        expect([seed, id, thresholds.slice(0, i + 1), thresholds[i] < thresholds[i - 1]]).toEqual([
          seed,
          id,
          thresholds.slice(0, i + 1),
          true,
        ]);
      }
    }
  },
);
