/**
 * `cycle preview`: what the owner statement (src/db/reminders.ts) would find due, read without writing.
 * The pages themselves come from the scan the cycle uses, `selectCandidatePage`.
 */
import { CURRENT_THRESHOLD_SQL, type CandidateWindow } from './candidates';
import type { Queryable } from './pool';
import type { WonDocument } from './reminders';

/** A document an owner transaction would remind of now, with its owner. No document values. */
export interface DueDocument extends WonDocument {
  ownerUserId: string;
}

/**
 * The due documents of `ownerIds`, by the owner statement's predicate (its `candidates` and `due`
 * steps): active, not deleted, inside the window, and no ledger row for the current threshold. With no
 * parallel cycle, these are exactly the documents that statement wins and lists in the owner's event.
 * Ordered like the event's documents, by owner in the order given.
 */
export async function selectDueDocumentsOfOwners(
  db: Queryable,
  ownerIds: readonly string[],
  window: CandidateWindow,
): Promise<DueDocument[]> {
  const { rows } = await db.query<DueDocument>(
    `with owners as (
       select o.id, o.ord from unnest($1::uuid[]) with ordinality as o(id, ord)
     ),
     candidates as (
       select d.owner_user_id, d.id, d.type, d.expires_at,
              d.expires_at - $2::date as days_left,
              ${CURRENT_THRESHOLD_SQL('d', '$2', '$3')} as current_threshold
         from profile.person_documents d
         join owners on owners.id = d.owner_user_id
        where d.expires_at is not null
          and d.expires_at >= $2::date - $4::int
          and d.expires_at <= $2::date + (select max(t) from unnest($3::int[]) as t)
          and d.status = 'Active'
          and not d.is_deleted
     )
     select c.owner_user_id as "ownerUserId", c.id as "documentId", c.type,
            c.current_threshold as "thresholdDays", c.days_left as "daysLeft"
       from candidates c
       join owners on owners.id = c.owner_user_id
      where not exists (
        select 1 from profile.document_expiry_reminders r
         where r.document_id = c.id and r.threshold_days = c.current_threshold)
      order by owners.ord, c.expires_at, c.id`,
    [ownerIds, window.asOfDate, window.thresholdsDays, window.retentionDays],
  );
  return rows;
}
