-- Issue 38. `explain` reads one owner's outbox rows (`message_key = $1`, oldest first), published or not.
-- Only the unpublished ones had an index on the key (006); published rows, a week of them
-- (OUTBOX_RETENTION), were found by reading the whole table on every `explain`. This index holds the
-- published rows by key, in the order `explain` lists them; with 006's index of the unpublished ones,
-- `explain` reads one owner's rows (bench/REPORT.md, "explain"). Partial, on published rows only: an index of
-- every row by key was also chosen by the relay's per-key order check, which looks for unpublished rows
-- only and would then walk an owner's published week in it (relay-claim-plan pins that plan). It costs the
-- relay's publish one more index entry per row. Plain CREATE INDEX inside the migration's transaction, as
-- 010 and 012: the build blocks outbox writes for its duration (about a second per million rows here);
-- they wait, they do not fail.
create index if not exists ix_outbox_messages_key
  on profile.outbox_messages (message_key, created_at, id)
  where published_at is not null;
