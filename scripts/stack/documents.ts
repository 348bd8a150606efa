/**
 * Documents seeded into a stack's `profile.person_documents`, relative to an AsOf date, and a trigger that
 * makes one owner's marker inserts fail: what the fixture recorder's scenarios and the tests set up.
 */
import crypto from 'node:crypto';
import { addDays } from '../../src/domain/dates';
import type { Queryable } from '../../src/db/pool';

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
