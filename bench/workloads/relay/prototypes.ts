/**
 * Issue 48's measurement: publish paths that write no row version per message, built far enough to measure
 * (bench/RELAY-PATHS.md), against today's statements in the same lean loop, so that what differs between
 * them is the database's work and nothing else:
 *   lean-today  today's claim (`claimUnpublished`, pinned plan) and `markPublished` on `profile.outbox_messages`;
 *   lean-lanes  path A: an insert-only table stamped with `pg_current_xact_id()`, read per lane (8 hash lanes,
 *               each behind a try-lock) below the snapshot's xmin, one cursor update and one delivery row per
 *               partition a batch;
 *   lean-queue  path C: the events beside a narrow queue table, claimed with today's rule and deleted in one
 *               `delete … using unnest` a batch.
 * Each runs RELAY_CONCURRENCY loops in this process with a producer each (idempotent, acks=-1, one request
 * in flight, as the relay's), RELAY_BATCH_SIZE rows a batch, from a full table (timed from the first read),
 * and leaves out what every path would keep alike: spans, metrics, the per-partition verdicts. The tables
 * live in a schema of their own, `relay_proto`, dropped at the end.
 */
import crypto from 'node:crypto';
import type { Kafka, Producer } from 'kafkajs';
import pg from 'pg';
import { claimUnpublished, markPublished, pinClaimPlan, type OutboxMessage } from '../../../src/db/outbox';
import { withTransaction } from '../../../src/db/pool';
import { TOPIC } from '../../../src/domain/names';
import { toKafkaMessage } from '../../../src/relay/kafka';
import { partitionOfKey } from '../../../src/relay/key-partition';
import { cpuDelta, cpuSnapshot, measurement, type Measurement } from '../../harness/measure';
import type { Bench } from '../../workload';
import { seedOutbox, unpublishedCount } from './seed';

/** The lean paths this module measures, by `--only` name. */
export const LEAN_PATHS = ['lean-today', 'lean-lanes', 'lean-queue'] as const;
export type LeanPath = (typeof LEAN_PATHS)[number];

/** Path A's lanes: fixed by its index's expression (`& 7`). */
const LANES = 8;
/** The advisory lock class of a lane's try-lock (the lane is the second key). */
const LANE_LOCK_CLASS = 48_001;
const EVENT_COLUMNS = `id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
  correlation_id, trace_context`;
const SELECTED_EVENT_COLUMNS = `id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version,
  payload::text as payload, correlation_id, 0 as attempts, trace_context`;

const SCHEMA_SQL = `
  drop schema if exists relay_proto cascade;
  create schema relay_proto;
  create table relay_proto.events (
    id uuid primary key, xid xid8 not null default pg_current_xact_id(),
    aggregate_type varchar(100) not null, aggregate_id uuid not null, topic varchar(255) not null,
    message_key varchar(255) not null, event_type varchar(255) not null, contract_version int not null,
    payload jsonb not null, correlation_id varchar(255) not null,
    created_at timestamptz not null default clock_timestamp(), trace_context text);
  create index ix_events_lane on relay_proto.events (((hashtextextended(message_key, 0) & 7)::int), xid, id);
  create index ix_events_key on relay_proto.events (message_key, created_at, id);
  create table relay_proto.lanes (lane int primary key, xid xid8 not null default '0',
    id uuid not null default '00000000-0000-0000-0000-000000000000', acked_at timestamptz) with (fillfactor = 50);
  insert into relay_proto.lanes (lane) select generate_series(0, ${LANES - 1});
  create table relay_proto.held (message_key varchar(255) primary key, reason text not null);
  create table relay_proto.deliveries (lane int, last_xid xid8, last_id uuid, partition int not null,
    base_offset bigint not null, ids uuid[] not null, published_at timestamptz not null default now());
  create index ix_deliveries_lane on relay_proto.deliveries (lane, last_xid, last_id);
  create index ix_deliveries_published on relay_proto.deliveries (published_at);
  create table relay_proto.events_c (like relay_proto.events including defaults);
  alter table relay_proto.events_c drop column xid, add primary key (id);
  create index ix_events_c_key on relay_proto.events_c (message_key, created_at, id);
  create table relay_proto.pending (id uuid primary key, message_key varchar(255) not null,
    created_at timestamptz not null);
  create index ix_pending_claimable on relay_proto.pending (created_at, id);
  create index ix_pending_key on relay_proto.pending (message_key, created_at, id);`;

/** Where a batch went: per partition, its base offset and the ids in send order. */
interface Placed {
  partition: number;
  baseOffset: string;
  ids: string[];
}

/** Sends one batch as the relay's producer does (one request, acks=-1) and says where each partition went. */
async function send(producer: Producer, rows: readonly OutboxMessage[], partitions: number): Promise<Placed[]> {
  const meta = await producer.send({ topic: TOPIC, acks: -1, messages: rows.map((r) => toKafkaMessage(r)) });
  const ids = new Map<number, string[]>();
  for (const r of rows) {
    const p = partitionOfKey(r.message_key, partitions);
    ids.set(p, [...(ids.get(p) ?? []), r.id]);
  }
  return meta.map((m) => ({
    partition: m.partition,
    baseOffset: m.baseOffset ?? '0',
    ids: ids.get(m.partition) ?? [],
  }));
}

/**
 * One pass of a loop, inside a transaction the loop opens (`withTransaction`): publishes one batch, or nothing;
 * returns the rows it published.
 */
type Pass = (db: pg.PoolClient, producer: Producer, turn: number) => Promise<number>;

const PIN_PLAN = 'set local enable_seqscan = off; set local enable_bitmapscan = off; set local enable_sort = off';

/** A batch's placements, one row per partition; `lane` and `last` for path A's `explain` by cursor range. */
async function insertDeliveries(
  db: pg.PoolClient,
  placed: readonly Placed[],
  lane: { lane: number; lastXid: string; lastId: string } | null,
): Promise<void> {
  await db.query(
    `insert into relay_proto.deliveries (lane, last_xid, last_id, partition, base_offset, ids)
     select $1, $2::xid8, $3, p.partition, p.base_offset, array(select jsonb_array_elements_text(p.ids)::uuid)
       from jsonb_to_recordset($4::jsonb) as p(partition int, base_offset bigint, ids jsonb)`,
    [
      lane?.lane ?? null,
      lane?.lastXid ?? null,
      lane?.lastId ?? null,
      JSON.stringify(placed.map((p) => ({ partition: p.partition, base_offset: p.baseOffset, ids: p.ids }))),
    ],
  );
}

const todayPass =
  (batch: number, partitions: number): Pass =>
  async (db, producer) => {
    await pinClaimPlan(db);
    const rows = await claimUnpublished(db, batch);
    if (rows.length === 0) return 0;
    const placed = await send(producer, rows, partitions);
    const placements = new Map(
      placed.flatMap((p) =>
        p.ids.map(
          (id, i) => [id, { partition: p.partition, offset: String(BigInt(p.baseOffset) + BigInt(i)) }] as const,
        ),
      ),
    );
    await markPublished(
      db,
      rows.map((r) => r.id),
      placements,
    );
    return rows.length;
  };

const lanesPass =
  (batch: number, partitions: number): Pass =>
  async (db, producer, turn) => {
    const lane = turn % LANES;
    const { rows: locked } = await db.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1, $2) as ok', [
      LANE_LOCK_CLASS,
      lane,
    ]);
    if (!locked[0].ok) return 0;
    await db.query(PIN_PLAN);
    const { rows: cursor } = await db.query<{ xid: string; id: string }>(
      'select xid::text as xid, id from relay_proto.lanes where lane = $1',
      [lane],
    );
    // Not `xid::text as xid`: ORDER BY would take the output column, sort the lane's rows as text, and read
    // them all for each batch.
    const { rows } = await db.query<OutboxMessage & { row_xid: string }>(
      `select ${SELECTED_EVENT_COLUMNS}, xid::text as row_xid from relay_proto.events
        where ((hashtextextended(message_key, 0) & 7)::int) = $1
          and (xid, id) > ($2::xid8, $3::uuid) and xid < pg_snapshot_xmin(pg_current_snapshot())
        order by xid, id limit $4`,
      [lane, cursor[0].xid, cursor[0].id, batch],
    );
    if (rows.length === 0) return 0;
    await db.query('select message_key from relay_proto.held where message_key = any($1)', [
      [...new Set(rows.map((r) => r.message_key))],
    ]);
    const placed = await send(producer, rows, partitions);
    const last = rows[rows.length - 1];
    const moved = await db.query(
      `update relay_proto.lanes set xid = $2::xid8, id = $3, acked_at = now()
        where lane = $1 and (xid, id) = ($4::xid8, $5::uuid)`,
      [lane, last.row_xid, last.id, cursor[0].xid, cursor[0].id],
    );
    if (moved.rowCount !== 1) throw new Error(`lane ${lane}'s cursor moved under its lock`);
    await insertDeliveries(db, placed, { lane, lastXid: last.row_xid, lastId: last.id });
    return rows.length;
  };

/** Path C's claim: today's rule (oldest first, skip locked, no key with an earlier row outside the batch). */
const QUEUE_CLAIM_SQL = `
  with batch as materialized (
    select id, message_key, created_at from relay_proto.pending order by created_at, id limit $1 for update skip locked)
  select e.id, e.aggregate_type, e.aggregate_id, e.topic, e.message_key, e.event_type, e.contract_version,
         e.payload::text as payload, e.correlation_id, 0 as attempts, e.trace_context
    from batch b join relay_proto.events_c e on e.id = b.id
   where (select 1 from relay_proto.pending p
           where p.message_key = b.message_key and (p.created_at, p.id) < (b.created_at, b.id)
             and p.id not in (select id from batch) limit 1) is null
   order by b.created_at, b.id`;

const queuePass =
  (batch: number, partitions: number): Pass =>
  async (db, producer) => {
    await db.query(PIN_PLAN);
    const { rows } = await db.query<OutboxMessage>(QUEUE_CLAIM_SQL, [batch]);
    if (rows.length === 0) return 0;
    const placed = await send(producer, rows, partitions);
    await db.query('delete from relay_proto.pending p using unnest($1::uuid[]) as u(id) where p.id = u.id', [
      rows.map((r) => r.id),
    ]);
    await insertDeliveries(db, placed, null);
    return rows.length;
  };

/** Rows a path has not published yet, read when it ends (every path must reach 0). */
async function leftOver(admin: pg.Pool, path: LeanPath): Promise<number> {
  if (path === 'lean-today') return unpublishedCount(admin);
  const sql =
    path === 'lean-queue'
      ? 'select count(*)::int as n from relay_proto.pending'
      : `select count(*)::int as n from relay_proto.events e join relay_proto.lanes l
           on l.lane = ((hashtextextended(e.message_key, 0) & 7)::int) where (e.xid, e.id) > (l.xid, l.id)`;
  return (await admin.query<{ n: number }>(sql)).rows[0].n;
}

/** Empty tables for `path`, then `rows` events shaped as the relay workload's, written as the worker would. */
async function prepare(admin: pg.Pool, path: LeanPath, rows: number): Promise<void> {
  await admin.query('truncate profile.outbox_messages');
  await admin.query(SCHEMA_SQL);
  const correlationId = `bench-lean-${crypto.randomBytes(3).toString('hex')}`;
  await seedOutbox(admin, rows, correlationId);
  if (path === 'lean-lanes' || path === 'lean-queue') {
    const table = path === 'lean-lanes' ? 'relay_proto.events' : 'relay_proto.events_c';
    await admin.query(
      `insert into ${table} (${EVENT_COLUMNS}, created_at) select ${EVENT_COLUMNS}, created_at from profile.outbox_messages`,
    );
    if (path === 'lean-queue')
      await admin.query('insert into relay_proto.pending select id, message_key, created_at from relay_proto.events_c');
    await admin.query('truncate profile.outbox_messages');
  }
  await admin.query('vacuum analyze');
}

/** Each lean path's label in the report. */
export const LEAN_LABELS: Record<LeanPath, string> = {
  'lean-today': 'lean loop, today’s claim and update',
  'lean-lanes': 'lean loop, A: xid cursor per lane',
  'lean-queue': 'lean loop, C: narrow queue, batched delete',
};

/**
 * Runs `path` over `rows` rows with `loops` loops of `batch` rows and returns its measurement: wall time from the
 * first read to the last commit, this process's CPU (`benchDriver`), PostgreSQL's and the broker's, and
 * PostgreSQL's CPU per published row in µs.
 */
export async function leanPath(
  bench: Bench,
  kafka: Kafka,
  path: LeanPath,
  options: { rows: number; batch: number; loops: number; partitions: number },
): Promise<Measurement> {
  const { admin, database } = bench;
  await prepare(admin, path, options.rows);
  const pool = new pg.Pool({ connectionString: database.ownerUrl, max: options.loops });
  const producers = await Promise.all(
    Array.from({ length: options.loops }, async () => {
      const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await p.connect();
      return p;
    }),
  );
  const pass = { 'lean-today': todayPass, 'lean-lanes': lanesPass, 'lean-queue': queuePass }[path](
    options.batch,
    options.partitions,
  );
  let published = 0;
  let batches = 0;
  try {
    const cpu0 = cpuSnapshot();
    const t0 = performance.now();
    await Promise.all(
      producers.map(async (producer, loop) => {
        // Loops start on different lanes; a lane empty or held by the other loop costs one short pass.
        let turn = loop * Math.floor(LANES / options.loops);
        let idle = 0;
        while (published < options.rows) {
          const t = turn++;
          const n = await withTransaction(pool, (db) => pass(db, producer, t));
          published += n;
          if (n > 0) batches++;
          idle = n > 0 ? 0 : idle + 1;
          if (idle >= LANES) await new Promise((r) => setTimeout(r, 5));
          if (idle > LANES * 200) throw new Error(`${path}: ${published} of ${options.rows} published, then nothing`);
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const after = cpuSnapshot();
    const left = await leftOver(admin, path);
    if (left > 0) throw new Error(`${path} ended with ${left} rows unpublished`);
    return measurement(LEAN_LABELS[path], seconds, published, published, published, 0, {
      rowsPerSecond: Math.round(published / seconds),
      batches,
      postgresMicrosPerRow: Math.round(((after.postgres - cpu0.postgres) * 1e6) / published),
      cpu: cpuDelta(cpu0, after, seconds),
    });
  } finally {
    await pool.end();
    await Promise.all(producers.map((p) => p.disconnect()));
    await admin.query('drop schema if exists relay_proto cascade');
  }
}
