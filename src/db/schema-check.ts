/**
 * What the worker needs of the database, checked at start: a mis-migrated schema fails fast with a
 * message instead of failing every owner, and a missing dedupe index (which would let reminders repeat
 * silently) is refused outright.
 */
import type { Queryable } from './pool';
import { errorOf } from '../domain/failures';

/**
 * A column type the job's SQL relies on, by the `information_schema.columns.data_type` names it accepts:
 * ids are compared with `::uuid` parameters, expiries take `date` arithmetic (`expires_at - $date::date`
 * is a whole number of days only for a `date`; a `timestamptz` makes it an interval, and every scan fails),
 * and text columns are compared with and copied into `varchar` columns.
 */
const TYPE_NAMES = {
  uuid: ['uuid'],
  date: ['date'],
  text: ['character varying', 'text'],
  integer: ['integer'],
  bigint: ['bigint'],
  boolean: ['boolean'],
  timestamptz: ['timestamp with time zone'],
  jsonb: ['jsonb'],
  uuidArray: ['ARRAY'],
  xid8: ['xid8'],
} as const satisfies Record<string, readonly string[]>;

type ColumnType = keyof typeof TYPE_NAMES;

/** One table of the contract (migrations 001–021, docs/DESIGN.md#tables), and how a role uses it. */
interface ExpectedTable {
  /** In schema `profile`. */
  table: string;
  /**
   * `read`: the role selects these columns (checked by selecting them, so a missing column grant shows
   * too); `insert`: it may insert but not read them (checked in the catalog).
   */
  access: 'read' | 'insert';
  columns: Readonly<Record<string, ColumnType>>;
}

/** Every column of the outbox with its type; the worker inserts some of them, the relay reads them all. */
const OUTBOX_COLUMNS: Readonly<Record<string, ColumnType>> = {
  id: 'uuid',
  aggregate_type: 'text',
  aggregate_id: 'uuid',
  topic: 'text',
  message_key: 'text',
  event_type: 'text',
  contract_version: 'integer',
  payload: 'jsonb',
  correlation_id: 'text',
  created_at: 'timestamptz',
  published_at: 'timestamptz',
  attempts: 'integer',
  last_error: 'text',
  trace_context: 'text',
  parked_at: 'timestamptz',
  rejections: 'integer',
  published_partition: 'integer',
  published_offset: 'bigint',
};

const OUTBOX_INSERTED = [
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
  'created_at',
];

/** What the worker's SQL relies on: the tables it reads and the outbox columns it writes, with their types. */
const WORKER_TABLES: readonly ExpectedTable[] = [
  {
    table: 'person_documents',
    access: 'read',
    columns: {
      id: 'uuid',
      owner_user_id: 'uuid',
      type: 'text',
      number_mask: 'text',
      expires_at: 'date',
      status: 'text',
      is_deleted: 'boolean',
    },
  },
  {
    table: 'document_expiry_reminders',
    access: 'read',
    columns: {
      id: 'uuid',
      document_id: 'uuid',
      owner_user_id: 'uuid',
      type: 'text',
      threshold_days: 'integer',
      expires_at: 'date',
      reminded_at: 'timestamptz',
      queued_by: 'text',
    },
  },
  {
    table: 'document_expiry_reminder_prune_cutoff',
    access: 'read',
    columns: { singleton: 'boolean', cutoff: 'date', updated_at: 'timestamptz' },
  },
  {
    table: 'document_expiry_reminder_scan_positions',
    access: 'read',
    columns: {
      cycle_id: 'uuid',
      page: 'integer',
      job_run_id: 'text',
      expires_at: 'date',
      document_id: 'uuid',
      attempt: 'integer',
      created_at: 'timestamptz',
      documents: 'integer',
      owners: 'integer',
      later_owner_ids: 'uuidArray',
      queued_by: 'text',
    },
  },
  {
    table: 'document_expiry_reminder_claim_receipts',
    access: 'read',
    columns: {
      cycle_id: 'uuid',
      queued_by: 'text',
      part: 'text',
      attempt: 'integer',
      owners_processed: 'integer',
      owners_notified: 'integer',
      reminders_sent: 'integer',
      markers_inserted: 'integer',
      skipped_already_marked: 'integer',
      owner_ids: 'uuidArray',
      busy_owner_ids: 'uuidArray',
      cleared_owner_ids: 'uuidArray',
      created_at: 'timestamptz',
    },
  },
  {
    table: 'document_expiry_reminder_claim_attempts',
    access: 'read',
    columns: { cycle_id: 'uuid', queued_by: 'text', attempt: 'integer', started_at: 'timestamptz' },
  },
  {
    table: 'outbox_events',
    access: 'insert',
    columns: Object.fromEntries(OUTBOX_INSERTED.map((c) => [c, OUTBOX_COLUMNS[c]])),
  },
];

/**
 * What the relay's SQL relies on: every column of the outbox, migration 009's parking columns included, and the
 * insert-only outbox's tables (migration 025) it publishes from and the view of its unpublished events (026).
 */
const RELAY_TABLES: readonly ExpectedTable[] = [
  { table: 'outbox_messages', access: 'read', columns: OUTBOX_COLUMNS },
  {
    table: 'outbox_events',
    access: 'read',
    columns: {
      ...Object.fromEntries(OUTBOX_INSERTED.map((c) => [c, OUTBOX_COLUMNS[c]])),
      xid: 'xid8',
    },
  },
  { table: 'outbox_lanes', access: 'read', columns: { lane: 'integer', xid: 'xid8', id: 'uuid' } },
  {
    table: 'outbox_held',
    access: 'read',
    columns: {
      message_key: 'text',
      lane: 'integer',
      reason: 'text',
      xid: 'xid8',
      id: 'uuid',
      parked_at: 'timestamptz',
    },
  },
  {
    table: 'outbox_deliveries',
    access: 'read',
    columns: { lane: 'integer', last_xid: 'xid8', last_id: 'uuid', partition: 'integer', base_offset: 'bigint' },
  },
  {
    table: 'outbox_events_pending',
    access: 'read',
    columns: { id: 'uuid', message_key: 'text', xid: 'xid8', created_at: 'timestamptz', held_event: 'boolean' },
  },
];

/**
 * Problems with `tables` as the connected role sees them: a column it cannot read or that is missing,
 * and a column whose type is not the one the job's SQL relies on (naming table, column, the type expected
 * and the type found).
 */
async function tableProblems(db: Queryable, tables: readonly ExpectedTable[]): Promise<string[]> {
  const problems: string[] = [];
  const { rows } = await db.query<{ table_name: string; column_name: string; data_type: string; udt_name: string }>(
    `select table_name, column_name, data_type, udt_name from information_schema.columns
      where table_schema = 'profile' and table_name = any($1::text[])`,
    [tables.map((t) => t.table)],
  );
  const found = new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, r]));
  for (const { table, access, columns } of tables) {
    const names = Object.keys(columns);
    if (access === 'read') {
      try {
        await db.query(`select ${names.join(', ')} from profile.${table} limit 0`);
      } catch (err) {
        problems.push(`profile.${table}: ${errorOf(err).message}`);
      }
    } else {
      const missing = names.filter((c) => !found.has(`${table}.${c}`));
      if (missing.length > 0) problems.push(`profile.${table}: missing or not writable columns ${missing.join(', ')}`);
    }
    for (const [column, type] of Object.entries(columns)) {
      const actual = found.get(`${table}.${column}`);
      if (!actual || (TYPE_NAMES[type] as readonly string[]).includes(actual.data_type)) continue;
      const shown = actual.data_type === 'USER-DEFINED' ? actual.udt_name : actual.data_type;
      problems.push(
        `profile.${table}.${column}: expected type ${TYPE_NAMES[type].join(' or ')}, found ${shown}; ` +
          "the job's statements rely on it",
      );
    }
  }
  return problems;
}

/** An index as the catalog has it: what a statement's plan can rely on. */
interface IndexShape {
  table: string;
  method: string;
  unique: boolean;
  /** False for an index left behind by a failed `CREATE INDEX CONCURRENTLY`: the planner never uses it. */
  valid: boolean;
  /** The key columns, in order, as `pg_get_indexdef` prints them, ` DESC` added to a descending one. */
  columns: string[];
  /** The `WHERE` of a partial index, as `pg_get_expr` prints it; null for a whole-table index. */
  predicate: string | null;
}

/** The shape of index `name` of schema `profile`, or undefined when there is none of that name. */
async function indexShape(db: Queryable, name: string): Promise<IndexShape | undefined> {
  const { rows } = await db.query<IndexShape>(
    `select t.relname as "table", am.amname as method, i.indisunique as "unique", i.indisvalid as valid,
            array(select pg_get_indexdef(i.indexrelid, k, true) || case when i.indoption[k - 1] & 1 = 1 then ' DESC' else '' end
                    from generate_series(1, i.indnkeyatts) k order by k)
              as columns,
            pg_get_expr(i.indpred, i.indrelid, true) as predicate
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       join pg_index i on i.indexrelid = c.oid
       join pg_class t on t.oid = i.indrelid
       join pg_am am on am.oid = c.relam
      where n.nspname = 'profile' and c.relname = $1`,
    [name],
  );
  return rows[0];
}

/** What one index must be, and why: the problem names the index, the shape it needs and the reason. */
interface ExpectedIndex {
  name: string;
  table: string;
  unique: boolean;
  columns: readonly string[];
  /** The predicates accepted: null for none (a whole-table index serves a partial one's queries too). */
  predicates: readonly (string | null)[];
  shape: string;
  why: string;
}

const EXPECTED_INDEXES: readonly ExpectedIndex[] = [
  {
    name: 'ux_document_expiry_reminders_dedupe',
    table: 'document_expiry_reminders',
    unique: true,
    columns: ['document_id', 'threshold_days'],
    predicates: [null],
    shape: 'unique btree (document_id, threshold_days) on every row',
    why: 'without it reminders could repeat',
  },
  {
    name: 'ix_person_documents_expires_at',
    table: 'person_documents',
    unique: false,
    columns: ['expires_at', 'id'],
    predicates: [null, 'expires_at IS NOT NULL'],
    shape: 'btree (expires_at, id), on every row or where expires_at is not null',
    why: "the candidate page walks it in (expires_at, id) order and stops at the page's size; another shape sorts the whole window for every page (migration 001 creates it only if no index of that name exists)",
  },
];

/** Problems with one {@link ExpectedIndex}: missing, invalid, or of another shape (saying what was found). */
function indexProblem(expected: ExpectedIndex, found: IndexShape | undefined): string | undefined {
  const need = `profile.${expected.table}: the index ${expected.name} must be ${expected.shape}; ${expected.why}`;
  if (!found) return `${need}. It is missing`;
  const sameShape =
    found.table === expected.table &&
    found.method === 'btree' &&
    found.unique === expected.unique &&
    found.columns.join(',') === expected.columns.join(',') &&
    expected.predicates.includes(found.predicate);
  if (!sameShape) {
    const shown = `${found.unique ? 'unique ' : ''}${found.method} (${found.columns.join(', ')}) on profile.${found.table}${found.predicate ? ` where ${found.predicate}` : ''}`;
    return `${need}. Found ${shown}`;
  }
  if (!found.valid) return `${need}. It is invalid (a failed CREATE INDEX CONCURRENTLY?): drop and create it again`;
  return undefined;
}

/** Problems with the schema as the worker's role sees it; empty when the worker can run. */
export async function workerSchemaProblems(db: Queryable): Promise<string[]> {
  const problems = [...(await dateStyleProblems(db)), ...(await tableProblems(db, WORKER_TABLES))];
  for (const expected of EXPECTED_INDEXES) {
    const problem = indexProblem(expected, await indexShape(db, expected.name));
    if (problem) problems.push(problem);
  }
  return [...problems, ...(await functionProblems(db))];
}

/** Functions the worker's statements call, with the migration that creates each. */
const WORKER_FUNCTIONS = [
  { signature: 'profile.wait_for_xact_locks(bigint[], integer)', migration: '019' },
  { signature: 'profile.time_ordered_uuid()', migration: '020' },
  { signature: 'profile.end_support_lock_holders(bigint[])', migration: '023' },
  { signature: 'profile.enter_claim_attempt(uuid, text, integer)', migration: '024' },
  { signature: 'profile.raise_claim_attempt(uuid, text, integer)', migration: '024' },
];

/** A function the worker calls that is missing, or that its role may not execute. */
async function functionProblems(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ signature: string; found: boolean; executable: boolean | null }>(
    `select f.signature, to_regprocedure(f.signature) is not null as found,
            case when to_regprocedure(f.signature) is not null
                 then has_function_privilege(to_regprocedure(f.signature), 'execute') end as executable
       from unnest($1::text[]) as f(signature)`,
    [WORKER_FUNCTIONS.map((f) => f.signature)],
  );
  return rows.flatMap((r) => {
    const migration = WORKER_FUNCTIONS.find((f) => f.signature === r.signature)?.migration;
    if (!r.found) return [`${r.signature} is missing: run the migrations (${migration} creates it)`];
    if (!r.executable) return [`${r.signature}: the worker's role may not execute it`];
    return [];
  });
}

/**
 * Problems with the outbox as the relay's role sees it; empty when the relay can run. A relay started before
 * its migration would otherwise fail every batch with "column does not exist" and back off forever.
 */
export async function relaySchemaProblems(db: Queryable): Promise<string[]> {
  return [...(await dateStyleProblems(db)), ...(await tableProblems(db, RELAY_TABLES))];
}

/**
 * The session's DateStyle must print ISO dates (`createPool` asks for it in the connection's options); a
 * pooler that drops startup options leaves the server's, and dates would be read in another order.
 */
async function dateStyleProblems(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ datestyle: string }>(`select current_setting('DateStyle') as datestyle`);
  const style = rows[0].datestyle;
  return style.startsWith('ISO')
    ? []
    : [
        `DateStyle is "${style}" in the job's sessions: expected ISO, which the connection asks for in its ` +
          'startup options (-c DateStyle=ISO); a pooler that drops them must pass them on, or set DateStyle=ISO ' +
          'for the role',
      ];
}
