-- Issue 48. An insert-only outbox the relay publishes without writing a row version per message
-- (bench/RELAY-PATHS.md, path A; bench/REPORT.md, "Issue 48, first measurement").
--
-- Each event is stamped with the id of the transaction that wrote it (`xid`, the writer's first write takes
-- it: since 024 a claim transaction takes its owners' locks before that, so two transactions writing one
-- owner's events get ids in the order they commit). Events are split into 8 lanes by a hash of their key; a
-- relay loop holds a lane (a transaction-level advisory try-lock) and reads it in (xid, id) order from the
-- lane's cursor, below the oldest transaction still running (`pg_snapshot_xmin`): a transaction below that
-- horizon has ended, so no event can appear behind the cursor later. One cursor update and one delivery row
-- per partition a batch is what a publish writes; the events are never updated.
--
-- Nothing writes these tables yet: the worker keeps writing `profile.outbox_messages` and today's relay keeps
-- publishing it until the relay's lane loop and its drain of the old table land (docs/DESIGN.md, "The relay's
-- next outbox"). The migration creates new, empty tables only: it locks nothing that exists, and runs in
-- milliseconds whatever the size of the old outbox.

create table if not exists profile.outbox_events (
  id uuid primary key,
  -- Never `add column … default pg_current_xact_id()` on a live table: that rewrites it, under an exclusive
  -- lock, and stamps every old row with the migration's own id.
  xid xid8 not null default pg_current_xact_id(),
  aggregate_type varchar(64) not null,
  aggregate_id uuid not null,
  topic varchar(255) not null,
  message_key varchar(255) not null,
  event_type varchar(128) not null,
  contract_version int not null,
  payload jsonb not null,
  correlation_id varchar(128) not null,
  trace_context text null,
  created_at timestamptz not null default clock_timestamp()
);

-- A lane's events in publishing order. The expression is the lane rule: `src/db/outbox-events.ts` (LANE_SQL)
-- writes it the same way, so the planner matches it to this index.
create index if not exists ix_outbox_events_lane
  on profile.outbox_events (((hashtextextended(message_key, 0) & 7)::int), xid, id);
-- One key's events in commit order: `explain`, and the release of a held key.
create index if not exists ix_outbox_events_key on profile.outbox_events (message_key, xid, id);

-- Where each lane's relay got to: the last event it published (or held), in (xid, id) order. Updated once a
-- batch, on a page of its own (fillfactor 50, 8 rows), so each update stays on its page (HOT).
create table if not exists profile.outbox_lanes (
  lane int primary key check (lane between 0 and 7),
  xid xid8 not null default '0',
  id uuid not null default '00000000-0000-0000-0000-000000000000',
  moved_at timestamptz null
) with (fillfactor = 50);
insert into profile.outbox_lanes (lane) select generate_series(0, 7) on conflict (lane) do nothing;

-- Where a batch went: per partition, the offset of its first message and the event ids in the order they
-- were appended, so event i of `ids` sits at base_offset + i - 1. `lane`, `last_xid` and `last_id` say which
-- part of the lane the batch covered (its last event), for `explain` and the cleanup.
create table if not exists profile.outbox_deliveries (
  lane int not null,
  last_xid xid8 not null,
  last_id uuid not null,
  topic varchar(255) not null,
  partition int not null,
  base_offset bigint not null,
  ids uuid[] not null,
  published_at timestamptz not null default now()
);
create index if not exists ix_outbox_deliveries_lane on profile.outbox_deliveries (lane, last_xid, last_id);
create index if not exists ix_outbox_deliveries_published on profile.outbox_deliveries (published_at);

-- Keys whose events wait: an event Kafka refused (`refused`; parked after RELAY_MAX_ATTEMPTS refusals, until
-- `outbox retry`), or older rows of the key still unpublished in `profile.outbox_messages` (`legacy`, during
-- the deploy that moves the relay to this table). The lane's cursor moves on past a held key's events; they
-- are published, from `xid`/`id` on, when the key is released, before the lane reads further.
create table if not exists profile.outbox_held (
  message_key varchar(255) primary key,
  lane int not null,
  reason text not null check (reason in ('refused', 'legacy')),
  -- The first event of the key not published yet.
  xid xid8 not null,
  id uuid not null,
  rejections int not null default 0,
  attempts int not null default 0,
  last_error text null,
  held_at timestamptz not null default now(),
  -- When the relay sends the key's events again (a refusal backs off, as a failed batch does).
  retry_at timestamptz not null default now(),
  parked_at timestamptz null,
  retries int not null default 0,
  last_retried_at timestamptz null
);
create index if not exists ix_outbox_held_lane on profile.outbox_held (lane);

-- Wake the relays when events arrive, as for the old table (009's function: one notification a statement
-- that inserted rows, delivered at commit).
drop trigger if exists outbox_events_notify on profile.outbox_events;
create trigger outbox_events_notify
  after insert on profile.outbox_events
  referencing new table as inserted_rows
  for each statement execute function profile.outbox_messages_notify();

-- Least privilege. The worker inserts events and reads nothing. The relay reads and deletes events (cleanup)
-- and never updates them; it moves the cursors, writes deliveries and holds. No cluster privilege: the
-- horizon is `pg_current_snapshot()`, which any session may call. Support reads what `explain` prints.
grant insert on profile.outbox_events to expiry_reminder_worker;
grant select, delete on profile.outbox_events to outbox_relay;
grant select, update on profile.outbox_lanes to outbox_relay;
grant select, insert, delete on profile.outbox_deliveries to outbox_relay;
grant select, insert, update, delete on profile.outbox_held to outbox_relay;
grant select (id, xid, message_key, correlation_id, created_at, payload) on profile.outbox_events
  to expiry_reminder_support;
grant select on profile.outbox_lanes, profile.outbox_deliveries, profile.outbox_held to expiry_reminder_support;
