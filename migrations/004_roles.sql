-- Least-privilege roles (SPEC 2.4). Roles are cluster-wide, so creating one that another database of
-- the cluster already created is fine; grants are per database and repeatable.
do $$
begin
  create role expiry_reminder_worker login;
exception when duplicate_object or unique_violation then null;
end $$;

do $$
begin
  create role outbox_relay login;
exception when duplicate_object or unique_violation then null;
end $$;

grant usage on schema profile to expiry_reminder_worker, outbox_relay;

-- Column grants: payload_cipher is unreadable and the table is unwritable for the worker.
grant select (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted)
  on profile.person_documents to expiry_reminder_worker;
grant select, insert, delete on profile.document_expiry_reminders to expiry_reminder_worker;
grant insert on profile.outbox_messages to expiry_reminder_worker;

grant select, update, delete on profile.outbox_messages to outbox_relay;
