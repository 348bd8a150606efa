/**
 * What the worker needs of the database, checked at start: a mis-migrated schema fails fast with a
 * message instead of failing every owner, and a missing dedupe index (which would let reminders repeat
 * silently) is refused outright.
 */
import type { Queryable } from './pool';

const READ_COLUMNS: Record<string, string> = {
  person_documents: 'id, owner_user_id, type, number_mask, expires_at, status, is_deleted',
  document_expiry_reminders: 'id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at, queued_by',
  document_expiry_reminder_prune_cutoff: 'singleton, cutoff, updated_at',
  document_expiry_reminder_scan_positions: 'cycle_id, page, job_run_id, expires_at, document_id, attempt, created_at',
};

const OUTBOX_COLUMNS = [
  'id',
  'aggregate_type',
  'aggregate_id',
  'topic',
  'message_key',
  'event_type',
  'contract_version',
  'payload',
  'correlation_id',
  'trace_context',
];

/** Problems with the schema as the worker's role sees it; empty when the worker can run. */
export async function workerSchemaProblems(db: Queryable): Promise<string[]> {
  const problems: string[] = [];
  for (const [table, columns] of Object.entries(READ_COLUMNS)) {
    try {
      await db.query(`select ${columns} from profile.${table} limit 0`);
    } catch (err) {
      problems.push(`profile.${table}: ${(err as Error).message}`);
    }
  }
  const { rows: outbox } = await db.query<{ column_name: string }>(
    `select column_name from information_schema.columns where table_schema = 'profile' and table_name = 'outbox_messages'`,
  );
  const present = new Set(outbox.map((r) => r.column_name));
  const missing = OUTBOX_COLUMNS.filter((c) => !present.has(c));
  if (missing.length > 0)
    problems.push(`profile.outbox_messages: missing or not writable columns ${missing.join(', ')}`);
  const { rows: index } = await db.query<{ indexdef: string }>(
    `select indexdef from pg_indexes where schemaname = 'profile' and indexname = 'ux_document_expiry_reminders_dedupe'`,
  );
  if (!index[0] || !/UNIQUE INDEX .*\(document_id, threshold_days\)/.test(index[0].indexdef)) {
    problems.push(
      'profile.document_expiry_reminders: the unique index ux_document_expiry_reminders_dedupe (document_id, threshold_days) is missing; without it reminders could repeat',
    );
  }
  return problems;
}

/** Every column of the outbox the relay reads or writes, migration 009's parking columns included. */
const RELAY_COLUMNS =
  'id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload, correlation_id, ' +
  'created_at, published_at, attempts, last_error, trace_context, parked_at, rejections';

/**
 * Problems with the outbox as the relay's role sees it; empty when the relay can run. A relay started before
 * its migration would otherwise fail every batch with "column does not exist" and back off forever.
 */
export async function relaySchemaProblems(db: Queryable): Promise<string[]> {
  try {
    await db.query(`select ${RELAY_COLUMNS} from profile.outbox_messages limit 0`);
    return [];
  } catch (err) {
    return [`profile.outbox_messages: ${(err as Error).message}`];
  }
}
