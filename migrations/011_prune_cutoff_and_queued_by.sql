-- Issue 19. The highest prune cutoff the ledger has applied. The prune deletes the markers of documents
-- that expired before AsOfDate − RetentionDays; a later run with an earlier AsOf (a backfill, a manual
-- `cycle run --as-of`) or a longer retention would otherwise see those documents in its window with no
-- markers, and remind their owners again. Every "due" predicate's lower bound is
-- greatest(AsOfDate − RetentionDays, cutoff). One row (`singleton`), raised in the prune's transaction,
-- never lowered.
create table if not exists profile.document_expiry_reminder_prune_cutoff (
  singleton boolean primary key default true check (singleton),
  cutoff date not null,
  updated_at timestamptz not null default now()
);

grant select, insert, update on profile.document_expiry_reminder_prune_cutoff to expiry_reminder_worker;

-- Which activity's transaction inserted a marker (`<workflow run id>/<activity id>`). A worker killed
-- between its group's commit and its report leaves the retry nothing to claim; the retry reads back what
-- an earlier attempt of the same activity queued, so the cycle's counts equal its outbox rows.
alter table profile.document_expiry_reminders add column if not exists queued_by text;
