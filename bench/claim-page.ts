/**
 * Baseline B of the benchmark (issue 7): what the database alone can do. ONE statement per page does the
 * whole claim: the keyset page of candidate documents (the same predicate as `selectCandidatePage`), its
 * distinct owners, and then the product's claim for them (`claimCtes`: all due documents of those owners,
 * markers for every crossed threshold, one outbox row per owner that won a current-threshold marker).
 * Same ledger/outbox rows as the product; no advisory locks (a single claimer, or B∥'s claimers of disjoint
 * id ranges, whose markers go in in one order so that two meeting on an owner wait rather than deadlock).
 * `range` limits the page to document ids in `[from, until)`: baseline B∥ runs one claimer per id range, as the
 * cycle's partitions do.
 */
import {
  currentThresholdSql,
  notRemindedSql,
  windowSql,
  scanBounds,
  selectPruneCutoff,
  type CandidateWindow,
} from '../src/db/candidates';
import { addDays } from '../src/domain/dates';
import type { Queryable } from '../src/db/pool';
import type { IdRange, PageCursor } from '../src/db/candidates';
import { claimCtes } from '../src/db/reminders';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../src/domain/names';

export interface ClaimPageResult {
  documentCount: number;
  owners: number;
  markersInserted: number;
  remindersSent: number;
  ownersNotified: number;
  next: PageCursor | null;
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** One page of due documents after `cursor` (in `range`) and the claim of its owners, in one statement. */
export async function claimPage(
  db: Queryable,
  window: CandidateWindow,
  cursor: PageCursor | null,
  batchSize: number,
  asOf: string,
  jobRunId: string,
  range?: IdRange,
): Promise<ClaimPageResult> {
  // The window as constants, as the cycle's page statement has it (the planner misjudges subquery bounds).
  const bounds = scanBounds(window, await selectPruneCutoff(db));
  const { rows } = await db.query<{
    page_count: number;
    last_expires_at: string | null;
    last_id: string | null;
    owners: number;
    inserted: number;
    won: number;
    events: number;
  }>(
    `with page as materialized (
       select d.id, d.owner_user_id, d.expires_at
         from profile.person_documents d
        where ${windowSql('d', '$13::date', '$14::date')}
          and ${notRemindedSql('d', currentThresholdSql('d', '$1', '$2'))}
          and (d.expires_at, d.id) > ($4::date, $5::uuid)
          ${range ? 'and d.id >= $15::uuid and ($16::uuid is null or d.id < $16::uuid)' : ''}
        order by d.expires_at, d.id
        limit $6
     ),
     last_row as (select expires_at, id from page order by expires_at desc, id desc limit 1),
     owners as (select distinct owner_user_id from page),
     ${claimCtes(
       'owners',
       {
         asOfDate: '$1',
         thresholds: '$2',
         retentionDays: '$3',
         asOf: '$7',
         asOfText: '$7',
         aggregateType: '$8',
         topic: '$9',
         eventType: '$10',
         contractVersion: '$11',
         jobRunId: '$12',
         traceContext: 'null',
         queuedBy: 'null',
       },
       { ordered: true },
     )}
     select (select count(*)::int from page) as page_count,
            (select expires_at from last_row) as last_expires_at,
            (select id from last_row) as last_id,
            (select count(*)::int from owners) as owners,
            (select count(*)::int from marks) as inserted,
            (select count(*)::int from won) as won,
            (select count(distinct owner_user_id)::int from won) as events`,
    [
      window.asOfDate,
      window.thresholdsDays,
      window.retentionDays,
      cursor?.expiresAt ?? addDays(bounds.from, -1),
      cursor?.id ?? NIL_UUID,
      batchSize,
      asOf,
      AGGREGATE_TYPE,
      TOPIC,
      EVENT_TYPE,
      CONTRACT_VERSION,
      jobRunId,
      bounds.from,
      bounds.to,
      ...(range ?? []),
    ],
  );
  const r = rows[0];
  return {
    documentCount: r.page_count,
    owners: r.owners,
    markersInserted: r.inserted,
    remindersSent: r.won,
    ownersNotified: r.events,
    next: r.page_count === batchSize && r.last_id ? { expiresAt: r.last_expires_at!, id: r.last_id } : null,
  };
}
