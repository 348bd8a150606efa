/** The receipts of an activity's committed claim transactions (migration 021), read by its retries. */
import type { Queryable } from '../../../db/pool';
import type { Receipt } from '../types';

/**
 * The receipts the attempts of activity `queuedBy` committed in the partition whose first run is `cycleId`: a
 * few rows a page, whatever lies around its pages. With `parts`, only those.
 */
export async function selectReceipts(
  db: Queryable,
  key: { cycleId: string; queuedBy: string },
  parts?: readonly string[],
): Promise<Receipt[]> {
  const { rows } = await db.query<{
    part: string;
    owners_processed: number;
    owners_notified: number;
    reminders_sent: number;
    markers_inserted: number;
    skipped_already_marked: number;
    owner_ids: string[] | null;
    busy_owner_ids: string[] | null;
    cleared_owner_ids: string[] | null;
  }>(
    `select part, owners_processed, owners_notified, reminders_sent, markers_inserted, skipped_already_marked,
            owner_ids, busy_owner_ids, cleared_owner_ids
       from profile.document_expiry_reminder_claim_receipts
      where cycle_id = $1 and queued_by = $2 and ($3::text[] is null or part = any($3::text[]))`,
    [key.cycleId, key.queuedBy, parts ?? null],
  );
  return rows.map((r) => ({
    part: r.part,
    ownersProcessed: r.owners_processed,
    ownersNotified: r.owners_notified,
    remindersSent: r.reminders_sent,
    markersInserted: r.markers_inserted,
    skippedAlreadyMarked: r.skipped_already_marked,
    ownerIds: r.owner_ids ?? [],
    busyOwnerIds: r.busy_owner_ids ?? [],
    clearedOwnerIds: r.cleared_owner_ids ?? [],
  }));
}
