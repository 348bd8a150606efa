\c today
\set QUIET on
set enable_seqscan = off;
checkpoint;
select '00000000-0000-0000-0000-000000000000' as cur \gset
select pg_current_wal_lsn() as w0, clock_timestamp() as t0 \gset
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select id as cur from (select id, payload::text from profile.outbox_messages where id > :'cur' order by id limit 1000) s order by id desc limit 1 \gset
update profile.outbox_lane_cursors set id = :'cur', acked_at = now() where lane = 0;
select 'B cursor: read 1000 + one cursor update', pg_current_wal_lsn() - :'w0'::pg_lsn as wal_bytes, round((pg_current_wal_lsn() - :'w0'::pg_lsn) / 20000.0) as wal_bytes_per_row, round(extract(epoch from clock_timestamp() - :'t0'::timestamptz) * 1e6 / 20000) as us_per_row_wall;
checkpoint;
select pg_current_wal_lsn() as w0, clock_timestamp() as t0 \gset
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
begin; select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000 for update \g /dev/null
update profile.outbox_messages o set published_at = now(), attempts = o.attempts + 1, last_error = null, published_partition = 1, published_offset = 42 from (select id from profile.outbox_messages where published_at is null and parked_at is null order by created_at, id limit 1000) b where o.id = b.id; commit;
select 'A today: lock + update (published_at, placement)', pg_current_wal_lsn() - :'w0'::pg_lsn as wal_bytes, round((pg_current_wal_lsn() - :'w0'::pg_lsn) / 20000.0) as wal_bytes_per_row, round(extract(epoch from clock_timestamp() - :'t0'::timestamptz) * 1e6 / 20000) as us_per_row_wall;
checkpoint;
select pg_current_wal_lsn() as w0, clock_timestamp() as t0 \gset
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
begin; select id from profile.outbox_pending order by created_at, id limit 1000 for update \g /dev/null
delete from profile.outbox_pending p using (select id from profile.outbox_pending order by created_at, id limit 1000) b where p.id = b.id; commit;
select 'C narrow queue: lock + delete', pg_current_wal_lsn() - :'w0'::pg_lsn as wal_bytes, round((pg_current_wal_lsn() - :'w0'::pg_lsn) / 20000.0) as wal_bytes_per_row, round(extract(epoch from clock_timestamp() - :'t0'::timestamptz) * 1e6 / 20000) as us_per_row_wall;
select 'cursor table after 20 acks: n_tup_upd, n_tup_hot_upd', n_tup_upd, n_tup_hot_upd from pg_stat_user_tables where relname = 'outbox_lane_cursors';
select 'outbox after A: heap pages, dead tuples', pg_relation_size('profile.outbox_messages')/8192, n_dead_tup from pg_stat_user_tables where relname = 'outbox_messages';
