/**
 * The owner locks (docs/DESIGN.md#owner-transaction): a transaction-scoped advisory lock per owner, taken in a
 * statement of its own before the claim reads the ledger, so the claim's snapshot sees every commit of a
 * transaction that held the owner before.
 */
import type { Queryable } from '../../../db/pool';

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

/**
 * Takes the owner lock of each of `ownerUserIds` that no other transaction holds, without waiting: an owner
 * held elsewhere is busy, as the seed skips what a parallel instance holds.
 * @returns the owners now locked by the caller's transaction.
 */
export async function lockFreeOwners(db: Queryable, ownerUserIds: readonly string[]): Promise<string[]> {
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
 * one that takes its locks without waiting ({@link lockFreeOwners}) never waits at all.
 * @returns the owners now locked by the caller's transaction.
 */
export async function waitForOwnerLocks(
  db: Queryable,
  ownerUserIds: readonly string[],
  untilMs: number,
): Promise<string[]> {
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
 * Ends the support sessions that hold an owner lock of `ownerUserIds` (migration 023): a support login may take
 * the job's locks with PostgreSQL's own `pg_advisory_lock`, and keep its session. Sessions of other roles are
 * left alone and waited for. Run before {@link waitForOwnerLocks}, which then takes the locks they held.
 * @returns how many sessions it ended.
 */
export async function endSupportLockHolders(db: Queryable, ownerUserIds: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ ended: number }>(
    `select profile.end_support_lock_holders(array(select ${ownerLockKeySql('o.id')} from unnest($1::uuid[]) as o(id)))
              as ended`,
    [ownerUserIds],
  );
  return rows[0]?.ended ?? 0;
}
