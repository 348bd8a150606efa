-- Issue 38. The support desk's role, for `explain` (SUPPORT_DATABASE_URL): it reads what `explain` reads
-- and nothing else, and writes nothing. Before it, `explain` read as the worker (ledger insert and delete)
-- and the relay (outbox update and delete), kept read-only by its READ ONLY transaction alone.
-- Column grants, so a column added later is not readable until a migration grants it: of the documents,
-- never payload_cipher; of the outbox, the columns `explain` prints (the payload's document ids are read
-- from `payload`, which holds the same masks the documents' number_mask shows). Roles are cluster-wide,
-- as in 004; grants are per database and repeatable.
do $$
begin
  create role expiry_reminder_support login;
exception when duplicate_object or unique_violation then null;
end $$;

grant usage on schema profile to expiry_reminder_support;

grant select (id, owner_user_id, type, number_mask, expires_at, status, is_deleted)
  on profile.person_documents to expiry_reminder_support;
grant select (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at, queued_by)
  on profile.document_expiry_reminders to expiry_reminder_support;
grant select (cutoff) on profile.document_expiry_reminder_prune_cutoff to expiry_reminder_support;
grant select (id, message_key, correlation_id, created_at, published_at, attempts, retries, parked_at, last_error,
              published_partition, published_offset, payload)
  on profile.outbox_messages to expiry_reminder_support;
