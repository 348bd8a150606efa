-- Issue 37. The ledger's and the outbox's ids were random (gen_random_uuid()), so every insert put its
-- primary-key entry at a random place in an index of every row the table holds, and the relay's update
-- (a new row version) did it again in the outbox: a random index page to find, and often to read, per row.
-- Ids that begin with the time they were made (UUID version 7, RFC 9562) land at the right edge of the
-- index, on pages already in memory (bench/REPORT.md). They are still UUIDs, unique and random in their
-- last 74 bits: the event id's contract (SPEC 2.3) is unchanged, and ids made by an older worker mix with them.
-- PostgreSQL 18 has uuidv7(); before it, the same layout is built from gen_random_uuid() (13 and later):
-- the Unix time in milliseconds in the first 48 bits, and the version nibble set to 7.
create or replace function profile.uuid_v7_portable() returns uuid
language sql volatile parallel safe
as $$
  select encode(
           set_bit(set_bit(
             overlay(uuid_send(gen_random_uuid())
                     placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
                     from 1 for 6),
             52, 1), 53, 1),
           'hex')::uuid
$$;

-- One name for the job's statements, whichever body the server allows. Both are plain SQL expressions that
-- the planner inlines into the statement that calls them: no function call per row.
do $$
begin
  if to_regprocedure('pg_catalog.uuidv7()') is not null then
    create or replace function profile.time_ordered_uuid() returns uuid
    language sql volatile parallel safe as 'select pg_catalog.uuidv7()';
  else
    create or replace function profile.time_ordered_uuid() returns uuid
    language sql volatile parallel safe as 'select profile.uuid_v7_portable()';
  end if;
end $$;

grant execute on function profile.time_ordered_uuid() to expiry_reminder_worker;
grant execute on function profile.uuid_v7_portable() to expiry_reminder_worker;
