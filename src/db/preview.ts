/**
 * `cycle preview`: what the owner statement (src/db/reminders.ts) would find due, read without writing.
 * The pages themselves come from the scan the cycle uses, `selectCandidatePage`.
 */
import type { CandidateWindow } from './candidates';
import type { Queryable } from './pool';
import { dueCtes, type WonDocument } from './reminders';

/** A document an owner transaction would remind of now, with its owner. No document values. */
export interface DueDocument extends WonDocument {
  ownerUserId: string;
}

/**
 * The due documents of `ownerUserIds`, by the owner statement's own CTEs ({@link dueCtes}): with no parallel
 * cycle, exactly the documents that statement wins and lists in the owner's event. Ordered like the
 * event's documents, by owner in the order given.
 */
export async function selectDueDocumentsOfOwners(
  db: Queryable,
  ownerUserIds: readonly string[],
  window: CandidateWindow,
): Promise<DueDocument[]> {
  const { rows } = await db.query<DueDocument>(
    `with owners as (
       select o.id as owner_user_id, o.ord from unnest($1::uuid[]) with ordinality as o(id, ord)
     ),
     ${dueCtes('owners', { asOfDate: '$2', thresholds: '$3', retentionDays: '$4' })}
     select due.owner_user_id as "ownerUserId", due.id as "documentId", due.type,
            due.current_threshold as "thresholdDays", due.days_left as "daysLeft"
       from due
       join owners on owners.owner_user_id = due.owner_user_id
      order by owners.ord, due.expires_at, due.id`,
    [ownerUserIds, window.asOfDate, window.thresholdsDays, window.retentionDays],
  );
  return rows;
}
