/** Outbox rows shaped like the cycle's events: one per investor, one or two documents each, in one statement. */
import type pg from 'pg';
import type { Queryable } from '../../../src/db/pool';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../../src/domain/names';

/**
 * Inserts `rows` unpublished outbox rows (every third one with two documents, like a backlog day) with a
 * traceparent, as the owner transaction writes them (ids time-ordered, migration 020), in one statement and so
 * one commit and one NOTIFY.
 * @returns the seconds the insert took.
 */
export async function seedOutbox(
  admin: pg.Pool,
  rows: number,
  correlationId: string,
  table: 'outbox_messages' | 'outbox_events' = 'outbox_messages',
): Promise<number> {
  const t0 = performance.now();
  await admin.query(
    `insert into profile.${table}
            (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
             correlation_id, trace_context)
     with o as (select n, gen_random_uuid() as owner from generate_series(1, $1::int) as n)
     select profile.time_ordered_uuid(), $2, o.owner, $3, o.owner::text, $4, $5,
            jsonb_build_object(
              'ownerUserId', o.owner::text,
              'remindedAt', now()::text,
              'documents', (select jsonb_agg(jsonb_build_object(
                                'documentId', gen_random_uuid(),
                                'type', case when d = 1 then 'Passport' else 'DriverLicense' end,
                                'numberMask', '**** ' || lpad(((o.n * 7 + d) % 10000)::text, 4, '0'),
                                'expiresAt', (current_date + 7)::text,
                                'thresholdDays', 7,
                                'daysLeft', 7))
                              from generate_series(1, case when o.n % 3 = 0 then 2 else 1 end) as d)),
            $6, '00-' || md5(o.owner::text) || '-' || left(md5(o.n::text), 16) || '-01'
       from o`,
    [rows, AGGREGATE_TYPE, TOPIC, EVENT_TYPE, CONTRACT_VERSION, correlationId],
  );
  return (performance.now() - t0) / 1000;
}

/** Rows not published yet, of the old outbox and of the insert-only one (`profile.outbox_events_pending`). */
export async function unpublishedCount(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select ((select count(*) from profile.outbox_messages where published_at is null)
          + (select count(*) from profile.outbox_events_pending))::int as n`,
  );
  return rows[0].n;
}
