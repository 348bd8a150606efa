/**
 * A part's owners claimed in one transaction of the attempt (docs/DESIGN.md#owner-transaction): their locks, then
 * the claim with its receipt; or, when that fails for good or on the last attempt, one transaction per owner, so
 * one broken owner never costs the others their reminder.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable } from '../../db/pool';
import type { WonDocument } from '../../db/reminders';
import { isAttemptOver, isConnectionError, isPermanentDatabaseError, describeError } from '../errors';
import type { Attempt } from './attempt';
import { alonePart } from './journal';
import { claimLockedOwners } from './sql/claim-owners';
import { endSupportLockHolders, lockFreeOwners, waitForOwnerLocks } from './sql/lock-owners';
import { selectReceipts } from './sql/receipts';
import type { Receipt } from './types';

/** How a part's owners are locked and what its receipt keeps. */
export interface PartOptions {
  /** Wait for owners another transaction holds until then (epoch ms), instead of leaving them busy. */
  waitUntil?: number;
  /** Keep the owners in the receipt: a second try's are not named by a page's record. */
  recordOwners?: boolean;
}

/** Quick in-process tries per owner claimed alone, and the first pause between them (×4 each time). */
const ALONE_ATTEMPTS = 3;
const ALONE_BACKOFF_MS = 200;

/**
 * Claims the owners of `part` unless an earlier attempt did: its receipt, and those of its owners claimed alone,
 * are counted instead. A transient error fails the attempt (Temporal retries it); a permanent one, or any on the
 * last attempt, claims the owners one by one and reports those that still fail.
 */
export async function claimPart(
  a: Attempt,
  part: string,
  owners: readonly string[],
  options: PartOptions = {},
): Promise<void> {
  const doneAlone = new Set(owners.filter((_, i) => a.journal.replay(alonePart(part, i))));
  if (a.journal.replay(part)) return;
  const todo = owners.filter((o) => !doneAlone.has(o));
  if (todo.length === 0) return;
  try {
    await claimInTransaction(a, part, todo, options);
  } catch (err) {
    if (isAttemptOver(err) || (!isPermanentDatabaseError(err) && !a.isLast)) throw err;
    a.log.warn(
      { jobRunId: a.claim.jobRunId, part, owners: todo.length, attempt: a.key.attempt, error: describeError(err) },
      'owner group failed, claiming its owners one by one',
    );
    await claimAlone(a, part, owners, doneAlone);
  }
}

/** One transaction: the owners' locks (free ones, or waiting until `waitUntil`), the claim and its receipt. */
async function claimInTransaction(
  a: Attempt,
  part: string,
  owners: readonly string[],
  { waitUntil, recordOwners }: PartOptions,
): Promise<void> {
  const { receipt, won } = await a.transaction(async (tx) => {
    const locked =
      waitUntil === undefined ? await lockFreeOwners(tx, owners) : await waitForBusyOwners(a, tx, owners, waitUntil);
    const held = new Set(locked);
    const busy = owners.filter((o) => !held.has(o));
    const cleared = a.journal.cleared(locked);
    const claimed = await claimLockedOwners(
      tx,
      { ...a.claim, ownerUserIds: locked },
      { ...a.key, part, ownerIds: recordOwners ? owners : undefined, busyOwnerIds: busy, clearedOwnerIds: cleared },
    );
    const { won: byOwner, ...counts } = claimed;
    const done: Receipt = {
      ...counts,
      part,
      ownerIds: recordOwners ? [...owners] : [],
      busyOwnerIds: busy,
      clearedOwnerIds: cleared,
    };
    return { receipt: done, won: byOwner };
  });
  commitClaim(a, receipt, won);
}

/**
 * A second try's locks: support sessions holding any of them ended first (a support login must not keep an owner
 * busy past the cycle's retry of it), the rest waited for until `waitUntil`.
 */
async function waitForBusyOwners(a: Attempt, tx: Queryable, owners: readonly string[], waitUntil: number) {
  const ended = await endSupportLockHolders(tx, owners);
  if (ended > 0) {
    a.log.warn({ jobRunId: a.claim.jobRunId, sessions: ended }, 'support session held an owner lock, ended it');
  }
  return waitForOwnerLocks(tx, owners, waitUntil);
}

/** Counts a committed claim's receipt, then logs and counts what it queued and who was busy. */
export function commitClaim(a: Attempt, receipt: Receipt, won: ReadonlyMap<string, WonDocument[]>): void {
  a.journal.commit(receipt);
  const { log, deps } = a;
  const jobRunId = a.claim.jobRunId;
  for (const ownerUserId of receipt.busyOwnerIds) {
    log.info({ ownerUserId, jobRunId }, 'owner busy in another transaction, retried later');
  }
  for (const [ownerUserId, documents] of won) {
    for (const doc of documents) {
      log.info({ jobRunId, ownerUserId, ...doc }, 'reminder queued');
      deps.metrics?.reminders.inc({ threshold_days: String(doc.thresholdDays) });
    }
    if (documents.length > 0) deps.metrics?.ownersNotified.inc();
  }
}

/**
 * One transaction per owner of `part` not done before, one after another, each with a few quick tries (the
 * activity's own retries are spent or do not apply). A try that may have committed before its error (a lost
 * reply) is looked up by its receipt before the next. Once the database stops answering, the rest fail at once.
 */
async function claimAlone(
  a: Attempt,
  part: string,
  owners: readonly string[],
  doneAlone: ReadonlySet<string>,
): Promise<void> {
  let unreachable: string | undefined;
  for (const [index, ownerUserId] of owners.entries()) {
    if (doneAlone.has(ownerUserId)) continue;
    if (unreachable) {
      a.journal.fail([{ ownerUserId, error: unreachable }]);
      continue;
    }
    const failure = await claimOneAlone(a, alonePart(part, index), ownerUserId);
    if (!failure) continue;
    a.log.warn({ jobRunId: a.claim.jobRunId, ownerUserId, error: failure.error }, 'owner transaction failed');
    a.journal.fail([{ ownerUserId, error: failure.error }]);
    if (failure.unreachable) unreachable = failure.error;
  }
}

async function claimOneAlone(
  a: Attempt,
  part: string,
  ownerUserId: string,
): Promise<{ error: string; unreachable: boolean } | undefined> {
  for (let tries = 1; ; tries += 1) {
    try {
      if (tries > 1) {
        const [committed] = await selectReceipts(a.deps.pool, a.key, [part]);
        if (committed) {
          a.journal.commit(committed);
          return undefined;
        }
      }
      await claimInTransaction(a, part, [ownerUserId], { recordOwners: true });
      return undefined;
    } catch (err) {
      if (isAttemptOver(err)) throw err;
      if (isPermanentDatabaseError(err) || tries >= ALONE_ATTEMPTS) {
        return { error: describeError(err), unreachable: isConnectionError(err) };
      }
      await sleep(ALONE_BACKOFF_MS * 4 ** (tries - 1));
    }
  }
}
