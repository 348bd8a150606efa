-- Where each running cycle's candidate scan stands: the last (expires_at, id) of each page it read. The
-- position is a document's expiry date, a document value, so it stays here instead of in Temporal
-- history; the workflow only carries page numbers. `cycle_id` is the first run id of the cycle's chain
-- of runs (stable across continue-as-new, unique even when a workflow id is reused).
create table if not exists profile.document_expiry_reminder_scan_positions (
  cycle_id uuid not null,
  page int not null,
  job_run_id varchar(128) not null,
  expires_at date not null,
  document_id uuid not null,
  attempt int not null,
  created_at timestamptz not null default now(),
  primary key (cycle_id, page)
);

create index if not exists ix_document_expiry_reminder_scan_positions_created_at
  on profile.document_expiry_reminder_scan_positions (created_at);

grant select, insert, update, delete on profile.document_expiry_reminder_scan_positions to expiry_reminder_worker;
