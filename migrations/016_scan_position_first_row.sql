-- Issue 36. Where each recorded page starts: its first row's (expires_at, id), beside its end. A retry reads
-- a recorded page again between these two keys, so its work is bounded by the page, not by every
-- in-window document below it (a partition's first page starts at the window's lower bound, and the
-- documents between that bound and the page's first due row, reminded on earlier days, can be millions).
-- Null on rows recorded before this migration: such a page is read from the end of the page before it.
alter table profile.document_expiry_reminder_scan_positions
  add column if not exists first_expires_at date,
  add column if not exists first_document_id uuid;
