/**
 * What the claim's activities take and return. Inputs and results are recorded in workflow history, which every
 * operator can read: owner ids and counts, never a document value.
 */
import type { CandidateWindow } from '../../db/candidates';
import type { CycleSettings, PartitionRef } from '../../domain/cycle';

/** Which pages of which partition to claim, and how: everything the workflow fixed for its owners. */
export interface ClaimPageInput extends Pick<CycleSettings, 'asOf' | 'ownerConcurrency'> {
  window: CandidateWindow;
  /** The partition's first run id, stable across continue-as-new: it keys the pages and the receipts. */
  cycleId: string;
  jobRunId: string;
  /** The first page to claim. */
  page: number;
  batchSize: number;
  partition: PartitionRef;
  /** The attempt the workflow's retry policy allows last: on it, a failing group's owners are claimed alone. */
  lastAttempt: number;
  /**
   * Pages to claim one after another from `page` on, at most: the activity stops sooner when the scan is done
   * or it has run about five seconds, and says how many it claimed (`pagesClaimed`).
   */
  pages: number;
}

/** The owners of a busy retry: a group the workflow retries after its claims found them busy. */
export interface RemindOwnersInput extends CandidateWindow {
  /** The owners of this unit of work, at most a few hundred. */
  ownerUserIds: string[];
  asOf: string;
  jobRunId: string;
  /** The partition's first run id: it keys the group's receipt with the activity's. */
  cycleId: string;
  /** The attempt the workflow's retry policy allows last: on it, the owners are claimed alone. */
  lastAttempt: number;
}

/** What claims did, in counts. */
export interface ClaimCounts {
  /** Owners claimed: locked, their due documents claimed (possibly none left). */
  ownersProcessed: number;
  /** Owners whose claim queued an event. */
  ownersNotified: number;
  /** Documents listed in those events. */
  remindersSent: number;
  /** Markers inserted, the silent ones for less urgent crossed thresholds included. */
  markersInserted: number;
  /** Due documents whose current-threshold marker another transaction won first. */
  skippedAlreadyMarked: number;
}

/** An owner left without its reminder in this cycle; the next cycle finds its documents again. */
export interface FailedOwner {
  ownerUserId: string;
  error: string;
}

/** What a claim of owners reports to the workflow. */
export interface RemindOwnersResult extends ClaimCounts {
  /** Owners another transaction held at the end; the workflow retries them later in the cycle. */
  busyOwnerIds: string[];
  failed: FailedOwner[];
}

/** What a claim of pages did: its transactions' counts together, and what the scan needs next. */
export interface ClaimPageResult extends RemindOwnersResult {
  /** Due documents of the pages as each page's first read found them. */
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

/** A committed claim transaction's receipt (migration 021): what it did, and which owners it leaves to others. */
export interface Receipt extends ClaimCounts {
  /** Which owners of the activity: `p<page>`, `p<page>.g<n>`, `b<n>`, `r`, each with `.o<i>` for one alone. */
  part: string;
  /** The owners of a second try or of one claimed alone; empty for a page's groups. */
  ownerIds: string[];
  /** Owners another transaction held. */
  busyOwnerIds: string[];
  /** Owners an earlier part found busy, claimed by this one. */
  clearedOwnerIds: string[];
}
