-- Issue 19. The relay deletes rows published before OUTBOX_RETENTION (7 days) every RELAY_CLEANUP_INTERVAL
-- (10 minutes), 5,000 at a time, until a statement deletes none. No index had published_at, so every such
-- statement read the whole table, a week of rows: one pass was at least two sequential scans of it, and a
-- pass that found nothing to delete still read it all. This index holds the published rows only (the claim's
-- indexes hold the unpublished ones), so a pass reads the rows past the retention and stops.
-- Plain CREATE INDEX inside the migration's transaction, as 010: the build blocks the owner transactions'
-- outbox inserts for its duration (about a second per million rows here); they wait, they do not fail.
create index if not exists ix_outbox_messages_published
  on profile.outbox_messages (published_at) where published_at is not null;
