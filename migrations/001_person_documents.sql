-- profile.person_documents belongs to the profile service; this creates it for local runs and tests.
-- Where the profile service already created it, IF NOT EXISTS leaves it alone.
create schema if not exists profile;

create table if not exists profile.person_documents (
  id uuid primary key,
  owner_user_id uuid not null,
  person_id uuid not null,
  type varchar(32) not null,
  number_mask varchar(64) not null,
  expires_at date null,
  status varchar(16) not null,
  is_deleted boolean not null default false,
  payload_cipher bytea not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index if not exists ix_person_documents_expires_at
  on profile.person_documents (expires_at, id) where expires_at is not null;

-- The owner transaction reads one investor's documents; the profile service lists documents by owner
-- and is expected to have this index already.
create index if not exists ix_person_documents_owner_user_id
  on profile.person_documents (owner_user_id);
