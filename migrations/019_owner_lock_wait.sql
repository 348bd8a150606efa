-- Issue 36 (the steady day's +8 %). A page's second try waits for the owners another transaction holds,
-- each lock at most what is left of one budget, and an owner still held then stays unlocked while the
-- locks taken before it are kept. From the worker that took one savepoint, one lock_timeout, one lock and
-- one release per owner: four round trips each, 0.1 s of a steady day's 1 s (bench/REPORT.md). Here it is
-- one statement: each lock in its own block (a subtransaction inside the server), so lock_timeout giving up
-- on one owner loses only that one. The keys are taken in the order given (the caller sorts them): two
-- second tries that wait this way cannot deadlock. Past the budget the rest are taken only if free.
create or replace function profile.wait_for_xact_locks(lock_keys bigint[], wait_ms integer)
returns setof bigint
language plpgsql volatile
as $$
declare
  deadline constant timestamptz := clock_timestamp() + make_interval(secs => wait_ms / 1000.0);
  previous_timeout constant text := current_setting('lock_timeout');
  lock_key bigint;
  left_ms integer;
begin
  foreach lock_key in array lock_keys loop
    left_ms := floor(extract(epoch from deadline - clock_timestamp()) * 1000);
    if left_ms >= 1 then
      begin
        perform set_config('lock_timeout', left_ms || 'ms', true);
        perform pg_advisory_xact_lock(lock_key);
        return next lock_key;
      exception when lock_not_available then
        null;
      end;
    elsif pg_try_advisory_xact_lock(lock_key) then
      return next lock_key;
    end if;
  end loop;
  perform set_config('lock_timeout', previous_timeout, true);
end $$;
