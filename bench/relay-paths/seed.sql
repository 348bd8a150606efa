\c today
truncate profile.outbox_messages, profile.outbox_pending;
insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id, trace_context)
with o as (select n, gen_random_uuid() as owner from generate_series(1, 20000) as n)
select uuidv7(), 'Profile', o.owner, 'pin.profile.document-expiry-reminders.v1', o.owner::text, 'DocumentExpiryReminderKafkaEvent', 1,
  jsonb_build_object('ownerUserId', o.owner::text, 'remindedAt', now()::text,
    'documents', (select jsonb_agg(jsonb_build_object('documentId', gen_random_uuid(), 'type', 'Passport',
        'numberMask', '**** ' || lpad(((o.n * 7 + d) % 10000)::text, 4, '0'), 'expiresAt', (current_date + 7)::text,
        'thresholdDays', 7, 'daysLeft', 7)) from generate_series(1, case when o.n % 3 = 0 then 2 else 1 end) as d)),
  'bench', '00-' || md5(o.owner::text) || '-' || left(md5(o.n::text), 16) || '-01'
from o;
insert into profile.outbox_pending select id, message_key, created_at from profile.outbox_messages;
vacuum analyze profile.outbox_messages; vacuum analyze profile.outbox_pending;
checkpoint;
