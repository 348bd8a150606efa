-- Issue 28. The relay publishes a key's rows in (created_at, id) order and keeps one row of a key in flight.
-- created_at defaulted to now(), the start of the inserting transaction: an owner transaction that began
-- before another one of the same owner but took the owner's lock after that one committed inserted a row
-- that sorted before the committed one, and a second relay could claim it while the first relay held the
-- other: two rows of one key in flight, delivered out of commit order. The job's claim now writes
-- clock_timestamp() itself, under the owner lock (src/db/reminders.ts); the default follows, so that any
-- writer of the table that inserts under a per-key lock gets the same order. Existing rows keep their
-- created_at, and with it their order. A metadata change: no rewrite, no scan.
alter table profile.outbox_messages alter column created_at set default clock_timestamp();
