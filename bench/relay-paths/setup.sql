create database exp;
\c exp
create schema profile;
create table profile.outbox_messages (
  id uuid primary key default uuidv7(),
  message_key varchar(255) not null,
  topic varchar(255) not null default 't',
  payload jsonb not null,
  created_at timestamptz not null default clock_timestamp(),
  published_at timestamptz null
);
create publication outbox_pub for table profile.outbox_messages with (publish = 'insert');
select * from pg_create_logical_replication_slot('outbox_relay_slot', 'pgoutput');
insert into profile.outbox_messages (message_key, payload) values ('k1', '{"a":1}'), ('k2', '{"a":2}');
begin; insert into profile.outbox_messages (message_key, payload) values ('k1', '{"a":3}'); commit;
update profile.outbox_messages set published_at = now() where message_key = 'k2';
delete from profile.outbox_messages where message_key = 'k2';
select lsn, xid, length(data) as bytes, get_byte(data,0)::int as msgtype_byte, chr(get_byte(data,0)) as msgtype
  from pg_logical_slot_peek_binary_changes('outbox_relay_slot', null, null, 'proto_version', '1', 'publication_names', 'outbox_pub');
select slot_name, plugin, slot_type, database, active, restart_lsn, confirmed_flush_lsn from pg_replication_slots;
