/**
 * Set-based generator for `profile.person_documents` (issue 7, benchmark data). Everything is generated
 * inside PostgreSQL with generate_series / INSERT … SELECT, one statement per chunk of ~1M documents.
 *
 * The mix:
 * - owners `1..owners`, each with 1–10 base documents (spread around the mean documents/owners);
 *   owner ids are deterministic (`md5('bench-owner-' || n)::uuid`), so due documents can be given to
 *   existing owners;
 * - types Passport, ForeignPassport, DriverLicense, Inn, Snils, ResidencePermit;
 * - expiry dates uniform over ten years around AsOf (±5 years), ~15% without expiry, ~5% Archived,
 *   ~2% deleted. Base documents are placed OUTSIDE the cycle's window
 *   [AsOf − retention, AsOf + max threshold], so what is due is exactly what `dueDocuments` adds;
 * - `dueDocuments` extra documents, Active and not deleted, expiring inside the window
 *   (AsOf − 10 … AsOf + 30 days), spread over owners `1..dueOwners` (backlog / moonshot workloads).
 */
import type pg from 'pg';

export interface SeedOptions {
  documents: number;
  owners: number;
  dueDocuments?: number;
  dueOwners?: number;
  asOfDate: string;
  retentionDays?: number;
  maxThresholdDays?: number;
  /** Documents per statement. */
  chunk?: number;
  /** Drop the two secondary indexes before the load and rebuild them after; default: when documents ≥ 2M. */
  dropIndexes?: boolean;
  log?: (line: string) => void;
}

export interface SeedResult {
  documents: number;
  dueDocuments: number;
  seconds: number;
  rowsPerSecond: number;
}

const OWNER_UUID = (n: string) => `md5('bench-owner-' || ${n})::uuid`;

const SECONDARY_INDEXES = [
  `create index if not exists ix_person_documents_expires_at
     on profile.person_documents (expires_at, id) where expires_at is not null`,
  `create index if not exists ix_person_documents_owner_user_id
     on profile.person_documents (owner_user_id)`,
];

export async function seedDocuments(pool: pg.Pool, o: SeedOptions): Promise<SeedResult> {
  const log = o.log ?? (() => {});
  const retention = o.retentionDays ?? 90;
  const maxThreshold = o.maxThresholdDays ?? 30;
  const chunk = o.chunk ?? 1_000_000;
  const mean = Math.max(1, Math.min(10, o.documents / Math.max(1, o.owners)));
  // Documents per owner: 1 + (hash % spread), spread chosen so the mean is ≈ documents/owners, capped at 10.
  const spread = Math.max(1, Math.min(10, Math.round(2 * mean - 1)));
  const ownersPerChunk = Math.max(1, Math.floor(chunk / ((spread + 1) / 2)));
  const dropIndexes = o.dropIndexes ?? o.documents >= 2_000_000;
  const started = Date.now();
  let total = 0;

  if (dropIndexes) {
    log('dropping secondary indexes for the load');
    await pool.query('drop index if exists profile.ix_person_documents_expires_at');
    await pool.query('drop index if exists profile.ix_person_documents_owner_user_id');
  }

  // Ten years around AsOf without the window: days 0..(3650 - windowLength) mapped around the hole.
  const windowStart = -retention; // relative to AsOf
  const windowLength = retention + maxThreshold + 1;
  for (let first = 1; first <= o.owners; first += ownersPerChunk) {
    const last = Math.min(o.owners, first + ownersPerChunk - 1);
    const t0 = Date.now();
    const { rowCount } = await pool.query(
      `insert into profile.person_documents
              (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted, payload_cipher)
       select gen_random_uuid(), o.owner, o.owner,
              (array['Passport','ForeignPassport','DriverLicense','Inn','Snils','ResidencePermit'])[1 + floor(random() * 6)::int],
              '**** ' || lpad(floor(random() * 1000000)::int::text, 6, '0'),
              case when r.nullexp < 0.15 then null
                   else $1::date - 1825 + r.day + case when r.day - 1825 >= $5 then $6 else 0 end end,
              case when r.st < 0.05 then 'Archived' else 'Active' end,
              r.del < 0.02,
              '\\x00'::bytea
         from (select ${OWNER_UUID('n')} as owner, n from generate_series($2::int, $3::int) as n) o
        cross join lateral generate_series(1, 1 + (hashint4(o.n) & 2147483647) % $4) as d
        cross join lateral (select random() as nullexp, random() as st, random() as del,
                                   floor(random() * (3650 - $6))::int as day, d) r`,
      [o.asOfDate, first, last, spread, windowStart, windowLength],
    );
    total += rowCount ?? 0;
    const s = (Date.now() - t0) / 1000;
    log(
      `owners ${first}–${last}: ${rowCount} documents in ${s.toFixed(1)} s (${Math.round((rowCount ?? 0) / s)} rows/s), total ${total}`,
    );
  }

  let due = 0;
  if (o.dueDocuments && o.dueDocuments > 0) {
    const dueOwners = Math.max(1, Math.min(o.dueOwners ?? o.dueDocuments, o.dueDocuments));
    const t0 = Date.now();
    // Document k goes to owner 1 + (k mod dueOwners): every due owner gets ⌊K/O⌋ or ⌈K/O⌉ due documents.
    const { rowCount } = await pool.query(
      `insert into profile.person_documents
              (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted, payload_cipher)
       select gen_random_uuid(), ${OWNER_UUID('(1 + k % $3)')}, ${OWNER_UUID('(1 + k % $3)')},
              (array['Passport','ForeignPassport','DriverLicense','Inn','Snils','ResidencePermit'])[1 + floor(random() * 6)::int],
              '**** ' || lpad(floor(random() * 1000000)::int::text, 6, '0'),
              $1::date - 10 + floor(random() * 41)::int,
              'Active', false, '\\x00'::bytea
         from generate_series(0, $2::int - 1) as k`,
      [o.asOfDate, o.dueDocuments, dueOwners],
    );
    due = rowCount ?? 0;
    total += due;
    log(`due: ${due} documents over ${dueOwners} owners in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }

  if (dropIndexes) {
    for (const ddl of SECONDARY_INDEXES) {
      const t0 = Date.now();
      await pool.query(ddl);
      log(`${ddl.split('\n')[0].trim()} … ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  }
  // A vacuum, not only statistics: rows just loaded have no hint bits and no visibility map, and autovacuum
  // would start on them (its insert threshold) while the first path runs. That path alone would pay for
  // both, the cycle's, which runs first; the documents of a real day have been settled for months.
  const t0 = Date.now();
  await pool.query('vacuum (analyze) profile.person_documents');
  log(`vacuum (analyze) ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const seconds = (Date.now() - started) / 1000;
  return { documents: total, dueDocuments: due, seconds, rowsPerSecond: Math.round(total / seconds) };
}
