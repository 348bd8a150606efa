/**
 * The `claimPage` activity (docs/DESIGN.md#page-claims): a partition's pages from `input.page` on, read and their
 * owners claimed one after another, so the owner ids stay in the worker and PostgreSQL and the workflow records one
 * activity per several pages; then one more try for the owners another transaction held.
 */
import * as otel from '@opentelemetry/api';
import { startAttempt, type Attempt, type ClaimDeps } from './attempt';
import { secondTryPart } from './journal';
import { claimPart } from './owner-groups';
import { claimOnePage, openScan } from './page';
import type { ClaimPageInput, ClaimPageResult } from './types';

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

/**
 * Claims a partition's pages from `input.page` on: at most `input.pages`, for about {@link PAGES_BUDGET_MS}, and
 * on a retry at least every page its earlier attempts recorded, whose receipts it counts instead of claiming
 * them again (docs/DESIGN.md#a-retry). Between pages it heartbeats, and stops once it has lost its activity.
 * Owners another transaction held come back by id, for the partition's busy retries; so do owners that failed.
 */
export async function claimPage(deps: ClaimDeps, input: ClaimPageInput): Promise<ClaimPageResult> {
  const a = await startAttempt(deps, { ...input.window, ...input });
  try {
    const scan = await openScan(a, input);
    const started = Date.now();
    const walked = { documentCount: 0, owners: 0, hasNext: true, pagesClaimed: 0 };
    for (let page = input.page; ; page += 1) {
      a.checkpoint({ page });
      const facts = await claimOnePage(a, input, page, scan);
      walked.documentCount += facts.documentCount;
      walked.owners += facts.owners;
      walked.hasNext = facts.hasNext;
      walked.pagesClaimed += 1;
      const more =
        facts.hasNext && walked.pagesClaimed < Math.max(1, input.pages) && Date.now() - started < PAGES_BUDGET_MS;
      // The next activity starts after the pages this one reports: a page an earlier attempt recorded is this one's.
      if (!more && !scan.recorded.has(page + 1)) break;
    }
    await secondTry(a, input);
    const result: ClaimPageResult = { ...a.journal.result(), ...walked, ownersFoundBusy: a.journal.ownersFoundBusy };
    otel.trace.getActiveSpan()?.setAttributes({
      correlationId: input.jobRunId,
      page: input.page,
      pages: walked.pagesClaimed,
      partition: input.partition.index + 1,
      owners: walked.owners,
      documentCount: walked.documentCount,
      attempt: a.key.attempt,
    });
    return result;
  } finally {
    a.stop();
  }
}

/**
 * An owner busy at a page's first try is most often held by another partition claiming the same owner's
 * documents in its own id range, for the milliseconds of its transaction. One second try for all the pages' busy
 * owners, after them, waits for what still holds them (usually nothing by then) and claims them or finds them
 * done, without a workflow timer and another activity. The wait is the activity's, in all: each lock waits for
 * what is left of it. A retry tries only the owners no earlier attempt's second try had.
 */
async function secondTry(a: Attempt, input: ClaimPageInput): Promise<void> {
  const { owners, firstPart } = a.journal.secondTryOwners();
  const size = Math.max(1, input.ownerConcurrency);
  const waitUntil = Date.now() + BUSY_WAIT_MS;
  for (let i = 0; i < owners.length; i += size) {
    a.checkpoint();
    await claimPart(a, secondTryPart(firstPart + i / size), owners.slice(i, i + size), {
      waitUntil,
      recordOwners: true,
    });
  }
}
