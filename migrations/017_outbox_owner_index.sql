-- Issue 38. `explain` reads one owner's outbox rows (`message_key = $1`, oldest first), published or not.
-- Only the unpublished ones had an index on the key (006); published rows, a week of them
-- (OUTBOX_RETENTION), were found by reading the whole table on every `explain`. This index holds every
-- row by key, in the order `explain` lists them, so it reads one owner's rows (bench/REPORT.md, "explain").
-- It costs each outbox insert one more index entry; 006's partial index stays for the relay's per-key order
-- check, whose plans this does not change. Plain CREATE INDEX inside the migration's transaction, as 010
-- and 012: the build blocks the owner transactions' outbox inserts for its duration (about a second per
-- million rows here); they wait, they do not fail.
create index if not exists ix_outbox_messages_key
  on profile.outbox_messages (message_key, created_at, id);
