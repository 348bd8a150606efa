-- Wake the relays when rows arrive: NOTIFY is delivered at commit, so a relay never sees a row that
-- is not committed yet; one notification per statement keeps bulk inserts cheap.
create or replace function profile.outbox_messages_notify() returns trigger
language plpgsql as $$
begin
  perform pg_notify('profile_outbox_messages', '');
  return null;
end $$;

drop trigger if exists outbox_messages_notify on profile.outbox_messages;
create trigger outbox_messages_notify
  after insert on profile.outbox_messages
  for each statement execute function profile.outbox_messages_notify();
