/**
 * `explain`'s reads: one owner's documents (never `payload_cipher`), their markers, and the owner's outbox
 * rows. Each is one statement; `explain` runs them in one read-only snapshot.
 */
import type { ExplainedDocumentInput, ExplainedMarker } from '../domain/explain';
import type { Queryable } from './pool';

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

/** The owner's markers, by document. */
export async function selectOwnerMarkers(db: Queryable, ownerUserId: string): Promise<Map<string, ExplainedMarker[]>> {
  const { rows } = await db.query<ExplainedMarker & { documentId: string }>(
    `select document_id as "documentId", threshold_days as "thresholdDays",
            to_char(reminded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as "remindedAt",
            queued_by as "queuedBy"
       from profile.document_expiry_reminders
      where owner_user_id = $1
      order by document_id, threshold_days desc`,
    [ownerUserId],
  );
  const byDocument = new Map<string, ExplainedMarker[]>();
  for (const { documentId, ...marker } of rows) {
    byDocument.set(documentId, [...(byDocument.get(documentId) ?? []), marker]);
  }
  return byDocument;
}

/** One of the owner's events in the outbox (the relay's role reads it; the payload's document ids only). */
export interface OwnerEvent {
  eventId: string;
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

/** The owner's outbox rows (its key), oldest first: those not yet deleted past OUTBOX_RETENTION. */
export async function selectOwnerEvents(db: Queryable, ownerUserId: string): Promise<OwnerEvent[]> {
  const { rows } = await db.query<OwnerEvent>(
    `select id as "eventId", correlation_id as "correlationId",
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
       from profile.outbox_messages
      where message_key = $1
      order by created_at, id`,
    [ownerUserId],
  );
  return rows;
}
