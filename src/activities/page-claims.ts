/**
 * A partition's pages in one activity (docs/DESIGN.md#page-claims): up to `pages` pages read and their owners
 * claimed, one after another, so the owner ids stay in the worker and PostgreSQL and the workflow records one
 * activity per claim of several pages instead of a page read and an activity per owner group.
 */
import * as otel from '@opentelemetry/api';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { CycleSettings, PartitionRef } from '../domain/cycle';
import {
  idRanges,
  PAGE_CLAIM_BEGIN,
  PAGE_PLAN_UNPIN,
  scanBounds,
  scanStart,
  selectCandidatePage,
  selectPageOwners,
  selectPruneCutoff,
  type CandidateWindow,
  type PageCursor,
} from '../db/candidates';
import { selectAndLockPage } from '../db/page-claim';
import { withTransaction } from '../db/pool';
import { busyClaim, remindLockedOwners, type OwnerClaim } from '../db/reminders';
import { insertScanPosition, selectRecordedPage, selectScanPosition, type RecordedPage } from '../db/scan-positions';
import { describeFailure } from '../domain/failures';
import { currentTraceparent } from '../observability/tracing';
import { isPermanentDatabaseError, toActivityFailure } from './errors';
import type { ActivityDeps } from './deps';
import {
  emptyResult,
  HEARTBEAT_EVERY_MS,
  summarise,
  type RemindOwnersInput,
  type RemindOwnersResult,
} from './owner-groups';

/** Which page of which partition to claim, and how: everything the workflow fixed for its owners. */
export interface ClaimPageInput extends Pick<CycleSettings, 'asOf' | 'ownerConcurrency'> {
  window: CandidateWindow;
  /** The partition's first run id, stable across continue-as-new: it keys the scan positions. */
  cycleId: string;
  jobRunId: string;
  page: number;
  batchSize: number;
  partition: PartitionRef;
  /** The attempt the workflow's retry policy allows last: on it, a failing group's owners are isolated. */
  lastAttempt: number;
  /**
   * Pages to claim one after another from `page` on, at most: the activity stops sooner when the scan is done
   * or it has run {@link PAGES_BUDGET_MS}, and says how many it claimed (`pagesClaimed`).
   */
  pages: number;
}

/** What a page's claim did: the counts of its groups together, and what the scan needs next. */
export interface ClaimPageResult extends RemindOwnersResult {
  /** Documents of the pages (on a retry: every in-window document of their range, reminded or not). */
  documentCount: number;
  /** Distinct owners of each page, summed over the pages. */
  owners: number;
  /** False when the scan of the partition is done. */
  hasNext: boolean;
  /** Pages claimed, from `page` on. */
  pagesClaimed: number;
  /**
   * Owners another transaction held at a page's first try (each once, however many of the pages found it
   * busy); each not claimed by a later page was tried once more after the pages, and those still held are in
   * `busyOwnerIds`.
   */
  ownersFoundBusy: number;
}

/**
 * How long an activity of several pages goes on claiming more: a partition stops (cancel, time limit) and
 * hands over between activities, so an activity stays short; each activity costs the worker and the Temporal
 * server a page's worth of CPU, so it is not too short either. On a 5M day on 2 cores a page took 0.76 s
 * of a partition's time, and a second's budget made 2 pages an activity (2,590 activities, 45 s of the
 * Temporal server's CPU); five seconds make about 7 (bench/REPORT.md).
 */
const PAGES_BUDGET_MS = 5_000;

/**
 * How long an activity's second try waits, in all, for the transactions that hold its pages' busy owners; an
 * owner still held then is reported busy, for the partition's own retry.
 */
const BUSY_WAIT_MS = 2_000;

/** What `createOwnerClaims` gives a page's claim: a group's claim, and the report of committed claims. */
interface GroupClaims {
  claimGroup: (
    input: RemindOwnersInput,
    queuedBy: string,
    attempt: number,
    options?: { waitForLocksUntil?: number },
  ) => Promise<RemindOwnersResult>;
  reportClaims: (claims: readonly OwnerClaim[], jobRunId: string) => void;
}

/** The `claimPage` activity around the worker's pool and the group claims of `createOwnerClaims`. */
export function createPageClaims(
  { pool, logger }: Pick<ActivityDeps, 'pool' | 'logger'>,
  { claimGroup, reportClaims }: GroupClaims,
) {
  const log = logger.child({ component: 'activities' });

  /** A new attempt's {@link AttemptScan}: the cutoff read at its first use (again after a failed read). */
  function attemptScan(): AttemptScan {
    let cutoff: Promise<string | null> | undefined;
    return {
      pruneCutoff: () =>
        (cutoff ??= selectPruneCutoff(pool).catch((err: unknown) => {
          cutoff = undefined;
          throw err;
        })),
      ends: new Map(),
    };
  }

  /** Where the page before `input.page` ended, or null for the first page; refused when it was never recorded. */
  async function previousEnd(input: ClaimPageInput, scan: AttemptScan): Promise<PageCursor | null> {
    const { cycleId, page, partition } = input;
    if (page === 1) return null;
    const after = scan.ends.get(page - 1) ?? (await selectScanPosition(pool, cycleId, page - 1));
    if (after) return after;
    throw ApplicationFailure.nonRetryable(
      `no scan position for page ${page - 1} of partition ${partition.index + 1} of ${partition.count} of cycle ` +
        `${input.jobRunId} (${cycleId}): a continuation only continues the partition that wrote it`,
      'ScanPositionMissing',
    );
  }

  /** The claim's parameters for `ownerUserIds`, as the page's groups share them. */
  const groupInput = (input: ClaimPageInput, ownerUserIds: string[]): RemindOwnersInput => ({
    ownerUserIds,
    asOf: input.asOf,
    ...input.window,
    jobRunId: input.jobRunId,
    lastAttempt: input.lastAttempt,
  });

  /**
   * A page no attempt recorded the end of, in ONE transaction with its first group: the page read, its end
   * and the first group's locks in one statement ({@link selectAndLockPage}), then the claim of the locked
   * owners, then the commit, so the end is recorded exactly when the first group's reminders are. Later
   * groups (a page with more owners than `ownerConcurrency`) follow in their own transactions.
   */
  async function claimNewPage(
    input: ClaimPageInput,
    after: PageCursor | null,
    queuedBy: string,
    attempt: number,
    scan: AttemptScan,
  ): Promise<{ page: PageRead; first: RemindOwnersResult; rest: string[] }> {
    const range = idRanges(input.partition.count)[input.partition.index];
    const bounds = scanBounds(input.window, await scan.pruneCutoff());
    const { page, claimed } = await withTransaction(
      pool,
      async (tx) => {
        const read = await selectAndLockPage(tx, {
          window: input.window,
          bounds,
          after: scanStart(bounds, after),
          limit: input.batchSize,
          range,
          cycleId: input.cycleId,
          jobRunId: input.jobRunId,
          page: input.page,
          attempt,
          lockFirst: Math.max(1, input.ownerConcurrency),
        });
        // Rolled back: the page's recorded ends, not this read, say which owners it has.
        if (read.recordedBefore) throw new PageRecordedBefore();
        await tx.query(PAGE_PLAN_UNPIN);
        const claimed = await remindLockedOwners(tx, {
          ownerUserIds: read.locked,
          asOf: input.asOf,
          ...input.window,
          jobRunId: input.jobRunId,
          traceContext: currentTraceparent(),
          queuedBy,
        });
        return { page: read, claimed: { ...claimed, owners: [...claimed.owners, ...read.busy.map(busyClaim)] } };
      },
      PAGE_CLAIM_BEGIN,
    );
    reportClaims(claimed.owners, input.jobRunId);
    return {
      page: {
        ownerUserIds: page.ownerUserIds,
        documentCount: page.documentCount,
        hasNext: page.documentCount === input.batchSize,
        end: page.end ?? undefined,
      },
      first: summarise(claimed, [], queuedBy),
      rest: page.ownerUserIds.slice(claimed.owners.length),
    };
  }

  /**
   * The owners of a page an earlier attempt recorded the end of: those between the two ends, reminded
   * documents included, so this attempt claims the same owners the earlier one did and reads back what
   * that one committed.
   */
  async function readRecordedPage(
    input: ClaimPageInput,
    after: PageCursor | null,
    recorded: RecordedPage,
  ): Promise<PageRead> {
    const range = idRanges(input.partition.count)[input.partition.index];
    // From the page's own first row: the page's work, whatever lies between the page before and it (a first
    // page starts at the window's lower bound). Pages recorded before migration 016 start after the page before.
    const from = recorded.first ? { first: recorded.first } : { after };
    const { ownerUserIds, documents } = await selectPageOwners(pool, input.window, from, recorded.end, range);
    const rest = await selectCandidatePage(pool, input.window, recorded.end, 1, 1, range);
    return { ownerUserIds, documentCount: documents, hasNext: rest.length > 0, end: recorded.end };
  }

  /**
   * A page read without claiming, its end recorded first: the path of a page whose one-transaction claim
   * failed for good or on the last attempt, so that its groups can isolate a failing owner.
   */
  async function readNewPage(
    input: ClaimPageInput,
    after: PageCursor | null,
    attempt: number,
  ): Promise<PageRead | PageRecordedBefore> {
    const range = idRanges(input.partition.count)[input.partition.index];
    const rows = await selectCandidatePage(pool, input.window, after, input.batchSize, 1, range);
    const [first, last] = [rows[0], rows[rows.length - 1]];
    if (last) {
      const recordedHere = await insertScanPosition(pool, {
        firstRunId: input.cycleId,
        jobRunId: input.jobRunId,
        page: input.page,
        expiresAt: last.expires_at,
        id: last.id,
        attempt,
        first: { expiresAt: first.expires_at, id: first.id },
      });
      if (!recordedHere) return new PageRecordedBefore();
    }
    return {
      ownerUserIds: [...new Set(rows.map((r) => r.owner_user_id))],
      documentCount: rows.length,
      hasNext: rows.length === input.batchSize,
      end: last ? { expiresAt: last.expires_at, id: last.id } : undefined,
    };
  }

  /**
   * The page's owners in transactions of at most `ownerConcurrency` owners, one after another. A
   * transaction that fails the attempt stops the page there, and the retry reads back what the ones before
   * it committed.
   */
  async function claimGroups(
    input: ClaimPageInput,
    ownerUserIds: string[],
    queuedBy: string,
    attempt: number,
    options: { waitForLocksUntil?: number } = {},
  ): Promise<RemindOwnersResult[]> {
    const size = Math.max(1, input.ownerConcurrency);
    const results: RemindOwnersResult[] = [];
    for (let i = 0; i < ownerUserIds.length; i += size) {
      results.push(await claimGroup(groupInput(input, ownerUserIds.slice(i, i + size)), queuedBy, attempt, options));
    }
    return results;
  }

  /**
   * The page and its groups' first tries. A page no attempt recorded the end of is read and claimed in one
   * transaction ({@link claimNewPage}); should that fail for good, or on the last attempt, it is read alone
   * and claimed by groups that isolate a failing owner. A page with a recorded end is read again between
   * the two ends ({@link readRecordedPage}).
   */
  async function firstTries(
    input: ClaimPageInput,
    queuedBy: string,
    attempt: number,
    seen: ReadonlySet<string>,
    scan: AttemptScan,
  ): Promise<PageTries> {
    const after = await previousEnd(input, scan).catch(rethrowForTemporal);
    const recorded = attempt > 1 ? await recordedPage(input) : undefined;
    if (recorded) return recordedTries(input, after, recorded, queuedBy, attempt, seen);
    const claimed = await claimNewPage(input, after, queuedBy, attempt, scan).catch((err: unknown) => {
      if (err instanceof PageRecordedBefore) return err;
      if (!isPermanentDatabaseError(err) && attempt < input.lastAttempt) throw toActivityFailure(err);
      log.warn(
        { jobRunId: input.jobRunId, page: input.page, attempt, error: describeFailure(toActivityFailure(err)) },
        'page claim failed, reading the page alone and claiming its owners by groups',
      );
      return undefined;
    });
    if (claimed instanceof PageRecordedBefore) {
      return recordedTries(input, after, await recordedPage(input, true), queuedBy, attempt, seen);
    }
    if (claimed) {
      return {
        page: claimed.page,
        results: [claimed.first, ...(await claimGroups(input, claimed.rest, queuedBy, attempt))],
        attempted: claimed.page.ownerUserIds,
      };
    }
    const page = await readNewPage(input, after, attempt).catch(rethrowForTemporal);
    if (page instanceof PageRecordedBefore) {
      return recordedTries(input, after, await recordedPage(input, true), queuedBy, attempt, seen);
    }
    return {
      page,
      results: await claimGroups(input, page.ownerUserIds, queuedBy, attempt),
      attempted: page.ownerUserIds,
    };
  }

  /** Page `input.page` as recorded, if it was; with `required`, its absence is an error to retry. */
  async function recordedPage(input: ClaimPageInput, required: true): Promise<RecordedPage>;
  async function recordedPage(input: ClaimPageInput): Promise<RecordedPage | undefined>;
  async function recordedPage(input: ClaimPageInput, required = false): Promise<RecordedPage | undefined> {
    const recorded = await selectRecordedPage(pool, input.cycleId, input.page).catch(rethrowForTemporal);
    if (!recorded && required) {
      throw ApplicationFailure.retryable(`page ${input.page} was recorded by another transaction, then not found`);
    }
    return recorded;
  }

  /** The first tries of a page recorded before: its owners between its recorded ends, read again and claimed. */
  async function recordedTries(
    input: ClaimPageInput,
    after: PageCursor | null,
    recorded: RecordedPage,
    queuedBy: string,
    attempt: number,
    seen: ReadonlySet<string>,
  ): Promise<PageTries> {
    const page = await readRecordedPage(input, after, recorded).catch(rethrowForTemporal);
    const unseen = page.ownerUserIds.filter((owner) => !seen.has(owner));
    return { page, results: await claimGroups(input, unseen, queuedBy, attempt), attempted: unseen };
  }

  /**
   * One page and its owners' first tries. `attempted` is every owner those tries claimed or found busy; `busy`
   * those another transaction held, for the activity's second try. `seen` holds the owners an earlier page of
   * this attempt claimed or read back: a page read again between its recorded ends leaves them out, so what
   * they queued counts once.
   */
  async function claimOnePage(
    input: ClaimPageInput,
    queuedBy: string,
    attempt: number,
    seen: Set<string>,
    scan: AttemptScan,
  ): Promise<{ result: PagesResult; attempted: string[]; busy: string[] }> {
    const { page, results, attempted } = await firstTries(input, queuedBy, attempt, seen, scan);
    for (const owner of page.ownerUserIds) seen.add(owner);
    if (page.end) scan.ends.set(input.page, page.end);
    const busy = results.flatMap((r) => r.busyOwnerIds);
    return {
      result: {
        ...sumResults(
          results.map((r) => ({ ...r, busyOwnerIds: [] })),
          queuedBy,
        ),
        documentCount: page.documentCount,
        owners: page.ownerUserIds.length,
        hasNext: page.hasNext,
        pagesClaimed: 1,
      },
      attempted,
      busy,
    };
  }

  /**
   * Reads a partition's pages from `input.page` on and claims their owners (docs/DESIGN.md#page-claims), at
   * most `input.pages` of them and for about {@link PAGES_BUDGET_MS}; a retry goes on at least through every
   * page an earlier attempt recorded the end of, so what those committed is counted here. Owners another
   * transaction held come back by id, for the partition's busy retries; so do owners that failed for good.
   */
  async function claimPage(input: ClaimPageInput): Promise<ClaimPageResult> {
    const ctx = Context.current();
    const { attempt, activityId, workflowExecution } = ctx.info;
    const queuedBy = `${workflowExecution?.runId ?? ctx.info.workflowType}/${activityId}`;
    const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
    const started = Date.now();
    const maxPages = Math.max(1, input.pages);
    const seen = new Set<string>();
    // Owners found busy at a page's first try and not claimed by a later page's since, for the second try.
    const pending = new Set<string>();
    const foundBusy = new Set<string>();
    const scan = attemptScan();
    const claimOne = async (request: ClaimPageInput): Promise<PagesResult> => {
      const { result, attempted, busy } = await claimOnePage(request, queuedBy, attempt, seen, scan);
      for (const owner of attempted) pending.delete(owner);
      for (const owner of busy) {
        pending.add(owner);
        foundBusy.add(owner);
      }
      return result;
    };
    try {
      let total = await claimOne(input);
      for (let claimed = 1; ; claimed += 1) {
        const page = input.page + claimed;
        const more = total.hasNext && claimed < maxPages && Date.now() - started < PAGES_BUDGET_MS;
        // A retry re-reads every page an earlier attempt recorded, even past what is asked, or what those
        // pages committed would go uncounted: the next activity starts after the pages this one reports.
        if (
          !more &&
          !(attempt > 1 && (await selectScanPosition(pool, input.cycleId, page).catch(rethrowForTemporal)))
        ) {
          break;
        }
        total = addPage(total, await claimOne({ ...input, page }), queuedBy);
      }
      // An owner busy at a page's first try is most often held by another partition claiming the same owner's
      // documents in its own id range, for the milliseconds of its transaction. One second try for all the
      // pages' busy owners, after them, waits for what still holds them (usually nothing by then) and claims
      // them or finds them done, without a workflow timer and another activity: one transaction for the
      // activity instead of one for each page, each of whose claims would cost a statement's fixed work.
      // The wait is the activity's, in all: each lock waits for what is left of it.
      const busy = [...pending];
      const waitForLocksUntil = Date.now() + BUSY_WAIT_MS;
      const again = busy.length > 0 ? await claimGroups(input, busy, queuedBy, attempt, { waitForLocksUntil }) : [];
      const result: ClaimPageResult = {
        ...total,
        ...sumResults([total, ...again], queuedBy),
        ownersFoundBusy: foundBusy.size,
      };
      otel.trace.getActiveSpan()?.setAttributes({
        correlationId: input.jobRunId,
        page: input.page,
        pages: total.pagesClaimed,
        partition: input.partition.index + 1,
        owners: total.owners,
        documentCount: total.documentCount,
        attempt,
      });
      return result;
    } finally {
      clearInterval(beat);
    }
  }

  return claimPage;
}

/** A page's owners in scan order, how many documents it had, and whether the partition goes on. */
interface PageRead {
  ownerUserIds: string[];
  documentCount: number;
  hasNext: boolean;
  /** Where the page ends as recorded, the next page's start; absent when the page had no rows. */
  end?: PageCursor;
}

/**
 * What one attempt of `claimPage` reads once and reuses for its pages, instead of a statement of its own for
 * each: the ledger's prune cutoff, and the end of each page it read or claimed, for the page after. Each was
 * two autocommit round trips a page of ~7, and 2 of the ~2.7 commits a page (bench/REPORT.md). A cutoff a
 * concurrent prune raises meanwhile only widens the pages' scan: the claim reads the cutoff again itself, in
 * its statement, after the owner locks (docs/DESIGN.md#resolutions).
 */
interface AttemptScan {
  pruneCutoff: () => Promise<string | null>;
  ends: Map<number, PageCursor>;
}

/** What a run of pages' first tries did: a claim's result before its second try, which counts the busy owners. */
type PagesResult = Omit<ClaimPageResult, 'ownersFoundBusy'>;

/** A page's first tries: the page, its groups' results, and the owners those groups were given. */
interface PageTries {
  page: PageRead;
  results: RemindOwnersResult[];
  attempted: string[];
}

/** A database error as the activity's failure (retryable unless permanent). */
function rethrowForTemporal(err: unknown): never {
  throw toActivityFailure(err);
}

/** Two runs of pages as one: the later one's `hasNext`. */
function addPage(a: PagesResult, b: PagesResult, queuedBy: string): PagesResult {
  return {
    ...sumResults([a, b], queuedBy),
    documentCount: a.documentCount + b.documentCount,
    owners: a.owners + b.owners,
    hasNext: b.hasNext,
    pagesClaimed: a.pagesClaimed + b.pagesClaimed,
  };
}

/** The groups' results as one; `busyQueuedBy` is this activity's key when any owner was busy. */
function sumResults(results: RemindOwnersResult[], queuedBy: string): RemindOwnersResult {
  const sum = emptyResult();
  for (const r of results) {
    sum.ownersProcessed += r.ownersProcessed;
    sum.ownersNotified += r.ownersNotified;
    sum.remindersSent += r.remindersSent;
    sum.markersInserted += r.markersInserted;
    sum.skippedAlreadyMarked += r.skippedAlreadyMarked;
    sum.busyOwnerIds.push(...r.busyOwnerIds);
    sum.failed.push(...r.failed);
  }
  if (sum.busyOwnerIds.length > 0) sum.busyQueuedBy = queuedBy;
  return sum;
}

/**
 * A page whose ends another attempt or activity recorded first: the read that found it is dropped (its
 * transaction rolled back) and the page is read again between the recorded ends.
 */
class PageRecordedBefore extends Error {
  constructor() {
    super('the page was recorded before');
    this.name = 'PageRecordedBefore';
  }
}
