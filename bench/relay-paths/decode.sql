\timing on
select 'pgoutput: messages, inserts', count(*), count(*) filter (where get_byte(data,0) = 73) from pg_logical_slot_peek_binary_changes('m', null, null, 'proto_version', '1', 'publication_names', 'outbox_pub');
select 'pgoutput again (warm)', count(*) from pg_logical_slot_peek_binary_changes('m', null, null, 'proto_version', '1', 'publication_names', 'outbox_pub');
select 'cursor read of the same 20k rows, payload as text', count(*), sum(length(payload::text)) from (select id, xid, payload from profile.outbox_messages where xid > '0' and xid < pg_snapshot_xmin(pg_current_snapshot()) order by xid, id) s;
