/** Seeding and reading the three tables the way a person checking the job would. */
import crypto from 'node:crypto';
import { addDays } from '../../src/domain/dates';
import type { Queryable } from '../../src/db/pool';
import type { OutboxMessage } from '../../src/db/outbox';

export interface DocumentSeed {
  id?: string;
  ownerUserId?: string;
  type?: string;
  numberMask?: string;
  /** Days from AsOfDate to expiry; null for a never-expiring document. */
  daysLeft: number | null;
  status?: 'Active' | 'Archived';
  isDeleted?: boolean;
}

export interface SeededDocument {
  id: string;
  ownerUserId: string;
  type: string;
  numberMask: string;
  expiresAt: string | null;
}

/** Inserts documents relative to `asOfDate` in one statement. */
export async function insertDocuments(
  db: Queryable,
  asOfDate: string,
  docs: DocumentSeed[],
): Promise<SeededDocument[]> {
  const rows = docs.map((d) => ({
    id: d.id ?? crypto.randomUUID(),
    ownerUserId: d.ownerUserId ?? crypto.randomUUID(),
    type: d.type ?? 'ForeignPassport',
    numberMask: d.numberMask ?? `**** ${crypto.randomInt(100000, 999999)}`,
    expiresAt: d.daysLeft === null ? null : addDays(asOfDate, d.daysLeft),
    status: d.status ?? 'Active',
    isDeleted: d.isDeleted ?? false,
  }));
  await db.query(
    `insert into profile.person_documents
       (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted, payload_cipher)
     select r.id, r.owner_user_id, gen_random_uuid(), r.type, r.number_mask, r.expires_at, r.status, r.is_deleted,
            convert_to('cipher-' || r.id::text, 'UTF8')
       from jsonb_to_recordset($1::jsonb) as r(id uuid, owner_user_id uuid, type text, number_mask text,
                                             expires_at date, status text, is_deleted boolean)`,
    [
      JSON.stringify(
        rows.map((r) => ({
          id: r.id,
          owner_user_id: r.ownerUserId,
          type: r.type,
          number_mask: r.numberMask,
          expires_at: r.expiresAt,
          status: r.status,
          is_deleted: r.isDeleted,
        })),
      ),
    ],
  );
  return rows;
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

export interface EventDocument {
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

/** Every outbox row, oldest first. */
export async function outbox(db: Queryable): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `select id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, correlation_id, payload
       from profile.outbox_messages order by created_at, id`,
  );
  return rows;
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
/**
 * Makes every marker insert for the owner fail with `sqlstate`: 22023 (a data error, permanent) by
 * default, or e.g. 40001 (serialization failure, transient). Returns the undo.
 */
export async function rejectOwner(
  db: Queryable,
  ownerUserId: string,
  sqlstate = '22023',
): Promise<() => Promise<void>> {
  if (!/^[0-9A-Z]{5}$/.test(sqlstate)) throw new Error(`not a SQLSTATE: ${sqlstate}`);
  await db.query(`
    create or replace function profile.test_reject_owner() returns trigger language plpgsql as $$
    begin
      if new.owner_user_id = '${ownerUserId}' then raise exception 'rejected for the test' using errcode = '${sqlstate}'; end if;
      return new;
    end $$;
    create trigger test_reject_owner before insert on profile.document_expiry_reminders
      for each row execute function profile.test_reject_owner();`);
  return async () => {
    await db.query(
      'drop trigger if exists test_reject_owner on profile.document_expiry_reminders; drop function if exists profile.test_reject_owner()',
    );
  };
}
