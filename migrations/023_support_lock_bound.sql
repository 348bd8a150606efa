-- Issue 47. The owner locks are advisory locks, and pg_advisory_lock is PUBLIC's in every PostgreSQL: a support
-- login (expiry_reminder_support, read-only on the tables) could take an owner's lock in its session and keep
-- the session, and that owner would be busy in every cycle, counted failed, its reminders delayed without end.
-- Revoking PUBLIC's EXECUTE on the server's own functions would change them for every user of the database.
-- Instead the bound: when a claim's second try waits for owners another session holds (a busy retry, seconds
-- after the first claim met them), it ends every support session holding one of those locks first, and takes
-- the lock. A session of any other role (a twin cycle's claim, a worker) is never ended: it is waited for.
-- SECURITY DEFINER: ending another role's session takes the privileges of that role, or of pg_signal_backend,
-- which the worker must not have; the migrating role (the database's admin) does. Its body ends support's
-- sessions only, and only those holding the given keys. Where the admin may not signal them, it ends none
-- (the owner stays busy, as before).
create or replace function profile.end_support_lock_holders(lock_keys bigint[])
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  holder integer;
  ended integer := 0;
begin
  for holder in
    select distinct l.pid
      from pg_locks l
      join pg_stat_activity a on a.pid = l.pid
     where l.locktype = 'advisory'
       and l.granted
       and l.objsubid = 1
       and l.database = (select d.oid from pg_database d where d.datname = current_database())
       -- A bigint key shows as its high half in classid and its low half in objid.
       and ((l.classid::bigint << 32) | l.objid::bigint) = any(lock_keys)
       and a.usesysid = 'expiry_reminder_support'::regrole
  loop
    begin
      if pg_terminate_backend(holder) then
        ended := ended + 1;
      end if;
    exception when insufficient_privilege then
      null;
    end;
  end loop;
  return ended;
end $$;

revoke execute on function profile.end_support_lock_holders(bigint[]) from public;
grant execute on function profile.end_support_lock_holders(bigint[]) to expiry_reminder_worker;
