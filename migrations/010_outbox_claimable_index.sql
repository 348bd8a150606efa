-- Issue 12. The claim's order index covered every unpublished row, parked ones included, so the planner
-- could also use it for the claim's per-key order check: with statistics taken while the outbox was nearly
-- empty (the usual state of a queue) it scanned every unpublished row for each row of the batch, 12.7 s a
-- claim late in a 500,000-event cycle. The order index now holds exactly the claimable rows (unpublished,
-- not parked), which the order check's condition does not imply, so only the key index can serve it.
-- Plain CREATE INDEX inside the migration's transaction: the outbox holds unpublished rows and published
-- ones for OUTBOX_RETENTION, and the build blocks the owner transactions' inserts for its duration (well
-- under a second per 100,000 rows); they wait, they do not fail.
create index if not exists ix_outbox_messages_claimable
  on profile.outbox_messages (created_at, id) where published_at is null and parked_at is null;
drop index if exists profile.ix_outbox_messages_unpublished;
