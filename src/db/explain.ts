/**
 * `explain`'s reads: one owner's documents (never `payload_cipher`), their markers, and the owner's outbox
 * rows. Each is one statement; `explain` runs them in one read-only snapshot.
 */
import type { ExplainedDocumentInput, ExplainedMarker } from '../domain/explain';
import type { Queryable } from './pool';
import { laneSql } from './lane-sql';

/** The owner of a document, or undefined when there is no such document. */
export async function selectDocumentOwner(db: Queryable, documentId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ owner: string }>(
    'select owner_user_id as owner from profile.person_documents where id = $1',
    [documentId],
  );
  return rows[0]?.owner;
}

/** The owner's documents, soonest expiry first (those without one last). */
export async function selectOwnerDocuments(db: Queryable, ownerUserId: string): Promise<ExplainedDocumentInput[]> {
  const { rows } = await db.query<ExplainedDocumentInput>(
    `select id as "documentId", type, number_mask as "numberMask", status, is_deleted as "isDeleted",
            expires_at as "expiresAt"
       from profile.person_documents
      where owner_user_id = $1
      order by expires_at nulls last, id`,
    [ownerUserId],
  );
  return rows;
}

/**
 * The markers of the owner's documents, by document, whoever they were written for: a document that changed
 * owner keeps its markers (the scan's due rule reads them by document), written for the owner of that day.
 */
export async function selectMarkersOfOwnerDocuments(
  db: Queryable,
  ownerUserId: string,
): Promise<Map<string, ExplainedMarker[]>> {
  const { rows } = await db.query<
    Omit<ExplainedMarker, 'previousOwnerUserId'> & { documentId: string; writtenFor: string }
  >(
    `select r.document_id as "documentId", r.threshold_days as "thresholdDays",
            to_char(r.reminded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as "remindedAt",
            r.queued_by as "queuedBy", r.owner_user_id as "writtenFor"
       from profile.person_documents d
       join profile.document_expiry_reminders r on r.document_id = d.id
      where d.owner_user_id = $1
      order by r.document_id, r.threshold_days desc`,
    [ownerUserId],
  );
  const byDocument = new Map<string, ExplainedMarker[]>();
  for (const { documentId, writtenFor, ...marker } of rows) {
    const m: ExplainedMarker = writtenFor === ownerUserId ? marker : { ...marker, previousOwnerUserId: writtenFor };
    byDocument.set(documentId, [...(byDocument.get(documentId) ?? []), m]);
  }
  return byDocument;
}

/** One of the owner's events in the outbox (the payload's document ids only). */
export interface OwnerEvent {
  eventId: string;
  /** The owner it was sent to (its Kafka key): the document's owner of that day. */
  messageKey: string;
  /** The cycle that wrote it (its workflow id). */
  correlationId: string;
  createdAt: string;
  publishedAt: string | null;
  attempts: number;
  retries: number;
  parkedAt: string | null;
  lastError: string | null;
  /** Where Kafka appended it (a consumer finds it there); null until published, and for older rows. */
  kafka: { partition: number; offset: string } | null;
  /** The documents it reminded of, with the threshold of each. */
  documents: { documentId: string; thresholdDays: number }[];
}

/**
 * The outbox rows keyed by `ownerUserIds`, oldest first: those not yet deleted past OUTBOX_RETENTION. The
 * published ones read through `ix_outbox_messages_key` (migration 017), the others through
 * `ix_outbox_messages_unpublished_key` (006): an owner's rows, never the table. Events of the insert-only
 * outbox (025) through `ix_outbox_events_key`, each with the first delivery that holds it (partition, offset,
 * when) and its key's hold when it is the held event (parked, last error, tries).
 */
export async function selectOwnerEvents(db: Queryable, ownerUserIds: readonly string[]): Promise<OwnerEvent[]> {
  const { rows } = await db.query<OwnerEvent>(
    `select id as "eventId", message_key as "messageKey", correlation_id as "correlationId",
            to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "createdAt",
            to_char(published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "publishedAt",
            attempts, retries,
            to_char(parked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "parkedAt",
            last_error as "lastError",
            case when published_partition is not null
                 then jsonb_build_object('partition', published_partition, 'offset', published_offset::text)
            end as kafka,
            coalesce((select jsonb_agg(jsonb_build_object('documentId', d->>'documentId',
                                                           'thresholdDays', (d->>'thresholdDays')::int))
                        from jsonb_array_elements(payload->'documents') d), '[]') as documents
       from (select id, message_key, correlation_id, created_at, published_at, attempts, retries, parked_at,
                    last_error, published_partition, published_offset, payload
               from profile.outbox_messages
              where message_key = any($1::varchar[]) and published_at is not null
             union all
             select id, message_key, correlation_id, created_at, published_at, attempts, retries, parked_at,
                    last_error, published_partition, published_offset, payload
               from profile.outbox_messages
              where message_key = any($1::varchar[]) and published_at is null
             union all
             select e.id, e.message_key, e.correlation_id, e.created_at, d.published_at,
                    greatest(case when d.published_at is not null then 1 else 0 end, coalesce(h.attempts, 0)),
                    coalesce(h.retries, 0), h.parked_at, h.last_error, d.partition, d.kafka_offset, e.payload
               from profile.outbox_events e
               left join profile.outbox_held h on h.id = e.id
               left join lateral (
                 select dd.published_at, dd.partition, dd.base_offset + array_position(dd.ids, e.id) - 1 as kafka_offset
                   from profile.outbox_deliveries dd
                  where dd.lane = ${laneSql('e.message_key')}
                    and (dd.last_xid, dd.last_id) >= (e.xid, e.id) and e.id = any(dd.ids)
                  order by dd.last_xid, dd.last_id limit 1) d on true
              where e.message_key = any($1::varchar[])) owner_rows
      order by created_at, id`,
    [ownerUserIds],
  );
  return rows;
}
