/** Seeding and reading the three tables the way a person checking the job would. */
import crypto from 'node:crypto';
import type pg from 'pg';
import type { Queryable } from '../../src/db/pool';
import { lockFreeOwners } from '../../src/activities/claim/sql/lock-owners';
import type { OutboxMessage } from '../../src/db/outbox';
import type { RemindOwnersInput } from '../../src/activities';
import { insertDocuments } from '../../scripts/stack/documents';

export { insertDocuments, rejectOwner } from '../../scripts/stack/documents';

/**
 * Holds the owner's advisory lock (the claimers' own lock) in a transaction of its own, as an orphaned
 * backend or another cycle's claim would; every claim finds the owner busy until the returned release.
 */
export async function holdOwnerLock(pool: pg.Pool, ownerUserId: string): Promise<() => Promise<void>> {
  const client = await pool.connect();
  await client.query('begin');
  if ((await lockFreeOwners(client, [ownerUserId])).length !== 1)
    throw new Error(`owner ${ownerUserId} is held already`);
  return async () => {
    await client.query('rollback');
    client.release();
  };
}

/**
 * `n` new owners, each with a document 7 days and one 25 days from `asOfDate` (both due; in scan order
 * every 7-day document comes first).
 */
export async function seedOwnersWithTwoDocuments(db: Queryable, asOfDate: string, n: number): Promise<string[]> {
  const owners = Array.from({ length: n }, () => crypto.randomUUID());
  await insertDocuments(
    db,
    asOfDate,
    owners.flatMap((ownerUserId) => [
      { ownerUserId, daysLeft: 7 },
      { ownerUserId, daysLeft: 25 },
    ]),
  );
  return owners;
}

export interface MarkerRow {
  document_id: string;
  owner_user_id: string;
  threshold_days: number;
  expires_at: string;
}

/** Every ledger row, ordered for stable comparison. */
export async function markers(db: Queryable): Promise<MarkerRow[]> {
  const { rows } = await db.query<MarkerRow>(
    `select document_id, owner_user_id, threshold_days, expires_at
       from profile.document_expiry_reminders order by document_id, threshold_days desc`,
  );
  return rows;
}

interface EventDocument {
  documentId: string;
  type: string;
  numberMask: string;
  expiresAt: string;
  thresholdDays: number;
  daysLeft: number;
}

/** An outbox row as the relay reads it, with the event's payload typed. */
export type OutboxRow = Omit<OutboxMessage, 'payload' | 'attempts' | 'trace_context'> & {
  payload: { ownerUserId: string; remindedAt: string; documents: EventDocument[] };
};

/**
 * Every outbox row, oldest first: the events this version's workers write (`outbox_events`) and the rows of
 * `outbox_messages`, which workers of a version before issue 48 still write during a deploy.
 */
export async function outbox(db: Queryable): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `select id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, correlation_id, payload
       from (select id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version,
                    correlation_id, payload, created_at from profile.outbox_events
             union all
             select id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version,
                    correlation_id, payload, created_at from profile.outbox_messages) o
      order by created_at, id`,
  );
  return rows;
}

/** Rows not published yet in either outbox: the benchmark's count, so that both mean the same. */
export { unpublishedCount } from '../../bench/workloads/relay/seed';

/**
 * Where the relay recorded each published event of the insert-only outbox: `[partition, offset]` by event id,
 * from the event's first delivery (a re-send after a crash records another).
 */
export async function eventPlacements(db: Queryable): Promise<Record<string, [number, string]>> {
  const { rows } = await db.query<{ id: string; partition: number; offset: string }>(
    `select distinct on (u.id) u.id, d.partition, (d.base_offset + u.n - 1)::text as offset
       from profile.outbox_deliveries d cross join unnest(d.ids) with ordinality as u(id, n)
      order by u.id, d.published_at, d.base_offset`,
  );
  return Object.fromEntries(rows.map((r) => [r.id, [r.partition, r.offset]]));
}

/** A fingerprint of the whole documents table, to prove the job never wrote it. */
export async function documentsFingerprint(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ md5: string }>(
    `select md5(coalesce(string_agg(d::text, '|' order by d.id), '')) as md5 from profile.person_documents d`,
  );
  return rows[0].md5;
}

/**
 * Makes every ledger insert for `ownerUserId` fail with a data exception (SQLSTATE 22023, which the
 * activities treat as permanent), so that owner fails after its retries. Returns the undo.
 */

/** The owner-group activity's input for a day at 03:00 UTC with the default thresholds and retention. */
export function remindOwnersInput(
  ownerUserIds: string[],
  asOfDate: string,
  { jobRunId, lastAttempt, cycleId = crypto.randomUUID() }: { jobRunId: string; lastAttempt: number; cycleId?: string },
): RemindOwnersInput {
  return {
    cycleId,
    ownerUserIds,
    asOf: `${asOfDate}T03:00:00.000Z`,
    asOfDate,
    thresholdsDays: [30, 7, 1, 0],
    retentionDays: 90,
    jobRunId,
    lastAttempt,
  };
}

/**
 * The layout of issue 46: `reminded` owners with one document each expired 10 to 80 days before `asOfDate`,
 * reminded at every threshold of 30, 7, 1, 0; one straggler expired 85 days before with no marker (due at 0,
 * below the reminded window); `due` owners with one document due in 5 days.
 */
export async function seedStragglerDay(
  db: Queryable,
  asOfDate: string,
  { reminded, due }: { reminded: number; due: number },
): Promise<void> {
  await db.query(
    `with docs as (
       insert into profile.person_documents
              (id, owner_user_id, person_id, type, number_mask, expires_at, status, payload_cipher)
       select gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Passport', '****',
              $1::date - 10 - (i % 71), 'Active', '\\x00'
         from generate_series(1, $2::int) as i
       returning id, owner_user_id, expires_at)
     insert into profile.document_expiry_reminders
            (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     select gen_random_uuid(), id, owner_user_id, 'Passport', t, expires_at, now()
       from docs cross join unnest(array[30, 7, 1, 0]) as t`,
    [asOfDate, reminded],
  );
  await insertDocuments(db, asOfDate, [{ daysLeft: -85 }, ...Array.from({ length: due }, () => ({ daysLeft: 5 }))]);
  // Analyzed, as a table that grew by so much would be before a cycle reads it.
  await db.query('analyze profile.person_documents, profile.document_expiry_reminders');
}

/**
 * Forgets what cycles did, keeping the day as seeded: the markers cycles wrote (seeded ones have no
 * `queued_by`), the outbox, and the claims' pages, receipts and attempts.
 */
export async function forgetCycles(db: Queryable): Promise<void> {
  await db.query(
    `delete from profile.document_expiry_reminders where queued_by is not null;
     truncate profile.outbox_messages, profile.outbox_events, profile.document_expiry_reminder_scan_positions,
              profile.document_expiry_reminder_claim_receipts, profile.document_expiry_reminder_claim_attempts`,
  );
}
