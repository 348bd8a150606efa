-- Transactional outbox; the relay publishes unpublished rows to Kafka.
create table if not exists profile.outbox_messages (
  id uuid primary key,
  aggregate_type varchar(64) not null,
  aggregate_id uuid not null,
  topic varchar(255) not null,
  message_key varchar(255) not null,
  event_type varchar(128) not null,
  contract_version int not null,
  payload jsonb not null,
  correlation_id varchar(128) not null,
  created_at timestamptz not null default now(),
  published_at timestamptz null,
  attempts int not null default 0,
  last_error text null
);

create index if not exists ix_outbox_messages_unpublished
  on profile.outbox_messages (created_at, id) where published_at is null;
