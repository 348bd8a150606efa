/**
 * One page of a partition (docs/DESIGN.md#page-claims): a page no attempt read is read, recorded and claimed in
 * one transaction with its first owners; a page recorded before is taken as recorded, and only its parts without
 * a receipt are claimed.
 */
import { ApplicationFailure } from '@temporalio/activity';
import {
  idRanges,
  PAGE_CLAIM_BEGIN,
  PAGE_PLAN_UNPIN,
  scanBounds,
  scanStart,
  selectPruneCutoff,
  type PageCursor,
} from '../../db/candidates';
import { isAttemptOver, isPermanentDatabaseError, describeError } from '../errors';
import type { Attempt } from './attempt';
import { groupPart, pagePart } from './journal';
import { claimPart, commitClaim } from './owner-groups';
import { claimLockedOwners } from './sql/claim-owners';
import { readAndLockPage, selectPageEnd, selectPagesFrom, type PageRecord, type ReadPage } from './sql/pages';
import type { ClaimPageInput, Receipt } from './types';

/** What a page held when it was first read: the scan's counts and where the next page starts. */
export interface PageFacts {
  documentCount: number;
  owners: number;
  hasNext: boolean;
}

/**
 * What an attempt knows of its partition's pages: those recorded before it started (a retry's: the pages its
 * earlier attempts read, whose claims it counts), where each page it took ends, and the prune cutoff, read once.
 */
export interface Scan {
  recorded: ReadonlyMap<number, PageRecord>;
  ends: Map<number, PageCursor>;
  pruneCutoff: () => Promise<string | null>;
}

/** The scan of an attempt of `input`: a retry reads the pages recorded from `input.page` on. */
export async function openScan(a: Attempt, input: ClaimPageInput): Promise<Scan> {
  const recorded = a.key.attempt > 1 ? await selectPagesFrom(a.deps.pool, input.cycleId, input.page) : [];
  let cutoff: Promise<string | null> | undefined;
  return {
    recorded: new Map(recorded.map((r) => [r.page, r])),
    ends: new Map(recorded.map((r) => [r.page, r.end])),
    pruneCutoff: () =>
      (cutoff ??= selectPruneCutoff(a.deps.pool).catch((err: unknown) => {
        cutoff = undefined;
        throw err;
      })),
  };
}

/** Claims page `page` of `input`'s partition, or counts what an earlier attempt claimed of it; what it held. */
export async function claimOnePage(a: Attempt, input: ClaimPageInput, page: number, scan: Scan): Promise<PageFacts> {
  const recorded = scan.recorded.get(page);
  if (recorded) return replayPage(a, input, recorded);
  const after = await previousEnd(a, input, page, scan);
  const read =
    (await readNewPage(a, input, page, after, scan)) ??
    (await selectPagesFrom(a.deps.pool, input.cycleId, page)).find((r) => r.page === page);
  if (!read) throw ApplicationFailure.retryable(`page ${page} was recorded by another transaction, then not found`);
  if ('page' in read) return replayPage(a, input, read);
  if (read.end) scan.ends.set(page, read.end);
  await claimGroups(a, input, page, read.ownerUserIds.slice(read.locked.length + read.busy.length));
  return {
    documentCount: read.documentCount,
    owners: read.ownerUserIds.length,
    hasNext: read.documentCount === input.batchSize,
  };
}

/**
 * A page an earlier attempt recorded: its own parts counted from their receipts, those without one claimed. A page
 * another activity read is that activity's to claim: only what it held counts here.
 */
async function replayPage(a: Attempt, input: ClaimPageInput, record: PageRecord): Promise<PageFacts> {
  if (record.queuedBy === null) {
    throw ApplicationFailure.nonRetryable(
      `page ${record.page} of cycle ${input.jobRunId} was recorded by a worker older than migration 021: ` +
        "that worker's version runs its cycles to their end",
      'PageOfAnOlderWorker',
    );
  }
  if (record.queuedBy === a.key.queuedBy) {
    a.journal.replay(pagePart(record.page));
    await claimGroups(a, input, record.page, record.laterOwnerIds);
  }
  return {
    documentCount: record.documentCount,
    owners: record.owners,
    hasNext: record.documentCount === input.batchSize,
  };
}

/**
 * The owners a page's first transaction left (a page with more owners than `ownerConcurrency`, or a page read
 * alone), in transactions of at most `ownerConcurrency` owners, one after another.
 */
async function claimGroups(a: Attempt, input: ClaimPageInput, page: number, owners: readonly string[]): Promise<void> {
  const size = Math.max(1, input.ownerConcurrency);
  for (let i = 0; i < owners.length; i += size) {
    a.checkpoint({ page });
    await claimPart(a, groupPart(page, i / size), owners.slice(i, i + size));
  }
}

/** Where the page before `page` ended, or null for the first page; refused when it was never recorded. */
async function previousEnd(a: Attempt, input: ClaimPageInput, page: number, scan: Scan): Promise<PageCursor | null> {
  if (page === 1) return null;
  const after = scan.ends.get(page - 1) ?? (await selectPageEnd(a.deps.pool, input.cycleId, page - 1));
  if (after) return after;
  const { partition } = input;
  throw ApplicationFailure.nonRetryable(
    `no scan position for page ${page - 1} of partition ${partition.index + 1} of ${partition.count} of cycle ` +
      `${input.jobRunId} (${input.cycleId}): a continuation only continues the partition that wrote it`,
    'ScanPositionMissing',
  );
}

/**
 * A page no attempt recorded, read, recorded and claimed with its first `ownerConcurrency` owners in ONE
 * transaction, so the page's record commits with its first owners' reminders and receipt or not at all. Should
 * that fail for good, or on the last attempt, the page is read and recorded alone, every owner left to the groups,
 * which claim a failing group's owners one by one. Undefined when another transaction recorded the page first.
 */
async function readNewPage(
  a: Attempt,
  input: ClaimPageInput,
  page: number,
  after: PageCursor | null,
  scan: Scan,
): Promise<ReadPage | undefined> {
  const bounds = scanBounds(input.window, await scan.pruneCutoff());
  const toRead = (lockFirst: number) => ({
    window: input.window,
    bounds,
    after: scanStart(bounds, after),
    limit: input.batchSize,
    range: idRanges(input.partition.count)[input.partition.index],
    ...a.key,
    jobRunId: input.jobRunId,
    page,
    lockFirst,
  });
  try {
    const done = await a.transaction(async (tx) => {
      const read = await readAndLockPage(tx, toRead(Math.max(1, input.ownerConcurrency)));
      if (read.recordedBefore) throw new RecordedBefore();
      if (read.ownerUserIds.length === 0) return { read };
      await tx.query(PAGE_PLAN_UNPIN);
      const cleared = a.journal.cleared(read.locked);
      const part = pagePart(page);
      const { won, ...counts } = await claimLockedOwners(
        tx,
        { ...a.claim, ownerUserIds: read.locked },
        { ...a.key, part, busyOwnerIds: read.busy, clearedOwnerIds: cleared },
      );
      const receipt: Receipt = { ...counts, part, ownerIds: [], busyOwnerIds: read.busy, clearedOwnerIds: cleared };
      return { read, claimed: { receipt, won } };
    }, PAGE_CLAIM_BEGIN);
    if (done.claimed) commitClaim(a, done.claimed.receipt, done.claimed.won);
    return done.read;
  } catch (err) {
    if (err instanceof RecordedBefore) return undefined;
    if (isAttemptOver(err) || (!isPermanentDatabaseError(err) && !a.isLast)) throw err;
    a.log.warn(
      { jobRunId: input.jobRunId, page, attempt: a.key.attempt, error: describeError(err) },
      'page claim failed, reading the page alone and claiming its owners by groups',
    );
  }
  const alone = await a.transaction((tx) => readAndLockPage(tx, toRead(0)), PAGE_CLAIM_BEGIN);
  return alone.recordedBefore ? undefined : alone;
}

/** The page's claim read a page that another transaction had recorded: rolled back, the record is taken instead. */
class RecordedBefore extends Error {
  constructor() {
    super('the page was recorded before');
    this.name = 'RecordedBefore';
  }
}
