/**
 * What the suite checks in a scenario's database after the fault: the invariants I1–I4 over the ledger
 * and the outbox (read back from the topic for I4), and the counts the scenarios wait on.
 */
import { countDueDocuments } from '../../src/db/candidates';
import { addDays } from '../../src/domain/dates';
import type { CycleResult, CycleStatus } from '../../src/domain/cycle';
import { consumeUntil } from '../stack/consume';
import { AS_OF, THRESHOLDS, waitFor, type FaultDb, type Harness } from './harness';

/** Documents still due as of the suite's date (or `at`): what a complete cycle leaves at zero (I1). */
export const dueCount = (db: FaultDb, at: JudgedAt = {}): Promise<number> =>
  countDueDocuments(db.admin, {
    asOfDate: at.asOf ?? AS_OF,
    thresholdsDays: at.thresholds ?? THRESHOLDS,
    retentionDays: RETENTION_DAYS,
  });

const RETENTION_DAYS = 90;

/**
 * The day and thresholds the invariants are judged as of: the suite's by default, the last cycle's
 * for a scenario whose cycles move through days and thresholds (s11).
 */
export interface JudgedAt {
  asOf?: string;
  thresholds?: number[];
  /** The highest prune cutoff a cycle applied: events of documents that expired before it lost their markers. */
  prunedBefore?: string;
}

/** Markers written so far: a cycle's progress. */
export async function markerCount(db: FaultDb): Promise<number> {
  const { rows } = await db.admin.query('select count(*)::int as n from profile.document_expiry_reminders');
  return rows[0].n;
}

/**
 * Events the cycles wrote into the outbox, or only those the relay has not published yet (after their lane's
 * cursor, or of a held key: `profile.outbox_events_pending`).
 */
export async function outboxCount(db: FaultDb, unpublishedOnly = false): Promise<number> {
  const { rows } = await db.admin.query(
    `select count(*)::int as n from profile.${unpublishedOnly ? 'outbox_events_pending' : 'outbox_events'}`,
  );
  return rows[0].n;
}

/** Waits until the cycle has committed its first events: the fault then lands mid-cycle. */
export const firstEvents = (db: FaultDb): Promise<void> =>
  waitFor('first events', async () => (await outboxCount(db)) > 0);

/** (document, threshold) entries over all outbox events: the reminders the outbox carries. */
export async function eventDocumentCount(db: FaultDb): Promise<number> {
  const { rows } = await db.admin.query(
    `select count(*)::int as n from profile.outbox_events o, jsonb_array_elements(o.payload->'documents') x`,
  );
  return rows[0].n;
}

/** Worker sessions left idle inside a transaction: orphans when the worker's path is cut. */
export async function orphans(db: FaultDb): Promise<number> {
  const { rows } = await db.admin.query(
    `select count(*)::int as n from pg_stat_activity
      where datname = $1 and application_name = 'expiry-reminder-worker' and state like 'idle in transaction%'`,
    [db.name],
  );
  return rows[0].n;
}

/** `[]` when the cycle `what` ended `expected`, else the problem. */
export const endedAs = (what: string, result: CycleResult, expected: CycleStatus): string[] =>
  result.status === expected ? [] : [`${what} ended ${result.status}`];

/**
 * I1–I3 as of `options` (see {@link JudgedAt}), and I4 when `kafka` is given (every outbox row
 * read back from the topic); returns the violations (empty when all hold). I2's second half looks at
 * the markers written as of that day only: in a world that changes between cycles, a marker written
 * silently on an earlier day (a less urgent crossed threshold) may be the current threshold today.
 */
export async function invariants(
  db: FaultDb,
  options: JudgedAt & { kafka?: Harness['topicReader'] } = {},
): Promise<string[]> {
  const asOf = options.asOf ?? AS_OF;
  const problems: string[] = [];
  const due = await dueCount(db, options);
  if (due > 0) problems.push(`I1: ${due} documents still due`);
  const { rows: dup } = await db.admin.query(
    `select x->>'documentId' as doc, x->>'thresholdDays' as t, count(*)::int as n
       from profile.outbox_events o, jsonb_array_elements(o.payload->'documents') x
      group by 1, 2 having count(*) <> 1`,
  );
  if (dup.length > 0) problems.push(`I2: ${dup.length} (document, threshold) pairs in more than one event`);
  const { rows: missing } = await db.admin.query(
    `select count(*)::int as n
       from profile.document_expiry_reminders r
       join profile.person_documents d on d.id = r.document_id
      where r.threshold_days = (select min(t) from unnest($1::int[]) t where d.expires_at - $2::date <= t)
        and (r.reminded_at at time zone 'UTC')::date = $2::date
        and not exists (select 1 from profile.outbox_events o, jsonb_array_elements(o.payload->'documents') x
                         where x->>'documentId' = r.document_id::text and (x->>'thresholdDays')::int = r.threshold_days)`,
    [options.thresholds ?? THRESHOLDS, asOf],
  );
  if (missing[0].n > 0) problems.push(`I2: ${missing[0].n} current-threshold markers without an event`);
  const { rows: orphan } = await db.admin.query(
    `select count(*)::int as n
       from profile.outbox_events o, jsonb_array_elements(o.payload->'documents') x
      where (x->>'expiresAt')::date >= $1::date
        and not exists (select 1 from profile.document_expiry_reminders r
                         where r.document_id::text = x->>'documentId' and r.threshold_days = (x->>'thresholdDays')::int)`,
    [options.prunedBefore ?? addDays(asOf, -RETENTION_DAYS)],
  );
  if (orphan[0].n > 0) problems.push(`I3: ${orphan[0].n} event documents without their marker`);
  if (options.kafka) problems.push(...(await onTheTopic(db, options.kafka)));
  return problems;
}

/** I4: reads the topic from the beginning until every outbox row's message id was seen, or 2 minutes. */
async function onTheTopic(db: FaultDb, kafka: Harness['topicReader']): Promise<string[]> {
  const { rows } = await db.admin.query<{ id: string }>('select id from profile.outbox_events');
  const ids = new Set(rows.map((r) => r.id));
  const seen = new Set<string>();
  await consumeUntil(
    kafka,
    (ms) => {
      for (const m of ms.slice(-1)) if (ids.has(m.headers.messageId)) seen.add(m.headers.messageId);
      return seen.size === ids.size;
    },
    120_000,
  ).catch(() => undefined);
  return seen.size === ids.size ? [] : [`I4: ${ids.size - seen.size} of ${ids.size} outbox rows not on the topic`];
}
