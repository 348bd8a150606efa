/**
 * docs/DESIGN.md#owner-transaction, #prune: the owner's marker-plus-outbox statement, the owner lock, and
 * the prune. One file because all three are the statements that write the reminder ledger, and they share
 * its "due" and window rules.
 */
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../domain/names';
import { currentThresholdSql, notRemindedSql, ownerInWindowSql, type CandidateWindow } from './candidates';
import type { Queryable } from './pool';

/** A document this owner transaction won the current-threshold marker for. No document values. */
export interface WonDocument {
  documentId: string;
  type: string;
  thresholdDays: number;
  daysLeft: number;
}

/** What a claim did for one owner. */
export interface OwnerClaim {
  ownerUserId: string;
  /** Another transaction held the owner's lock, so this one left the owner alone. */
  busy: boolean;
  /** Documents this statement won the current-threshold marker for, in event order. */
  won: WonDocument[];
}

/**
 * What a claim did for its owners: each owner's part, and the counts over all of them. The counts are not
 * kept per owner: everything that reads them sums them, and a claim that reported them per owner spent 2–5 ms
 * more of a page's database CPU (bench/REPORT.md, "What the misses are made of").
 */
export interface ClaimedOwners {
  /** One per distinct requested owner, in request order, busy ones included. */
  owners: OwnerClaim[];
  /** Documents due at the statement's snapshot (no marker for their current threshold). */
  due: number;
  /** Markers inserted, the silent ones for less urgent crossed thresholds included. */
  markersInserted: number;
  /** Due documents whose current-threshold marker another transaction won first. */
  skippedAlreadyMarked: number;
}

export interface RemindOwnersParams extends CandidateWindow {
  ownerUserIds: readonly string[];
  /** AsOf as an ISO instant: `reminded_at` of the markers and `remindedAt` of the events. */
  asOf: string;
  /** The cycle's workflow id: the outbox row's `correlation_id`. */
  jobRunId: string;
  /** W3C traceparent of the calling span, stored with the events for the relay's span. */
  traceContext?: string;
  /**
   * Who queues these reminders, `<workflow run id>/<activity id>`, kept on the markers so a retry of the
   * same activity can read back what an earlier attempt committed ({@link selectQueuedBy}).
   */
  queuedBy?: string;
}

/**
 * The owner lock key: the two 64-bit halves of the owner uuid XORed, so no table privilege is needed and
 * every bit of the id counts. The first half alone is not enough: UUIDv7 (and v1) ids of owners created
 * in the same millisecond share their leading 64 bits, and two such owners would lock each other out.
 * Every claimer must use the same key for the same owner.
 */
export const ownerLockKeySql = (owner: string) => {
  const hex = `replace(${owner}::text, '-', '')`;
  return `(('x' || left(${hex}, 16))::bit(64) # ('x' || right(${hex}, 16))::bit(64))::bigint`;
};

/** Where a statement keeps the claim's parameters (`$n`), so statements of other shapes can share it. */
export interface ClaimPlaceholders {
  asOfDate: string;
  thresholds: string;
  retentionDays: string;
  /** AsOf, read as `timestamptz` for `reminded_at`. */
  asOf: string;
  /** AsOf again, read as text for the event's `remindedAt`. */
  asOfText: string;
  aggregateType: string;
  topic: string;
  eventType: string;
  contractVersion: string;
  jobRunId: string;
  traceContext: string;
  queuedBy: string;
}

/**
 * The read half of the claim for the owners of relation `owners` (any relation with an `owner_user_id`
 * column), as the CTEs `candidates` (their documents in the window, with DaysLeft and the current
 * threshold) and `due` (those not reminded at or below their current threshold): the scan's predicate,
 * per owner. `cycle preview` runs it alone; {@link claimCtes} writes after it.
 */
export function dueCtes(
  owners: string,
  $: Pick<ClaimPlaceholders, 'asOfDate' | 'thresholds' | 'retentionDays'>,
): string {
  return `candidates as (
       select d.id, d.owner_user_id, d.type, d.number_mask, d.expires_at,
              d.expires_at - ${$.asOfDate}::date as days_left,
              ${currentThresholdSql('d', $.asOfDate, $.thresholds)} as current_threshold
         from ${owners} o
         join profile.person_documents d on d.owner_user_id = o.owner_user_id
        where ${ownerInWindowSql('d', $.asOfDate, $.thresholds, $.retentionDays)}
     ),
     due as (
       select c.* from candidates c
        where ${notRemindedSql('c', 'c.current_threshold')}
     )`;
}

/**
 * The claim for the owners of relation `owners`: {@link dueCtes}, then the CTEs `marks` (every crossed
 * threshold of the due documents, `ON CONFLICT DO NOTHING`, returning what was inserted), `won` (due
 * documents whose current-threshold marker this statement inserted) and `events` (one outbox row per owner
 * that won anything; it returns nothing, since the worker's role may insert outbox rows but not read
 * them). The product's `remindOwnersInTransaction` and the benchmark's one-statement baseline share it, so they cannot
 * drift apart. `ordered`: markers are inserted in (document, threshold) order, for claimers that hold no owner
 * locks (the benchmark's B∥): two that meet in the unique index then wait for each other in one order and never
 * deadlock (PostgreSQL finds a deadlock only after `deadlock_timeout`, 1 s, and fails one of them).
 */
export function claimCtes(
  owners: string,
  $: ClaimPlaceholders,
  { ordered = false }: { ordered?: boolean } = {},
): string {
  return `${dueCtes(owners, $)},
     marks as (
       insert into profile.document_expiry_reminders
              (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at, queued_by)
       select profile.time_ordered_uuid(), due.id, due.owner_user_id, due.type, t, due.expires_at, ${$.asOf}::timestamptz,
              ${$.queuedBy}::text
         from due cross join unnest(${$.thresholds}::int[]) as t
        where due.days_left <= t${ordered ? '\n        order by due.id, t' : ''}
       on conflict (document_id, threshold_days) do nothing
       returning document_id, threshold_days, owner_user_id
     ),
     won as (
       select due.* from due
         join marks on marks.document_id = due.id and marks.threshold_days = due.current_threshold
     ),
     events as (
       insert into profile.outbox_messages
              (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
               correlation_id, trace_context, created_at)
       select profile.time_ordered_uuid(), ${$.aggregateType}, won.owner_user_id, ${$.topic}, won.owner_user_id::text,
              ${$.eventType}, ${$.contractVersion},
              jsonb_build_object(
                'ownerUserId', won.owner_user_id::text,
                'remindedAt', ${$.asOfText}::text,
                'documents', jsonb_agg(jsonb_build_object(
                  'documentId', won.id,
                  'type', won.type,
                  'numberMask', won.number_mask,
                  'expiresAt', won.expires_at,
                  'thresholdDays', won.current_threshold,
                  'daysLeft', won.days_left) order by won.expires_at, won.id)),
              ${$.jobRunId}, ${$.traceContext},
              -- The time of the insert, which runs under the owner's lock, not the transaction's start: a
              -- transaction that began before another of this owner but locked after it committed must sort
              -- after that one's row, or a second relay publishes the two at once (migration 014).
              clock_timestamp()
         from won
        group by won.owner_user_id
     )`;
}

const REMIND_OWNERS_PLACEHOLDERS: ClaimPlaceholders = {
  asOfDate: '$2',
  thresholds: '$3',
  retentionDays: '$4',
  asOf: '$5',
  asOfText: '$6',
  aggregateType: '$7',
  topic: '$8',
  eventType: '$9',
  contractVersion: '$10',
  jobRunId: '$11',
  traceContext: '$12',
  queuedBy: '$13',
};

/**
 * docs/DESIGN.md#owner-transaction for a set of owners, in TWO statements of the caller's transaction:
 * 1. {@link lockOwners} takes each owner's transaction-scoped advisory lock without waiting; an owner
 *    another transaction holds right now (a parallel instance, or this cycle's own second look) is
 *    reported busy and left alone, as the seed skips rows locked by a parallel instance;
 * 2. {@link remindLockedOwners} finds the locked owners' due documents, inserts markers for every crossed
 *    threshold (`ON CONFLICT DO NOTHING`: the unique index decides who sends) and one outbox row per
 *    owner that won the current-threshold marker of at least one document, listing exactly those.
 * The locks come first, in a statement of their own, because a statement reads the snapshot it started
 * with: a claim that took the locks inside itself could read the ledger as it was before another
 * cycle's commit of the same owner, and send "14 days" after that cycle's "7".
 * One owner is the per-owner transaction of the spec; many owners share the round trips and the commit.
 * @returns an entry per distinct requested owner, in request order, and the counts over them all.
 */
export async function remindOwnersInTransaction(db: Queryable, p: RemindOwnersParams): Promise<ClaimedOwners> {
  return (await remindOwnersReadingBack(db, p, () => [])).claimed;
}

/**
 * {@link remindOwnersInTransaction}, and between the locks and the claim, what the `queuedBy` keys that
 * `keysOf` names for each locked owner committed before ({@link selectQueuedBy}): an earlier attempt of the
 * same activity, or the activity that found the owner busy. Read after the locks, so it sees every commit of
 * a transaction that held the owner before (it held the lock until it committed), and before the claim, so
 * it never sees what this claim inserts: each reminder is counted once. With `waitForLocksUntil` (epoch ms),
 * the locks wait for their holders until then ({@link waitForOwnerLocks}) instead of leaving held owners alone.
 */
export async function remindOwnersReadingBack(
  db: Queryable,
  p: RemindOwnersParams,
  keysOf: (ownerUserId: string) => readonly string[],
  { waitForLocksUntil }: { waitForLocksUntil?: number } = {},
): Promise<{ claimed: ClaimedOwners; earlier: QueuedByEarlierAttempt[] }> {
  const requested = [...new Set(p.ownerUserIds)];
  const locked =
    waitForLocksUntil === undefined
      ? await lockOwners(db, requested)
      : await waitForOwnerLocks(db, requested, waitForLocksUntil);
  const pairs = locked.flatMap((ownerUserId) => keysOf(ownerUserId).map((queuedBy) => ({ ownerUserId, queuedBy })));
  const earlier = pairs.length > 0 ? await selectQueuedBy(db, pairs, p) : [];
  const claimed = await remindLockedOwners(db, { ...p, ownerUserIds: locked });
  const byOwner = new Map(claimed.owners.map((c) => [c.ownerUserId, c]));
  return {
    claimed: { ...claimed, owners: requested.map((ownerUserId) => byOwner.get(ownerUserId) ?? busyClaim(ownerUserId)) },
    earlier,
  };
}

/** The claim of an owner that another transaction held: nothing done. */
export function busyClaim(ownerUserId: string): OwnerClaim {
  return { ownerUserId, busy: true, won: [] };
}

/** A claim of no owners. */
export function noClaims(): ClaimedOwners {
  return { owners: [], due: 0, markersInserted: 0, skippedAlreadyMarked: 0 };
}

/** Two claims as one: the owners of both, the counts added. */
export function addClaims(a: ClaimedOwners, b: ClaimedOwners): ClaimedOwners {
  return {
    owners: [...a.owners, ...b.owners],
    due: a.due + b.due,
    markersInserted: a.markersInserted + b.markersInserted,
    skippedAlreadyMarked: a.skippedAlreadyMarked + b.skippedAlreadyMarked,
  };
}

/**
 * Takes the owner lock of each of `ownerUserIds` that no other transaction holds, without waiting.
 * @returns the owners now locked by the caller's transaction.
 */
export async function lockOwners(db: Queryable, ownerUserIds: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ owner_user_id: string }>(
    `select o.id as owner_user_id
       from unnest($1::uuid[]) as o(id)
      where pg_try_advisory_xact_lock(${ownerLockKeySql('o.id')})`,
    [ownerUserIds],
  );
  return rows.map((r) => r.owner_user_id);
}

/**
 * Takes the owner lock of each of `ownerUserIds`, waiting for a transaction that holds one to end, until
 * `untilMs` (epoch milliseconds) in all: each lock waits at most what is left of that budget, and an owner
 * given up on leaves the locks taken before it; once the budget is spent the rest are taken only if free.
 * One statement (migration 019's `wait_for_xact_locks`, each lock in its own subtransaction in the server).
 * The locks are taken in the order of their keys: two transactions that wait this way cannot deadlock, and
 * one that takes its locks without waiting ({@link lockOwners}) never waits at all.
 * @returns the owners now locked by the caller's transaction.
 */
async function waitForOwnerLocks(db: Queryable, ownerUserIds: readonly string[], untilMs: number): Promise<string[]> {
  const { rows } = await db.query<{ owner_user_id: string }>(
    `with owners as (select o.id, ${ownerLockKeySql('o.id')} as lock_key from unnest($1::uuid[]) as o(id)),
          locked as materialized (
            select k.lock_key
              from profile.wait_for_xact_locks(array(select lock_key from owners order by lock_key), $2::int)
                   as k(lock_key))
     select o.id as owner_user_id from owners o where o.lock_key in (select lock_key from locked)`,
    [ownerUserIds, Math.max(0, Math.round(untilMs - Date.now()))],
  );
  return rows.map((r) => r.owner_user_id);
}

/**
 * The claim of {@link remindLockedOwners}: `$1` the locked owners, the rest {@link REMIND_OWNERS_PLACEHOLDERS}.
 * One row of counts over all the owners (`owner_user_id` null), then a row per document won: no count per
 * owner, which cost the claim 2–5 ms of a page's CPU to aggregate and return (bench/REPORT.md), and no json
 * to build and print for each document.
 */
const CLAIM_LOCKED_OWNERS_SQL = `with locked as (select distinct o.id as owner_user_id from unnest($1::uuid[]) as o(id)),
     ${claimCtes('locked', REMIND_OWNERS_PLACEHOLDERS)}
     select null::uuid as owner_user_id,
            (select count(*)::int from due) as due,
            (select count(*)::int from marks) as inserted,
            null::uuid as document_id, null::text as type, null::int as threshold_days, null::int as days_left
     union all
     select owner_user_id, null, null, id, type, current_threshold, days_left from won`;

const claimLockedOwnersParams = (p: RemindOwnersParams) => [
  p.ownerUserIds,
  p.asOfDate,
  p.thresholdsDays,
  p.retentionDays,
  p.asOf,
  p.asOf,
  AGGREGATE_TYPE,
  TOPIC,
  EVENT_TYPE,
  CONTRACT_VERSION,
  p.jobRunId,
  p.traceContext ?? null,
  p.queuedBy ?? null,
];

/**
 * The claim of owners the caller's transaction has locked ({@link lockOwners}, or a statement of its own
 * with {@link ownerLockKeySql}): an entry per distinct owner, in the order given, and the counts over them all.
 */
export async function remindLockedOwners(db: Queryable, p: RemindOwnersParams): Promise<ClaimedOwners> {
  if (p.ownerUserIds.length === 0) return noClaims();
  const { rows } = await db.query<ClaimRow>(CLAIM_LOCKED_OWNERS_SQL, claimLockedOwnersParams(p));
  return claimedOf([...new Set(p.ownerUserIds)], rows);
}

/** A row of {@link CLAIM_LOCKED_OWNERS_SQL}: the counts (no owner), or a document an owner won. */
interface ClaimRow {
  owner_user_id: string | null;
  due: number | null;
  inserted: number | null;
  document_id: string | null;
  type: string | null;
  threshold_days: number | null;
  days_left: number | null;
}

/**
 * The claim of `owners` from the statement's rows: each owner's won documents in event order (days left, then
 * id: the order of `expires_at, id` for documents seen as of one day; uuid text sorts as uuids do).
 */
function claimedOf(owners: readonly string[], rows: readonly ClaimRow[]): ClaimedOwners {
  const won = new Map<string, WonDocument[]>(owners.map((o) => [o, []]));
  let due = 0;
  let markersInserted = 0;
  let wonCount = 0;
  for (const r of rows) {
    if (r.owner_user_id === null) {
      due = r.due ?? 0;
      markersInserted = r.inserted ?? 0;
      continue;
    }
    const list = won.get(r.owner_user_id);
    if (!list) throw new Error(`the claim returned a document of ${r.owner_user_id}, an owner it was not given`);
    list.push({ documentId: r.document_id!, type: r.type!, thresholdDays: r.threshold_days!, daysLeft: r.days_left! });
    wonCount += 1;
  }
  const byEventOrder = (a: WonDocument, b: WonDocument) =>
    a.daysLeft - b.daysLeft || (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0);
  return {
    owners: owners.map((ownerUserId) => ({ ownerUserId, busy: false, won: won.get(ownerUserId)!.sort(byEventOrder) })),
    due,
    markersInserted,
    skippedAlreadyMarked: due - wonCount,
  };
}

/** The plan of {@link remindLockedOwners} for `p` (EXPLAIN without ANALYZE: nothing is written). */
export async function explainClaimLockedOwners(db: Queryable, p: RemindOwnersParams): Promise<string> {
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(
    `explain ${CLAIM_LOCKED_OWNERS_SQL}`,
    claimLockedOwnersParams(p),
  );
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/** What an earlier attempt of an activity queued for one owner, read back from the ledger. */
export interface QueuedByEarlierAttempt {
  ownerUserId: string;
  markersInserted: number;
  won: WonDocument[];
}

/**
 * The markers each `(ownerUserId, queuedBy)` pair committed, per owner: every marker counts as inserted, and
 * a document whose marker is at its current threshold as of `window` was sent (the event listed it). A
 * worker killed between its commit and its report, or a transaction still open when its retry found the
 * owner busy, leaves these for a later claim to count, since that claim finds nothing left to send.
 */
async function selectQueuedBy(
  db: Queryable,
  pairs: readonly { ownerUserId: string; queuedBy: string }[],
  window: CandidateWindow,
): Promise<QueuedByEarlierAttempt[]> {
  const { rows } = await db.query<{ owner_user_id: string; inserted: number; won: WonDocument[] }>(
    `select r.owner_user_id,
            count(*)::int as inserted,
            coalesce(jsonb_agg(jsonb_build_object(
                       'documentId', r.document_id, 'type', r.type, 'thresholdDays', r.threshold_days,
                       'daysLeft', r.expires_at - $3::date) order by r.expires_at, r.document_id)
                     filter (where r.threshold_days = ${currentThresholdSql('r', '$3', '$4')}), '[]') as won
       from profile.document_expiry_reminders r
       join unnest($1::uuid[], $2::text[]) as k(owner_user_id, queued_by)
         on r.owner_user_id = k.owner_user_id and r.queued_by = k.queued_by
      group by r.owner_user_id`,
    [pairs.map((k) => k.ownerUserId), pairs.map((k) => k.queuedBy), window.asOfDate, window.thresholdsDays],
  );
  return rows.map((r) => ({ ownerUserId: r.owner_user_id, markersInserted: r.inserted, won: r.won }));
}

/**
 * The prune's delete: the oldest `$2` ledger rows whose document expired before `$1`, found by walking
 * `ix_document_expiry_reminders_expires_at` in order (the ORDER BY makes the walk cheaper than any
 * other plan, whatever the statistics say) and deleted by their ctid. Without the order, statistics that
 * overestimate what is left (the last passes of a prune, before autovacuum analyzes the table) led the
 * planner to a sequential scan with a limit, which reads the whole ledger when few rows qualify
 * (`test/integration/prune-plan.test.ts`).
 */
export const DELETE_EXPIRED_MARKERS_SQL = `delete from profile.document_expiry_reminders
  where ctid = any(array(select ctid from profile.document_expiry_reminders
                          where expires_at < $1::date
                          order by expires_at
                          limit $2))`;

/**
 * Deletes up to `limit` ledger rows whose document expired before `cutoffDate`.
 * @returns how many rows it deleted; fewer than `limit` means nothing is left to prune.
 */
export async function deleteExpiredMarkers(db: Queryable, cutoffDate: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(DELETE_EXPIRED_MARKERS_SQL, [cutoffDate, limit]);
  return rowCount ?? 0;
}

/**
 * Raises the ledger's prune cutoff to `cutoffDate` (never lowers it). The prune calls it before it deletes
 * anything: from then on no scan reads below the cutoff, whatever its AsOf, so the markers about to go
 * can no longer be missed by a run as of an earlier day (docs/DESIGN.md#resolutions, resolution 1).
 */
export async function raisePruneCutoff(db: Queryable, cutoffDate: string): Promise<void> {
  await db.query(
    `insert into profile.document_expiry_reminder_prune_cutoff as c (singleton, cutoff)
     values (true, $1::date)
     on conflict (singleton) do update set cutoff = excluded.cutoff, updated_at = now()
      where c.cutoff < excluded.cutoff`,
    [cutoffDate],
  );
}
