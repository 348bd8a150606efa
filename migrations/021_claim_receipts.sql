-- Issue 46. What a claim's retry needs, kept by its own key, so that its work is its page's and its counts
-- are what the attempts before it committed, not a scan of the page's span again.
--
-- 1. A page's record says what the page held when it was read: its due documents and distinct owners, the
--    owners its first transaction did not lock (a page with more owners than `ownerConcurrency`, or one read
--    alone after its claim failed for good), and the activity (`queued_by`) that read it. A retry takes the
--    page from here instead of reading the documents between its ends again. Null on pages recorded before
--    this migration, which only workers of the versions before it read.
alter table profile.document_expiry_reminder_scan_positions
  add column if not exists documents int,
  add column if not exists owners int,
  add column if not exists later_owner_ids uuid[],
  add column if not exists queued_by text;

-- 2. A receipt per committed claim transaction, written by the transaction's claim statement: what it did,
--    counted where it happened. `part` names the owners it claimed within the activity: `p<page>` a page's
--    first transaction, `p<page>.g<n>` the page's n-th group of later owners, `b<n>` the activity's n-th
--    second try of busy owners, `r` a busy retry's group, and `.o<i>` an owner of that group claimed alone.
--    A retry reads its activity's receipts (a few rows a page) and claims only the parts that have none.
create table if not exists profile.document_expiry_reminder_claim_receipts (
  cycle_id uuid not null,
  queued_by text not null,
  part text not null,
  attempt int not null,
  owners_processed int not null,
  owners_notified int not null,
  reminders_sent int not null,
  markers_inserted int not null,
  skipped_already_marked int not null,
  -- The owners of a second try or of an owner claimed alone; a page's groups are named by the page's record.
  owner_ids uuid[],
  -- Owners another transaction held, for the activity's second try.
  busy_owner_ids uuid[],
  -- Owners an earlier part of the activity found busy, which this part claimed: they need no second try.
  cleared_owner_ids uuid[],
  created_at timestamptz not null default now(),
  primary key (cycle_id, queued_by, part)
);

-- 3. The attempt of each claiming activity that may commit. An attempt raises it when it starts and every
--    claim transaction holds its row (FOR SHARE) from its first statement to its commit, so once a later
--    attempt has started, no earlier one commits anything: the later one's raise waits for the earlier one's
--    open transaction, and the earlier one's next transaction finds the row raised and fails (XR001).
create table if not exists profile.document_expiry_reminder_claim_attempts (
  cycle_id uuid not null,
  queued_by text not null,
  attempt int not null,
  started_at timestamptz not null default now(),
  primary key (cycle_id, queued_by)
);

create or replace function profile.hold_claim_attempt(p_cycle_id uuid, p_queued_by text, p_attempt int)
returns void
language plpgsql volatile
as $$
begin
  perform 1 from profile.document_expiry_reminder_claim_attempts
   where cycle_id = p_cycle_id and queued_by = p_queued_by and attempt = p_attempt
     for share;
  if not found then
    raise exception 'attempt % of claim % is over: a later attempt has started', p_attempt, p_queued_by
      using errcode = 'XR001';
  end if;
end $$;

revoke execute on function profile.hold_claim_attempt(uuid, text, int) from public;
grant execute on function profile.hold_claim_attempt(uuid, text, int) to expiry_reminder_worker;

grant select, insert, delete on profile.document_expiry_reminder_claim_receipts to expiry_reminder_worker;
grant select, insert, update, delete on profile.document_expiry_reminder_claim_attempts to expiry_reminder_worker;
