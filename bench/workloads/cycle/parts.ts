/**
 * Path `parts` (issue 37): what a page costs the database, part by part, the cycle's statements beside B's.
 * One session over the workload's first pages; for each page every part runs in a transaction of its own that
 * rolls back, so each part meets the ledger as the others did, in an order that turns with the page. The
 * figure is the session's backend CPU (from /proc: the stack's server runs on this machine) around the part's
 * measured statements, its setup (the page statement before a claim, say) left out; wall time beside it.
 * Where the surplus of the cycle's CPU per document over B∥'s goes (bench/REPORT.md) is read off these lines.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type pg from 'pg';
import {
  idRanges,
  PAGE_CLAIM_BEGIN,
  PAGE_PLAN_UNPIN,
  scanBounds,
  scanStart,
  selectCandidatePage,
  selectPruneCutoff,
  type PageCursor,
} from '../../../src/db/candidates';
import { holdAttemptSql, raiseAttempt } from '../../../src/activities/claim/sql/attempts';
import { claimLockedOwners } from '../../../src/activities/claim/sql/claim-owners';
import { lockFreeOwners, ownerLockKeySql } from '../../../src/activities/claim/sql/lock-owners';
import { readAndLockPage, type ReadPage } from '../../../src/activities/claim/sql/pages';
import { createPool } from '../../../src/db/pool';
import { claimCtes } from '../../../src/db/reminders';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../../src/domain/names';
import { claimPage } from '../../claim-page';
import { spread } from '../../compare/summary';
import { measurement, processCpuSeconds, type Measurement } from '../../harness/measure';
import { asOfInstant, type CycleSettings } from './settings';

/** A page of the walk: where it starts and its owners in scan order. */
interface WalkedPage {
  index: number;
  cursor: PageCursor | null;
  owners: string[];
  documents: number;
}

/** A part: how its transaction opens, what it sets up unmeasured, and what is measured. */
interface Part {
  name: string;
  begin: string;
  setup?: (tx: pg.ClientBase, page: WalkedPage) => Promise<ReadPage | undefined>;
  measured: (tx: pg.ClientBase, page: WalkedPage, read: ReadPage | undefined) => Promise<unknown>;
}

const JOB_RUN_ID = 'bench-parts';
/** As long as a real key (a run id and an activity id): the markers' `queued_by` is part of what they cost. */
const QUEUED_BY = `${crypto.randomUUID()}/claim-page-1-of-8`;

/** The claim of `$1` owners (locked by the transaction) returning only its totals, as B's statement does. */
const TOTALS_ONLY_SQL = `with locked as (select distinct o.id as owner_user_id from unnest($1::uuid[]) as o(id)),
     ${claimCtes('locked', {
       asOfDate: '$2',
       thresholds: '$3',
       retentionDays: '$4',
       asOf: '$5',
       asOfText: '$5',
       aggregateType: '$6',
       topic: '$7',
       eventType: '$8',
       contractVersion: '$9',
       jobRunId: '$10',
       traceContext: 'null',
       queuedBy: '$11',
     })}
     select (select count(*)::int from marks) as inserted, (select count(*)::int from won) as won`;

/** The parts, each against the same pages. */
function parts(s: CycleSettings): Part[] {
  const cycleId = crypto.randomUUID();
  const readPage = async (tx: pg.ClientBase, page: WalkedPage) => {
    const bounds = scanBounds(s.window, await selectPruneCutoff(tx));
    return readAndLockPage(tx, {
      window: s.window,
      bounds,
      after: scanStart(bounds, page.cursor),
      limit: s.batchSize,
      range: idRanges(1)[0],
      cycleId,
      jobRunId: JOB_RUN_ID,
      page: page.index + 1,
      attempt: 1,
      queuedBy: QUEUED_BY,
      lockFirst: Math.max(1, s.ownerConcurrency),
    });
  };
  const attempt = { cycleId, queuedBy: QUEUED_BY, attempt: 1 };
  const lockedPage = async (tx: pg.ClientBase, page: WalkedPage) => {
    const read = await readPage(tx, page);
    await tx.query(PAGE_PLAN_UNPIN);
    return read;
  };
  const claim = (queuedBy: string | undefined) => (tx: pg.ClientBase, page: WalkedPage, read?: ReadPage) =>
    claimLockedOwners(
      tx,
      { ...s.window, ownerUserIds: read!.locked, asOf: asOfInstant(s), jobRunId: JOB_RUN_ID, queuedBy },
      queuedBy ? { ...attempt, part: `p${page.index + 1}`, busyOwnerIds: read!.busy, clearedOwnerIds: [] } : undefined,
    );
  const firstGroup = (page: WalkedPage) => page.owners.slice(0, Math.max(1, s.ownerConcurrency));
  return [
    {
      name: "B: the page's one statement",
      begin: 'BEGIN',
      measured: (tx, page) => claimPage(tx, s.window, page.cursor, s.batchSize, asOfInstant(s), JOB_RUN_ID),
    },
    {
      name: "cycle: the attempt's hold (the last statement of a claim's BEGIN)",
      begin: 'BEGIN',
      setup: async (tx) => {
        await raiseAttempt(tx, attempt);
        return undefined;
      },
      measured: (tx) => tx.query(holdAttemptSql(attempt)),
    },
    { name: "cycle: the page's statement (read, record, locks, order)", begin: PAGE_CLAIM_BEGIN, measured: readPage },
    {
      name: "cycle: the claim of the page's locked owners, and its receipt",
      begin: PAGE_CLAIM_BEGIN,
      setup: lockedPage,
      measured: claim(QUEUED_BY),
    },
    {
      name: 'the claim, returning its totals only (as B)',
      begin: PAGE_CLAIM_BEGIN,
      setup: lockedPage,
      measured: (tx, _page, read) =>
        tx.query(TOTALS_ONLY_SQL, [
          read!.locked,
          s.window.asOfDate,
          s.window.thresholdsDays,
          s.window.retentionDays,
          asOfInstant(s),
          AGGREGATE_TYPE,
          TOPIC,
          EVENT_TYPE,
          CONTRACT_VERSION,
          JOB_RUN_ID,
          QUEUED_BY,
        ]),
    },
    {
      name: 'the claim on a generic plan (as force_generic_plan would run it)',
      begin: PAGE_CLAIM_BEGIN,
      setup: async (tx, page) => {
        const read = await lockedPage(tx, page);
        await tx.query('SET LOCAL plan_cache_mode TO force_generic_plan');
        return read;
      },
      measured: claim(QUEUED_BY),
    },
    {
      name: 'the claim, without queued_by and receipt (as B)',
      begin: PAGE_CLAIM_BEGIN,
      setup: lockedPage,
      measured: claim(undefined),
    },
    {
      name: "the owner locks of the page's first group",
      begin: 'BEGIN',
      measured: (tx, page) => lockFreeOwners(tx, firstGroup(page)),
    },
    {
      name: 'their lock keys alone',
      begin: 'BEGIN',
      measured: (tx, page) =>
        tx.query(`select ${ownerLockKeySql('o.id')} from unnest($1::uuid[]) as o(id)`, [firstGroup(page)]),
    },
    {
      name: 'the owners array alone',
      begin: 'BEGIN',
      measured: (tx, page) => tx.query('select o.id from unnest($1::uuid[]) as o(id)', [firstGroup(page)]),
    },
  ];
}

/** The first `count` pages of the window, walked as B walks them (nothing is claimed). */
async function walkPages(db: pg.ClientBase, s: CycleSettings, count: number): Promise<WalkedPage[]> {
  const pages: WalkedPage[] = [];
  let cursor: PageCursor | null = null;
  while (pages.length < count) {
    const rows = await selectCandidatePage(db, s.window, cursor, s.batchSize);
    if (rows.length === 0) break;
    pages.push({
      index: pages.length,
      cursor,
      owners: [...new Set(rows.map((r) => r.owner_user_id))],
      documents: rows.length,
    });
    if (rows.length < s.batchSize) break;
    const last = rows[rows.length - 1];
    cursor = { expiresAt: last.expires_at, id: last.id };
  }
  return pages;
}

/**
 * Measures each part over the first `pageCount` pages, `rounds` times, in one session of the worker's role.
 * @returns one measurement; `extra.parts` has, per part, the backend CPU per page (ms) and the median wall.
 */
export async function claimParts(
  workerUrl: string,
  s: CycleSettings,
  say: (line: string) => void,
  { pageCount = 40, rounds = 3 }: { pageCount?: number; rounds?: number } = {},
): Promise<Measurement> {
  // The worker's pool settings (ISO dates kept as text), one session.
  const pool = createPool({ connectionString: workerUrl, max: 1, applicationName: 'expiry-reminder-bench-parts' });
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const pid = rows[0].pid;
    const local = isLocalBackend(pid);
    const pages = await walkPages(client, s, pageCount);
    const list = parts(s);
    const tally = list.map(() => ({ cpu: 0, walls: [] as number[] }));
    const t0 = performance.now();
    for (let round = 0; round < rounds; round += 1) {
      for (const page of pages) {
        for (let k = 0; k < list.length; k += 1) {
          const i = (k + page.index + round) % list.length;
          const part = list[i];
          await client.query(part.begin);
          try {
            const read = await part.setup?.(client, page);
            const cpu0 = processCpuSeconds(pid);
            const w0 = performance.now();
            await part.measured(client, page, read);
            tally[i].walls.push(performance.now() - w0);
            tally[i].cpu += processCpuSeconds(pid) - cpu0;
          } finally {
            await client.query('ROLLBACK');
          }
        }
      }
      say(`parts: round ${round + 1}/${rounds} done`);
    }
    const runs = pages.length * rounds;
    const figures = Object.fromEntries(
      list.map((part, i) => [
        part.name,
        {
          cpuMsPerPage: local ? Number(((tally[i].cpu * 1000) / runs).toFixed(2)) : undefined,
          wallMsMedian: Number(spread(tally[i].walls).median.toFixed(2)),
        },
      ]),
    );
    for (const [name, f] of Object.entries(figures)) {
      say(`parts: ${name}: ${f.cpuMsPerPage ?? '-'} ms of CPU a page, ${f.wallMsMedian} ms wall (median)`);
    }
    if (!local) say('parts: the server is not on this machine, so only wall times');
    const documents = pages.reduce((n, p) => n + p.documents, 0);
    const owners = pages.reduce((n, p) => n + p.owners.length, 0);
    return measurement(
      `Parts: a page's statements one by one, ${pages.length} pages × ${rounds}, one session`,
      (performance.now() - t0) / 1000,
      owners,
      documents,
      0,
      pages.length,
      { parts: figures },
    );
  } finally {
    client.release();
    await pool.end();
  }
}

/** Whether `pid` is a PostgreSQL backend on this machine (a server elsewhere has its own pids). */
function isLocalBackend(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('postgres');
  } catch {
    return false;
  }
}
