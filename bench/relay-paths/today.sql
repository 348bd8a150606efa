create database today;
\c today
create schema profile;
-- today's outbox: 003 + 007 + 009 + 013 + 014 + 015, indexes of 006, 009, 010, 012, 017
create table profile.outbox_messages (
  id uuid primary key, aggregate_type varchar(64) not null, aggregate_id uuid not null, topic varchar(255) not null,
  message_key varchar(255) not null, event_type varchar(128) not null, contract_version int not null, payload jsonb not null,
  correlation_id varchar(128) not null, created_at timestamptz not null default clock_timestamp(), published_at timestamptz null,
  attempts int not null default 0, last_error text null, trace_context varchar(128) null, parked_at timestamptz null,
  rejections int not null default 0, retries int not null default 0, last_retried_at timestamptz null,
  published_partition int null, published_offset bigint null);
create index ix_outbox_messages_unpublished_key on profile.outbox_messages (message_key, created_at, id) where published_at is null;
create index ix_outbox_messages_parked on profile.outbox_messages (message_key) where published_at is null and parked_at is not null;
create index ix_outbox_messages_claimable on profile.outbox_messages (created_at, id) where published_at is null and parked_at is null;
create index ix_outbox_messages_published on profile.outbox_messages (published_at) where published_at is not null;
create index ix_outbox_messages_key on profile.outbox_messages (message_key, created_at, id) where published_at is not null;
-- a narrow queue (candidate C) and a cursor table (candidate A)
create table profile.outbox_pending (id uuid primary key, message_key varchar(255) not null, created_at timestamptz not null);
create index on profile.outbox_pending (created_at, id);
create index on profile.outbox_pending (message_key, created_at, id);
create table profile.outbox_lane_cursors (lane int primary key, xid xid8 not null default '0', id uuid not null default '00000000-0000-0000-0000-000000000000', acked_at timestamptz);
insert into profile.outbox_lane_cursors (lane) values (0);
