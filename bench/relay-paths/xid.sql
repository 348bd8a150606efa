\c exp
alter table profile.outbox_messages add column xid xid8;            -- nullable, no default: catalog only
alter table profile.outbox_messages alter column xid set default pg_current_xact_id();
create index ix_outbox_lane_xid on profile.outbox_messages ((hashtext(message_key) & 7), xid, id) where xid is not null;
create table profile.claim_attempts (k int primary key, attempt int);
insert into profile.claim_attempts values (1, 1);
create database other;
