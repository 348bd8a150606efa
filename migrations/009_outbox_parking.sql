-- Issue 12. A row Kafka refuses on its own (too large, invalid) used to sit in every batch and block the
-- whole outbox. The relay now counts such refusals per row (`rejections`) and parks the row after
-- RELAY_MAX_ATTEMPTS of them (`parked_at`, with the refusal in `last_error`): the relay leaves it, and
-- the later rows of its key, until an operator un-parks it (`outbox retry`). Additive and nullable or
-- defaulted, so the worker's inserts and older relays are unaffected.
alter table profile.outbox_messages add column if not exists parked_at timestamptz null;
alter table profile.outbox_messages add column if not exists rejections int not null default 0;

-- The keys the claim must leave alone, read on every claim: only parked rows are in it, so it stays tiny.
create index if not exists ix_outbox_messages_parked
  on profile.outbox_messages (message_key) where published_at is null and parked_at is not null;

-- Wake the relays only when a statement wrote rows. A statement-level trigger fires for every insert
-- statement, even one that inserted nothing, and most owner statements insert no outbox row (their owners
-- won nothing): each of those woke every relay for an empty claim. The transition table says whether
-- the statement inserted anything. NOTIFY is still delivered at commit, once per transaction.
create or replace function profile.outbox_messages_notify() returns trigger
language plpgsql as $$
begin
  if exists (select 1 from inserted_rows) then
    perform pg_notify('profile_outbox_messages', '');
  end if;
  return null;
end $$;

drop trigger if exists outbox_messages_notify on profile.outbox_messages;
create trigger outbox_messages_notify
  after insert on profile.outbox_messages
  referencing new table as inserted_rows
  for each statement execute function profile.outbox_messages_notify();
