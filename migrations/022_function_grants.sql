-- Issue 47. The job's functions were executable by PUBLIC, PostgreSQL's default for a new function: the support
-- role (and any login of the database) could call `wait_for_xact_locks` and take owner locks with it. Each is
-- now executable by the role whose statements call it, and by no other. A trigger's function needs no grant to
-- fire (the outbox's notify trigger runs for whoever inserts). Functions the job adds later start without
-- PUBLIC's EXECUTE too.
revoke execute on function profile.wait_for_xact_locks(bigint[], integer) from public;
revoke execute on function profile.time_ordered_uuid() from public;
revoke execute on function profile.uuid_v7_portable() from public;
revoke execute on function profile.outbox_messages_notify() from public;

grant execute on function profile.wait_for_xact_locks(bigint[], integer) to expiry_reminder_worker;
-- time_ordered_uuid() is inlined into the claim statement; on PostgreSQL before 18 it calls uuid_v7_portable().
grant execute on function profile.time_ordered_uuid() to expiry_reminder_worker;
grant execute on function profile.uuid_v7_portable() to expiry_reminder_worker;

alter default privileges in schema profile revoke execute on functions from public;
