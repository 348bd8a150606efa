-- The dedupe ledger: one row means "for (document, threshold) a reminder has been sent".
create table if not exists profile.document_expiry_reminders (
  id uuid primary key,
  document_id uuid not null,
  owner_user_id uuid not null,
  type varchar(32) not null,
  threshold_days int not null,
  expires_at date not null,
  reminded_at timestamptz not null
);

create unique index if not exists ux_document_expiry_reminders_dedupe
  on profile.document_expiry_reminders (document_id, threshold_days);
create index if not exists ix_document_expiry_reminders_owner
  on profile.document_expiry_reminders (owner_user_id);
create index if not exists ix_document_expiry_reminders_expires_at
  on profile.document_expiry_reminders (expires_at);
