-- The relay's per-key order check looks for earlier unpublished rows of the same key.
create index if not exists ix_outbox_messages_unpublished_key
  on profile.outbox_messages (message_key, created_at, id) where published_at is null;
