-- Issue 19. `outbox retry` used to zero `attempts`, so a row retried by an operator looked as if it had never
-- been tried. A retry now keeps `attempts` (every try the relay made, before and after) and counts itself:
-- `retries` (how many times an operator un-parked the row) and `last_retried_at` (when, last). `rejections`
-- still starts again at 0, since it decides when the row is parked again. Additive and defaulted: the
-- worker's inserts and older relays are unaffected, and the roles' table-level grants of 004 cover the new
-- columns (the relay, whose role runs `outbox retry`, selects and updates them; the worker never names them).
alter table profile.outbox_messages add column if not exists retries int not null default 0;
alter table profile.outbox_messages add column if not exists last_retried_at timestamptz null;
