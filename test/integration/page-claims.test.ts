/**
 * A partition's page claim (`claimPage`, docs/DESIGN.md#page-claims) on a real PostgreSQL, run in the SDK's
 * activity context with a chosen attempt: the page read and its owners claimed in one activity, the page's
 * end kept for the next page and for a retry, a retry after a commit that was never reported, a bad owner
 * among good ones, and partitions that cover the day once.
 */
import crypto from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import pino from 'pino';
import { createActivities, type ClaimPageInput, type ClaimPageResult } from '../../src/activities';
import { claimLockedOwners } from '../../src/activities/claim/sql/claim-owners';
import { waitForOwnerLocks } from '../../src/activities/claim/sql/lock-owners';
import { readAndLockPage, selectPageEnd } from '../../src/activities/claim/sql/pages';
import {
  idRanges,
  PAGE_CLAIM_BEGIN,
  scanBounds,
  scanStart,
  selectCandidatePage,
  type PageCursor,
} from '../../src/db/candidates';
import { withTransaction } from '../../src/db/pool';
import { deleteExpiredMarkers, raisePruneCutoff } from '../../src/db/reminders';
import { addDays } from '../../src/domain/dates';
import { claimOwners, observedPool, runActivity } from '../support/claims';
import { sleep } from '../support/wait';
import { insertDocuments, markers, outbox, rejectOwner, seedOwnersWithTwoDocuments } from '../support/data';
import { testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';
const WINDOW = { asOfDate: AS_OF_DATE, thresholdsDays: [30, 7, 1, 0], retentionDays: 90 };

const stack = useIntegration('page-claims');
let activities: ReturnType<typeof createActivities>;

beforeAll(() => {
  activities = createActivities({ pool: stack.db.worker, logger: pino({ level: 'silent' }), config: testConfig() });
});

function input(cycleId: string, page: number, over: Partial<ClaimPageInput> = {}): ClaimPageInput {
  return {
    window: WINDOW,
    cycleId,
    jobRunId: 'page-claims-test',
    page,
    batchSize: 4,
    partition: { index: 0, count: 1 },
    asOf: `${AS_OF_DATE}T03:00:00.000Z`,
    ownerConcurrency: 2,
    lastAttempt: 5,
    pages: 1,
    ...over,
  };
}

/**
 * Attempt `attempt` of the page activity `activityId` of run `run-1`: its `queuedBy` is `run-1/<activityId>`;
 * on `pool` (an observed worker pool) when given.
 */
function claimPage(
  request: ClaimPageInput,
  attempt = 1,
  activityId = `page-${request.page}`,
  pool?: typeof stack.db.worker,
): Promise<ClaimPageResult> {
  const on = pool ? createActivities({ pool, logger: pino({ level: 'silent' }), config: testConfig() }) : activities;
  return runActivity(on.claimPage, request, {
    attempt,
    activityId,
    workflowExecution: { workflowId: 'page-claims', runId: 'run-1' },
  });
}

const seedOwners = (n: number) => seedOwnersWithTwoDocuments(stack.db.admin, AS_OF_DATE, n);

test("a page's claim reads the page and claims its owners with all their due documents; the next page starts at its end", async () => {
  const owners = await seedOwners(3);
  const cycleId = crypto.randomUUID();

  // Page 1: the three 7-day documents and one 25-day one; its three owners get both documents each.
  const first = await claimPage(input(cycleId, 1));
  expect(first).toEqual({
    ownersProcessed: 3,
    ownersNotified: 3,
    busyOwnerIds: [],
    remindersSent: 6,
    markersInserted: 9,
    skippedAlreadyMarked: 0,
    failed: [],
    documentCount: 4,
    owners: 3,
    hasNext: true,
    ownersFoundBusy: 0,
    pagesClaimed: 1,
  });
  expect(await selectPageEnd(stack.db.worker, cycleId, 1)).toBeDefined();
  const events = await outbox(stack.db.admin);
  expect(events.map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
  expect(events.every((e) => e.payload.documents.length === 2)).toBe(true);

  // Page 2 starts after page 1's end: the two 25-day documents left were claimed with their owners.
  const second = await claimPage(input(cycleId, 2));
  expect(second).toEqual(expect.objectContaining({ documentCount: 0, owners: 0, remindersSent: 0, hasNext: false }));
  expect(await outbox(stack.db.admin)).toHaveLength(3);
});

test('a later page of a cycle that has no end of the page before it is refused, naming the partition', async () => {
  const err = await claimPage(input(crypto.randomUUID(), 3, { partition: { index: 1, count: 2 } })).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toContain('no scan position for page 2 of partition 2 of 2');
  // Permanent: no retry writes the missing end, so the partition fails at once instead of after ten attempts.
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toEqual(expect.objectContaining({ type: 'ScanPositionMissing', nonRetryable: true }));
});

test('a retry after the first attempt committed and was never reported reports what that attempt did, from its receipts', async () => {
  await seedOwners(3);
  const cycleId = crypto.randomUUID();
  // Attempt 1 committed and its worker died before reporting: its result is dropped.
  const lost = await claimPage(input(cycleId, 1), 1);
  const before = await markers(stack.db.admin);

  const retry = await claimPage(input(cycleId, 1), 2);

  // The same result, field by field, and nothing written twice.
  expect(retry).toEqual(lost);
  expect(retry).toEqual(expect.objectContaining({ owners: 3, documentCount: 4, hasNext: true }));
  expect(await outbox(stack.db.admin)).toHaveLength(3);
  expect(await markers(stack.db.admin)).toHaveLength(before.length);
  // Another activity (another id) asked for the page counts what the page held, and claims nothing of it.
  const other = await claimPage(input(cycleId, 1), 2, 'another');
  expect(other).toEqual(
    expect.objectContaining({ documentCount: 4, ownersProcessed: 0, remindersSent: 0, ownersNotified: 0 }),
  );
});

test('a retry after the first attempt read the page alone and died before claiming claims the page it read', async () => {
  const owners = await seedOwners(3);
  const cycleId = crypto.randomUUID();
  // Attempt 1 read the page alone (after its one-transaction claim failed for good), recorded it with every
  // owner left to its groups, then died: no marker, no event.
  const bounds = scanBounds(WINDOW, null);
  await withTransaction(
    stack.db.worker,
    (tx) =>
      readAndLockPage(tx, {
        window: WINDOW,
        bounds,
        after: scanStart(bounds, null),
        limit: 4,
        range: idRanges(1)[0],
        cycleId,
        jobRunId: 'page-claims-test',
        page: 1,
        attempt: 1,
        queuedBy: 'run-1/page-1',
        lockFirst: 0,
      }),
    PAGE_CLAIM_BEGIN,
  );

  const retry = await claimPage(input(cycleId, 1), 2);

  expect(retry).toEqual(expect.objectContaining({ ownersProcessed: 3, remindersSent: 6, owners: 3, hasNext: true }));
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test("an attempt whose claim fails records no end of the page: its end commits with the first group's reminders", async () => {
  const owners = await seedOwners(3);
  const cycleId = crypto.randomUUID();
  // A transient failure (serialization, retried by Temporal) of one owner's marker insert fails the claim
  // of the page's one group.
  const accept = await rejectOwner(stack.db.admin, owners[1], '40001');
  try {
    await expect(claimPage(input(cycleId, 1, { ownerConcurrency: 4 }), 1)).rejects.toThrow(/rejected for the test/);
    expect(await selectPageEnd(stack.db.worker, cycleId, 1)).toBeUndefined();
    expect(await markers(stack.db.admin)).toHaveLength(0);
  } finally {
    await accept();
  }

  const retry = await claimPage(input(cycleId, 1), 2);

  expect(retry).toEqual(expect.objectContaining({ ownersProcessed: 3, remindersSent: 6, owners: 3, hasNext: true }));
  expect(await selectPageEnd(stack.db.worker, cycleId, 1)).toBeDefined();
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

/**
 * Owner X's documents fall in pages 1 and 2 of pages of 4, every document at its own day: A X B C | D (X) E F
 * G | H, where X's second document is reminded with its first and so no longer in page 2, though within its
 * ends. Each document is due at its own current threshold: 10 reminders over 9 owners.
 */
async function seedOwnerAcrossPages(): Promise<{ owners: string[]; x: string }> {
  const [a, x, b, c, d, e, f, g, h] = Array.from({ length: 9 }, () => crypto.randomUUID());
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    [a, x, b, c, d, x, e, f, g, h].map((ownerUserId, i) => ({ ownerUserId, daysLeft: i + 1 })),
  );
  return { owners: [a, x, b, c, d, e, f, g, h], x };
}

test('an activity asked for several pages claims them one after another, each its own end, and says how many', async () => {
  const { owners } = await seedOwnerAcrossPages();
  const cycleId = crypto.randomUUID();

  const result = await claimPage(input(cycleId, 1, { pages: 8 }));

  expect(result).toEqual(
    expect.objectContaining({
      pagesClaimed: 3,
      hasNext: false,
      ownersProcessed: 9,
      remindersSent: 10,
      documentCount: 9,
    }),
  );
  for (const page of [1, 2, 3]) expect(await selectPageEnd(stack.db.worker, cycleId, page)).toBeDefined();
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());

  // Asked for one page, an activity claims one: the next starts where it ended.
  const cycle2 = crypto.randomUUID();
  await stack.db.admin.query('truncate profile.document_expiry_reminders, profile.outbox_events');
  const one = await claimPage(input(cycle2, 1, { pages: 1 }));
  expect(one).toEqual(expect.objectContaining({ pagesClaimed: 1, hasNext: true, remindersSent: 5 }));
  const next = await claimPage(input(cycle2, 2, { pages: 8 }));
  expect(next).toEqual(expect.objectContaining({ pagesClaimed: 2, hasNext: false, remindersSent: 5 }));
});

test('a retry goes on through every page an earlier attempt recorded, whatever it is asked, and counts each reminder once', async () => {
  const { owners } = await seedOwnerAcrossPages();
  const cycleId = crypto.randomUUID();
  // Attempt 1 claimed three pages and was never reported.
  const lost = await claimPage(input(cycleId, 1, { pages: 8 }), 1);

  // Attempt 2, asked for one page (as if its time budget were spent), counts the three from their receipts;
  // owner X's reminders, claimed with page 1, are counted once.
  const retry = await claimPage(input(cycleId, 1, { pages: 1 }), 2);

  expect(retry).toEqual(lost);
  expect(retry).toEqual(
    expect.objectContaining({
      pagesClaimed: 3,
      hasNext: false,
      ownersProcessed: 9,
      ownersNotified: 9,
      remindersSent: 10,
    }),
  );
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test('on the last attempt one bad owner among good ones is reported failed; the others are claimed', async () => {
  const owners = await seedOwners(3);
  const bad = owners[1];
  await rejectOwner(stack.db.admin, bad);
  const cycleId = crypto.randomUUID();

  const result = await claimPage(input(cycleId, 1, { lastAttempt: 1 }), 1);

  expect(result.failed.map((f) => f.ownerUserId)).toEqual([bad]);
  expect(result).toEqual(expect.objectContaining({ ownersProcessed: 2, remindersSent: 4, owners: 3 }));
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual(
    owners.filter((o) => o !== bad).sort(),
  );
});

test("partitions' pages cover the day once: every owner one event, every due document in one partition's pages", async () => {
  const owners = await seedOwners(40);
  const partitions = 3;
  let documents = 0;
  let sent = 0;
  for (let index = 0; index < partitions; index += 1) {
    const cycleId = crypto.randomUUID();
    for (let page = 1; ; page += 1) {
      const r = await claimPage(input(cycleId, page, { partition: { index, count: partitions }, batchSize: 7 }));
      documents += r.documentCount;
      sent += r.remindersSent;
      if (!r.hasNext) break;
    }
  }
  const events = await outbox(stack.db.admin);
  expect(events.map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
  expect(sent).toBe(80);
  // A document claimed with its owner on an earlier page is not due when its own page comes.
  expect(documents).toBeLessThanOrEqual(80);
  expect(documents).toBeGreaterThanOrEqual(40);
});

/** A transaction of another claimer that holds `owner` (its lock, its uncommitted claim) until released. */
async function holdOwner(owner: string): Promise<{ release: (how: 'commit' | 'rollback') => Promise<void> }> {
  const holder = await stack.db.worker.connect();
  await holder.query('begin');
  await claimOwners(holder, {
    ownerUserIds: [owner],
    asOf: `${AS_OF_DATE}T03:00:00.000Z`,
    ...WINDOW,
    jobRunId: 'another-partition',
    queuedBy: 'run-2/page-9',
  });
  return {
    release: async (how) => {
      await holder.query(how);
      holder.release();
    },
  };
}

test("an owner another partition holds for a moment is tried again within the page's activity and claimed", async () => {
  const owners = await seedOwners(3);
  const held = await holdOwner(owners[1]);
  const claiming = claimPage(input(crypto.randomUUID(), 1));
  // The second try waits for the holder, which gives up (its claim rolls back) well after the page's first
  // try: this page sends for the owner.
  await sleep(700);
  await held.release('rollback');

  const result = await claiming;

  expect(result).toEqual(
    expect.objectContaining({ ownersFoundBusy: 1, busyOwnerIds: [], ownersProcessed: 3, remindersSent: 6 }),
  );
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test("an owner whose holder commits while the activity's second try waits is found done, and its one event is the holder's", async () => {
  const owners = await seedOwners(3);
  const held = await holdOwner(owners[1]);
  const claiming = claimPage(input(crypto.randomUUID(), 1));
  await sleep(700);
  await held.release('commit');

  const result = await claiming;

  expect(result).toEqual(
    expect.objectContaining({ ownersFoundBusy: 1, busyOwnerIds: [], ownersProcessed: 3, remindersSent: 4 }),
  );
  const events = await outbox(stack.db.admin);
  expect(events.map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
  expect(events.find((e) => e.aggregate_id === owners[1])?.correlation_id).toBe('another-partition');
});

test('two second tries that wait for the same owners in opposite orders both finish: the locks are taken in key order', async () => {
  const owners = await seedOwners(2);
  const held = [await holdOwner(owners[0]), await holdOwner(owners[1])];
  const secondTry = (ownerUserIds: string[], queuedBy: string) =>
    withTransaction(stack.db.worker, async (tx) => {
      const locked = await waitForOwnerLocks(tx, ownerUserIds, Date.now() + 5_000);
      const claimed = await claimLockedOwners(tx, {
        ownerUserIds: locked,
        asOf: `${AS_OF_DATE}T03:00:00.000Z`,
        ...WINDOW,
        jobRunId: 'page-claims-test',
        queuedBy,
      });
      return { locked, claimed };
    });
  const forward = secondTry(owners, 'run-3/page-1');
  const backward = secondTry([...owners].reverse(), 'run-4/page-1');
  await sleep(300);
  // Each holder ends alone: waiting in request order, one try would hold owner 0 waiting for owner 1 and
  // the other the reverse, and PostgreSQL would break the deadlock by failing one of them.
  await held[0].release('rollback');
  await sleep(100);
  await held[1].release('rollback');

  const [a, b] = await Promise.all([forward, backward]);

  expect([...a.locked, ...b.locked]).toHaveLength(4);
  expect(a.claimed.remindersSent + b.claimed.remindersSent).toBe(4);
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test("a second try's statements do not grow with its owners: the locks of 2 or 40 are taken in one statement", async () => {
  // Issue 36: a savepoint, a lock_timeout, a lock and a release per owner were 0.1 s of a steady day's 1 s.
  const statementsFor = async (n: number) => {
    const owners = await seedOwners(n);
    let statements = 0;
    const claims = await withTransaction(stack.db.worker, async (tx) => {
      const counting = {
        query: (...args: Parameters<typeof tx.query>) => {
          statements += 1;
          return tx.query(...args);
        },
      } as typeof tx;
      const locked = await waitForOwnerLocks(counting, owners, Date.now() + 2_000);
      await claimLockedOwners(counting, {
        ownerUserIds: locked,
        asOf: `${AS_OF_DATE}T03:00:00.000Z`,
        ...WINDOW,
        jobRunId: 'page-claims-test',
        queuedBy: `run-${n}/page-1`,
      });
      return locked;
    });
    expect(claims).toHaveLength(n);
    return statements;
  };

  const few = await statementsFor(2);
  const many = await statementsFor(40);

  expect(many).toBe(few);
  expect(await outbox(stack.db.admin)).toHaveLength(42);
});

test('an owner held past the second try is reported busy by id, counted once, and left to the busy retries', async () => {
  const owners = await seedOwners(3);
  const held = await holdOwner(owners[1]);
  try {
    const result = await claimPage(input(crypto.randomUUID(), 1));
    expect(result).toEqual(
      expect.objectContaining({ ownersFoundBusy: 1, busyOwnerIds: [owners[1]], ownersProcessed: 2, remindersSent: 4 }),
    );
  } finally {
    await held.release('commit');
  }
  // The holder's own claim is the owner's one event.
  const events = await outbox(stack.db.admin);
  expect(events.map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test.each([
  ['in one group', 2],
  ['in a group each', 1],
])(
  "the second try's wait is bounded in all (busy owners %s): an owner held past the budget is busy, not waited for",
  async (_, ownerConcurrency) => {
    const owners = await seedOwners(3);
    const early = await holdOwner(owners[0]);
    const late = await holdOwner(owners[1]);
    const started = Date.now();
    const claiming = claimPage(input(crypto.randomUUID(), 1, { ownerConcurrency }));
    const released = Promise.all([
      sleep(1_900).then(() => early.release('rollback')),
      sleep(3_800).then(() => late.release('rollback')),
    ]);

    const result = await claiming;
    const took = Date.now() - started;
    await released;

    // The owner released within the budget is claimed; the other is given up at the budget (2 s in all),
    // not waited for until its release (each lock waiting 2 s of its own ended at 3.8 s).
    expect(result).toEqual(
      expect.objectContaining({ ownersFoundBusy: 2, busyOwnerIds: [owners[1]], ownersProcessed: 2 }),
    );
    expect(took).toBeLessThan(3_800);
    expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([owners[0], owners[2]].sort());
  },
);

/** The owners of the first `pages` pages of `size` due documents, page by page, before anything is claimed. */
async function ownersByPage(pages: number, size: number): Promise<string[][]> {
  const byPage: string[][] = [];
  let after: { expiresAt: string; id: string } | null = null;
  for (let i = 0; i < pages; i += 1) {
    const rows = await selectCandidatePage(stack.db.worker, WINDOW, after, size);
    byPage.push([...new Set(rows.map((r) => r.owner_user_id))]);
    const last = rows[rows.length - 1];
    after = { expiresAt: last.expires_at, id: last.id };
  }
  return byPage;
}

test("busy owners of an activity's pages are tried once more together, after its pages, in one waiting statement", async () => {
  const owners = await seedOwners(8);
  // Pages of 4: the eight 7-day documents make pages 1 and 2, four owners each; the 25-day documents of the
  // two held owners make page 3, where they are busy again.
  const [first, second] = await ownersByPage(2, 4);
  const held = [await holdOwner(first[1]), await holdOwner(second[2])];
  let waits = 0;
  const pool = observedPool(stack.db.worker, (text) => {
    if (text.includes('wait_for_xact_locks')) waits += 1;
  });
  const claiming = claimPage(input(crypto.randomUUID(), 1, { pages: 8 }), 1, 'page-1', pool);
  await sleep(700);
  await Promise.all(held.map((h) => h.release('rollback')));

  const result = await claiming;

  expect(result).toEqual(
    expect.objectContaining({
      pagesClaimed: 3,
      ownersFoundBusy: 2,
      busyOwnerIds: [],
      ownersProcessed: 8,
      remindersSent: 16,
      hasNext: false,
    }),
  );
  // One second try for the three pages' busy owners, not one a page.
  expect(waits).toBe(1);
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test('an owner busy on one page and claimed on a later page of the same activity is not tried again', async () => {
  const owners = await seedOwners(8);
  const [first] = await ownersByPage(1, 4);
  const held = await holdOwner(first[0]);
  let claims = 0;
  let waits = 0;
  // The holder gives up as page 2's first claim begins (page 1 is two: `ownerConcurrency` 2): page 3, the
  // owner's 25-day document, finds the owner free.
  const pool = observedPool(stack.db.worker, async (text) => {
    if (text.includes('wait_for_xact_locks')) waits += 1;
    if (!opensClaim(text)) return;
    claims += 1;
    if (claims === 3) await held.release('rollback');
  });

  const result = await claimPage(input(crypto.randomUUID(), 1, { pages: 8 }), 1, 'page-1', pool);

  expect(result).toEqual(
    expect.objectContaining({ ownersFoundBusy: 1, busyOwnerIds: [], ownersProcessed: 8, remindersSent: 16 }),
  );
  expect(waits).toBe(0);
  const events = await outbox(stack.db.admin);
  expect(events.map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
  expect(events.find((e) => e.aggregate_id === first[0])?.payload.documents).toHaveLength(2);
});

const READS_PRUNE_CUTOFF = /^\s*select cutoff from profile\.document_expiry_reminder_prune_cutoff/i;
const READS_SCAN_POSITION = /^\s*select expires_at, document_id from profile\.document_expiry_reminder_scan_positions/i;

test("an attempt's pages read the prune cutoff once and start where the page before ended, without reading it back", async () => {
  const owners = await seedOwners(12);
  const cycleId = crypto.randomUUID();
  let cutoffs = 0;
  let positions = 0;
  const pool = observedPool(stack.db.worker, (text) => {
    if (READS_PRUNE_CUTOFF.test(text)) cutoffs += 1;
    if (READS_SCAN_POSITION.test(text)) positions += 1;
  });

  const result = await claimPage(input(cycleId, 1, { pages: 8 }), 1, 'page-1', pool);

  // Twelve 7-day documents and twelve 25-day ones, four a page: the 7-day ones and the 25-day ones of owners
  // no earlier page claimed, then an empty page that ends the scan.
  expect(result.pagesClaimed).toBeGreaterThanOrEqual(3);
  expect(result).toEqual(expect.objectContaining({ ownersNotified: 12, remindersSent: 24, hasNext: false }));
  expect(cutoffs).toBe(1);
  expect(positions).toBe(0);
  // The ends the pages recorded chain: each page starts after the one before, as a later activity reads them.
  const recorded: PageCursor[] = [];
  for (let page = 1; page <= result.pagesClaimed; page += 1) {
    const end = await selectPageEnd(stack.db.admin, cycleId, page);
    if (end) recorded.push(end);
  }
  expect(recorded.length).toBeGreaterThanOrEqual(2);
  for (let i = 1; i < recorded.length; i += 1) {
    const [before, after] = [recorded[i - 1], recorded[i]];
    expect(after.expiresAt > before.expiresAt || (after.expiresAt === before.expiresAt && after.id > before.id)).toBe(
      true,
    );
  }
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
});

test("the mirror: a prune that raises the cutoff between an attempt's pages leaves the documents below it alone", async () => {
  const seed = (daysLeft: number) =>
    insertDocuments(
      stack.db.admin,
      AS_OF_DATE,
      Array.from({ length: 4 }, () => ({ daysLeft })),
    );
  const expiredLongAgo = await seed(-40); // due "at 0", never reminded: page 1
  const remindedBefore = await seed(-30); // reminded "at 0" by an earlier day: not due while their markers stand
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     select gen_random_uuid(), d.id, d.owner_user_id, d.type, 0, d.expires_at, now()
       from profile.person_documents d where d.id = any($1::uuid[])`,
    [remindedBefore.map((d) => d.id)],
  );
  const dueSoon = await seed(7);
  // A prune (a twin cycle's end) raises the cutoff above the reminded documents and deletes their markers when
  // the attempt's second page opens its transaction: that page scans with the cutoff its first page read.
  let claims = 0;
  const pool = observedPool(stack.db.worker, async (text) => {
    if (!opensClaim(text)) return;
    claims += 1;
    if (claims !== 2) return;
    // The prune's own two statements, in its order.
    await raisePruneCutoff(stack.db.admin, addDays(AS_OF_DATE, -20));
    await deleteExpiredMarkers(stack.db.admin, addDays(AS_OF_DATE, -20), 5_000);
  });

  // A page's four owners in one transaction, so the second opens the second page.
  const result = await claimPage(input(crypto.randomUUID(), 1, { pages: 8, ownerConcurrency: 4 }), 1, 'page-1', pool);

  expect(claims).toBeGreaterThanOrEqual(3);
  expect(result).toEqual(expect.objectContaining({ ownersNotified: 8, remindersSent: 8, hasNext: false }));
  const reminded = (await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort();
  expect(reminded).toEqual([...expiredLongAgo, ...dueSoon].map((d) => d.ownerUserId).sort());
  const marked = new Set((await markers(stack.db.admin)).map((m) => m.document_id));
  for (const doc of remindedBefore) expect(marked.has(doc.id)).toBe(false);
});

/** A statement that opens a claim transaction (a read-only transaction is not one). */
const opensClaim = (text: string) => /^BEGIN/i.test(text) && !/READ ONLY/i.test(text);

/**
 * The worker's pool, counting the claim transactions begun through it and failing the one past `limit`, so a
 * claim that does unbounded work fails at once instead of running on.
 */
function countingClaims(limit: number): { pool: typeof stack.db.worker; claims: () => number } {
  let claims = 0;
  const pool = observedPool(stack.db.worker, (text) => {
    if (!opensClaim(text)) return;
    claims += 1;
    if (claims > limit) throw new Error(`claim transaction ${claims}, past ${limit}`);
  });
  return { pool, claims: () => claims };
}

/** `n` documents of their own owners, expired within the window and reminded at their threshold (0). */
async function seedRemindedBelowWindow(n: number): Promise<void> {
  await stack.db.admin.query(
    `with docs as (
       insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, payload_cipher)
       select gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Passport', '****', $1::date - 1 - (i % 80), 'Active', '\\x00'
         from generate_series(1, $2::int) as i
       returning id, owner_user_id, expires_at)
     insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     select gen_random_uuid(), id, owner_user_id, 'Passport', 0, expires_at, now() from docs`,
    [AS_OF_DATE, n],
  );
  // Analyzed, as a table that grew by so much would be before a cycle reads it.
  await stack.db.admin.query('analyze profile.person_documents, profile.document_expiry_reminders');
}

test('a retried claim does work bounded by the pages its earlier attempt recorded, not by the reminded documents below them', async () => {
  await seedRemindedBelowWindow(20_000);
  const owners = await seedOwners(6);
  const cycleId = crypto.randomUUID();
  // Attempt 1 claimed page 1 (four 7-day documents of four owners) and its worker died before reporting.
  const lost = await claimPage(input(cycleId, 1), 1);
  expect(lost).toEqual(expect.objectContaining({ owners: 4, remindersSent: 8 }));

  // The retry claims the page's four owners again, in ⌈4 / ownerConcurrency 2⌉ = 2 claim transactions: not
  // the 20,000 owners whose reminded documents lie between the window's start and the page.
  const counting = countingClaims(2);
  const retry = await claimPage(input(cycleId, 1), 2, 'page-1', counting.pool);

  expect(counting.claims()).toBeLessThanOrEqual(2);
  expect(retry).toEqual(
    expect.objectContaining({
      owners: 4,
      documentCount: 4,
      ownersProcessed: lost.ownersProcessed,
      remindersSent: lost.remindersSent,
      hasNext: true,
    }),
  );
  // The rest of the day follows from the recorded end: every owner one event.
  const next = await claimPage(input(cycleId, 2, { pages: 8 }));
  expect(next).toEqual(expect.objectContaining({ remindersSent: 4, hasNext: false }));
  expect((await outbox(stack.db.admin)).map((e) => e.aggregate_id).sort()).toEqual([...owners].sort());
}, 60_000);

test('a first attempt of a page an earlier activity recorded never overwrites its end, and claims from it', async () => {
  const { owners } = await seedOwnerAcrossPages();
  const cycleId = crypto.randomUUID();
  // Activity page-1 claimed pages 1 to 3 and died before reporting; a workflow that counted only page 1 of
  // it (a retry that knew one page) asks a new activity for page 2.
  await claimPage(input(cycleId, 1, { pages: 8 }), 1, 'page-1');
  const recorded = await selectPageEnd(stack.db.worker, cycleId, 2);
  // A document added since, in page 2's range: a fresh read of page 2 would end elsewhere.
  await insertDocuments(stack.db.admin, AS_OF_DATE, [{ ownerUserId: crypto.randomUUID(), daysLeft: 5 }]);

  const second = await claimPage(input(cycleId, 2, { pages: 8 }), 1, 'page-2');

  expect(await selectPageEnd(stack.db.worker, cycleId, 2)).toEqual(recorded);
  expect(second).toEqual(expect.objectContaining({ hasNext: false }));
  // Nothing sent twice: one event per owner.
  const events = await outbox(stack.db.admin);
  expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(events.length);
  expect(events.map((e) => e.aggregate_id)).toEqual(expect.arrayContaining(owners));
});
