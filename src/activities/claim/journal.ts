/**
 * An attempt's account of its activity (docs/DESIGN.md#a-retry): the receipts its earlier attempts committed and
 * those it commits itself, each counted once, and the busy owners they leave. Pure: the retry rule's model, which
 * `test/unit/claim-journal.test.ts` runs against random histories.
 */
import type { ClaimCounts, FailedOwner, Receipt, RemindOwnersResult } from './types';

/** A page's first transaction. */
export const pagePart = (page: number) => `p${page}`;
/** The `group`-th group (from 0) of the owners a page's first transaction left to later ones. */
export const groupPart = (page: number, group: number) => `p${page}.g${group}`;
/** The `n`-th transaction (from 0) of an activity's second try of busy owners. */
export const secondTryPart = (n: number) => `b${n}`;
/** A busy retry's group. */
export const BUSY_RETRY_PART = 'r';
/** Owner `index` of the owners of `part`, claimed alone after the part's transaction failed. */
export const alonePart = (part: string, index: number) => `${part}.o${index}`;

/** A page's own parts find owners busy for the activity's second try; a second try or a busy retry reports them. */
const isFirstTry = (part: string) => part.startsWith('p');
const SECOND_TRY = /^b(\d+)(\.|$)/;

const zeroCounts = (): ClaimCounts => ({
  ownersProcessed: 0,
  ownersNotified: 0,
  remindersSent: 0,
  markersInserted: 0,
  skippedAlreadyMarked: 0,
});

/** Adds `add`'s counts to `into`. */
function addClaimCounts(into: ClaimCounts, add: ClaimCounts): void {
  into.ownersProcessed += add.ownersProcessed;
  into.ownersNotified += add.ownersNotified;
  into.remindersSent += add.remindersSent;
  into.markersInserted += add.markersInserted;
  into.skippedAlreadyMarked += add.skippedAlreadyMarked;
}

export class Journal {
  private readonly earlier: ReadonlyMap<string, Receipt>;
  private readonly counted = new Set<string>();
  private readonly counts = zeroCounts();
  private readonly failed: FailedOwner[] = [];
  /** Owners a first try found busy and no later part claimed, in the order found. */
  private readonly pending = new Set<string>();
  private readonly foundBusy = new Set<string>();
  /** Owners a second try or a busy retry found busy. */
  private readonly stillBusy = new Set<string>();
  /** Owners a second try has had (claimed, busy, or claimed alone). */
  private readonly secondTried = new Set<string>();
  private nextSecondTry = 0;

  /** @param earlier the receipts the activity's earlier attempts committed. */
  constructor(earlier: readonly Receipt[] = []) {
    this.earlier = new Map(earlier.map((r) => [r.part, r]));
  }

  /** Counts the earlier attempts' receipt of `part` (once, however often asked); whether there is one. */
  replay(part: string): boolean {
    if (this.counted.has(part)) return true;
    const receipt = this.earlier.get(part);
    if (!receipt) return false;
    this.add(receipt);
    return true;
  }

  /** Counts a receipt this attempt committed. */
  commit(receipt: Receipt): void {
    this.add(receipt);
  }

  /** Owners this attempt gave up on: reported failed, and no second try. */
  fail(owners: readonly FailedOwner[]): void {
    for (const f of owners) {
      this.failed.push(f);
      this.pending.delete(f.ownerUserId);
    }
  }

  /** Of `locked`, the owners an earlier part found busy: the receipt of the part that claims them says so. */
  cleared(locked: readonly string[]): string[] {
    return locked.filter((owner) => this.pending.has(owner));
  }

  /**
   * Counts the earlier attempts' second tries, and returns the busy owners that no second try has had yet, in
   * the order they were found, with the part the next second try writes.
   */
  secondTryOwners(): { owners: string[]; firstPart: number } {
    for (const part of this.earlier.keys()) if (SECOND_TRY.test(part)) this.replay(part);
    return { owners: [...this.pending].filter((o) => !this.secondTried.has(o)), firstPart: this.nextSecondTry };
  }

  /** Distinct owners a first try found busy. */
  get ownersFoundBusy(): number {
    return this.foundBusy.size;
  }

  /** The counts of every receipt counted, the owners still busy and the owners this attempt gave up on. */
  result(): RemindOwnersResult {
    return { ...this.counts, busyOwnerIds: [...this.stillBusy], failed: [...this.failed] };
  }

  private add(r: Receipt): void {
    if (this.counted.has(r.part)) throw new Error(`the receipt of ${r.part} was counted twice`);
    this.counted.add(r.part);
    addClaimCounts(this.counts, r);
    for (const owner of r.clearedOwnerIds) this.pending.delete(owner);
    const second = SECOND_TRY.exec(r.part);
    if (second) {
      this.nextSecondTry = Math.max(this.nextSecondTry, Number(second[1]) + 1);
      for (const owner of r.ownerIds) this.secondTried.add(owner);
    }
    for (const owner of r.busyOwnerIds) {
      if (isFirstTry(r.part)) {
        this.pending.add(owner);
        this.foundBusy.add(owner);
      } else {
        this.stillBusy.add(owner);
      }
    }
  }
}
