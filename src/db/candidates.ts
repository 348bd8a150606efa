/** SPEC §3.1: the candidate scan, keyset-paged on `(expires_at, id)` over the partial index. */
import type { PageCursor } from '../domain/cycle';
import { addDays } from '../domain/thresholds';
import type { Queryable } from './pool';

export interface CandidateWindow {
  asOfDate: string;
  thresholdsDays: readonly number[];
  retentionDays: number;
}

export interface CandidateRow {
  id: string;
  owner_user_id: string;
  expires_at: string;
}

/**
 * The current-threshold expression, min{t : DaysLeft <= t}, over the `$thresholds` and `$asOfDate`
 * parameters; shared by the scan and the owner statement so both agree on what "due" means.
 */
export const CURRENT_THRESHOLD_SQL = (doc: string, asOfDate: string, thresholds: string) =>
  `(select min(t) from unnest(${thresholds}::int[]) as t where ${doc}.expires_at - ${asOfDate}::date <= t)`;

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * One page of candidate documents after `cursor` (from the window's lower bound when null): active, not
 * deleted, `AsOfDate − RetentionDays ≤ expires_at ≤ AsOfDate + MaxThreshold`, and no ledger row for the
 * current threshold. Reads only open columns and takes no locks.
 */
export async function selectCandidatePage(
  db: Queryable,
  window: CandidateWindow,
  cursor: PageCursor | null,
  limit: number,
): Promise<CandidateRow[]> {
  const { rows } = await db.query<CandidateRow>(
    `select d.id, d.owner_user_id, d.expires_at
       from profile.person_documents d
      where d.expires_at is not null
        and d.expires_at >= $1::date - $3::int
        and d.expires_at <= $1::date + (select max(t) from unnest($2::int[]) as t)
        and (d.expires_at, d.id) > ($4::date, $5::uuid)
        and d.status = 'Active'
        and not d.is_deleted
        and not exists (
          select 1 from profile.document_expiry_reminders r
           where r.document_id = d.id
             and r.threshold_days = ${CURRENT_THRESHOLD_SQL('d', '$1', '$2')})
      order by d.expires_at, d.id
      limit $6`,
    [
      window.asOfDate,
      window.thresholdsDays,
      window.retentionDays,
      // The first page starts just below the window, not at -infinity: the keyset bound is what the
      // index scan starts from, and -infinity made it read every entry below the window (measured:
      // 21,616 buffers and 209 ms for an empty page over 10M documents, 4 buffers after).
      cursor?.expiresAt ?? addDays(window.asOfDate, -window.retentionDays - 1),
      cursor?.id ?? NIL_UUID,
      limit,
    ],
  );
  return rows;
}

/**
 * How many documents are due now by the same predicate as the scan (SPEC §3.1): the reminder backlog.
 * An index range scan over the window plus one ledger probe per document.
 */
export async function countDueDocuments(db: Queryable, window: CandidateWindow): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n
       from profile.person_documents d
      where d.expires_at is not null
        and d.expires_at >= $1::date - $3::int
        and d.expires_at <= $1::date + (select max(t) from unnest($2::int[]) as t)
        and d.status = 'Active'
        and not d.is_deleted
        and not exists (
          select 1 from profile.document_expiry_reminders r
           where r.document_id = d.id
             and r.threshold_days = ${CURRENT_THRESHOLD_SQL('d', '$1', '$2')})`,
    [window.asOfDate, window.thresholdsDays, window.retentionDays],
  );
  return rows[0].n;
}
