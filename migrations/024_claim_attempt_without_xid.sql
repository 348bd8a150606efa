-- Issue 48. A transaction's id (xid) is assigned at its first write, and an outbox read in xid order publishes
-- an owner's events in the order their transactions committed only if every claim transaction holds its owners'
-- locks before its first write: then two transactions writing one owner's events take their ids in the order
-- they took the owner, which is the order they commit. Migration 021's attempt guard breaks that: its
-- `FOR SHARE` on the attempt's row is a write (it sets the row's xmax) and gives the transaction its id before
-- it waits for a busy owner, so a claim that waited could take an older id than the claim it waited for.
--
-- The same guard, without a write: each claim transaction holds a shared advisory lock of its activity
-- (`enter_claim_attempt`), and an attempt raises its number under that lock taken exclusively
-- (`raise_claim_attempt`), so the raise still waits for every open transaction of an earlier attempt, and an
-- earlier attempt's next transaction still finds the number raised and fails (XR001). The lock is a pair of
-- int4 keys (objsubid 2 in pg_locks), apart from the owners' bigint keys (objsubid 1); a collision of two
-- activities' hashes makes one raise wait for the other's transaction, nothing more.
--
-- New functions beside 021's: workers of the version before this one keep calling `hold_claim_attempt` for
-- their own pinned cycles until those end; an activity's attempts run on its cycle's version, so the two guards
-- meet on one activity only when a cycle is moved between versions (`temporal workflow update-options`). Moved
-- forward, the new raise still waits for an old attempt's `FOR SHARE`, since its upsert locks the same row; an
-- old raise does not wait for a new attempt's hold, so move a cycle back to the version before only once its
-- attempts have stopped (the runbook moves cycles off a version that has no workers). Drop 021's function once
-- no worker of the version before runs.
create or replace function profile.claim_attempt_lock_key(p_cycle_id uuid, p_queued_by text)
returns integer
language sql immutable
as $$ select hashtext(p_cycle_id::text || '/' || p_queued_by) $$;

create or replace function profile.enter_claim_attempt(p_cycle_id uuid, p_queued_by text, p_attempt int)
returns void
language plpgsql volatile
as $$
begin
  perform pg_advisory_xact_lock_shared(48021, profile.claim_attempt_lock_key(p_cycle_id, p_queued_by));
  -- A new statement, so a new snapshot: it sees a raise that committed while this transaction waited.
  perform 1 from profile.document_expiry_reminder_claim_attempts
   where cycle_id = p_cycle_id and queued_by = p_queued_by and attempt = p_attempt;
  if not found then
    raise exception 'attempt % of claim % is over: a later attempt has started', p_attempt, p_queued_by
      using errcode = 'XR001';
  end if;
end $$;

create or replace function profile.raise_claim_attempt(p_cycle_id uuid, p_queued_by text, p_attempt int)
returns boolean
language plpgsql volatile
as $$
declare
  raised boolean;
begin
  perform pg_advisory_xact_lock(48021, profile.claim_attempt_lock_key(p_cycle_id, p_queued_by));
  insert into profile.document_expiry_reminder_claim_attempts as a (cycle_id, queued_by, attempt)
  values (p_cycle_id, p_queued_by, p_attempt)
  on conflict (cycle_id, queued_by) do update set attempt = excluded.attempt, started_at = now()
   where a.attempt <= excluded.attempt
  returning true into raised;
  return coalesce(raised, false);
end $$;

revoke execute on function profile.claim_attempt_lock_key(uuid, text) from public;
revoke execute on function profile.enter_claim_attempt(uuid, text, int) from public;
revoke execute on function profile.raise_claim_attempt(uuid, text, int) from public;
grant execute on function profile.claim_attempt_lock_key(uuid, text) to expiry_reminder_worker;
grant execute on function profile.enter_claim_attempt(uuid, text, int) to expiry_reminder_worker;
grant execute on function profile.raise_claim_attempt(uuid, text, int) to expiry_reminder_worker;
