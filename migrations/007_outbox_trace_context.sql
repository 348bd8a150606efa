-- W3C traceparent of the owner transaction that wrote the row, so the relay's publish span joins the
-- cycle's trace. Nullable and additive: consumers of the table are unaffected.
alter table profile.outbox_messages add column if not exists trace_context varchar(128) null;
