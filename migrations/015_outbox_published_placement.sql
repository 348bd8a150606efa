-- Issue 30. Where each event went: the Kafka partition and offset the relay's acknowledgement gave for the
-- row, set when it is marked published (the offset is the base offset of its partition's batch plus its place
-- in it). Consumers and support find the message by them (`explain`). Additive and nullable: rows published
-- before, and by an older relay, have none; the roles' table-level grants of 004 cover the columns.
alter table profile.outbox_messages add column if not exists published_partition int null;
alter table profile.outbox_messages add column if not exists published_offset bigint null;
