/**
 * s11, chaos: many cycles over a random world that changes between them (renewals, archives, new
 * documents and owners, threshold changes), AsOf moving forward with one step back, while the worker
 * is SIGKILLed at random moments (some right after an owner group's commit, heard on the outbox's
 * NOTIFY channel), PostgreSQL restarts once, and some cycles run beside a twin with the same input.
 * Every cycle is judged against the model of the rules (`../model.ts`): the ledger after it and the
 * events its outbox rows hold; its reported counts against its own rows; I1–I4 at the end. Every
 * random choice comes from one seeded PRNG (`--seed`), printed first and in the result row.
 */
import type { WorkflowHandle } from '@temporalio/client';
import pg from 'pg';
import { createPool } from '../../../src/db/pool';
import type { CycleInput, CycleResult } from '../../../src/domain/cycle';
import type { CycleWorkflow } from '../../../src/workflows';
import { AS_OF, FAULT_CYCLE, sleep, waitFor, type FaultDb } from '../harness';
import { outboxCount } from '../invariants';
import {
  Draw,
  addDays,
  diffLines,
  eventKey,
  markerKey,
  runCycle,
  type ModelDocument,
  type ModelEvent,
  type ModelLedger,
  type ModelMarker,
} from '../model';
import type { Proc } from '../processes';
import { cycleScenario, type CycleRun } from '../runner';

const RETENTION_DAYS = 90;
const CYCLES = 8;
const NOTIFY_CHANNEL = 'profile_outbox_messages';
/** Threshold lists a cycle runs with; the first most often, as in production. */
const THRESHOLD_SETS = [
  [30, 7, 1, 0],
  [30, 7, 1, 0],
  [30, 14, 7, 1, 0],
  [30, 3, 0],
  [14, 2],
  [60, 30, 7, 0],
];
const TYPES = ['Passport', 'ForeignPassport', 'DriverLicense', 'ResidencePermit'];

interface PlannedCycle {
  asOf: string;
  thresholdsDays: number[];
  twin: boolean;
  /** Kills: after the n-th outbox commit of the cycle, or after a delay in ms. */
  kills: ({ afterCommits: number } | { afterMs: number })[];
  restartPostgres: boolean;
}

/**
 * The days: forward by 1–3 days, one cycle (never the first two nor the last) 1–3 days back from the
 * latest, and the last cycle on the latest day of all, so I1–I3 are judged on a day no other cycle had.
 */
function plan(draw: Draw): PlannedCycle[] {
  const back = draw.int(2, CYCLES - 2);
  const restartAt = draw.int(1, CYCLES - 1);
  let latest = AS_OF;
  const cycles: PlannedCycle[] = [];
  for (let i = 0; i < CYCLES; i++) {
    let asOf: string;
    if (i === 0) asOf = latest;
    else if (i === back) asOf = addDays(latest, -draw.int(1, 3));
    else asOf = latest = addDays(latest, draw.int(1, 3));
    const kills = Array.from({ length: draw.int(0, 2) }, () =>
      draw.chance(0.6) ? { afterCommits: draw.int(1, 6) } : { afterMs: draw.int(200, 4_000) },
    );
    cycles.push({
      asOf,
      thresholdsDays: i === 0 ? [30, 7, 1, 0] : draw.pick(THRESHOLD_SETS),
      twin: draw.chance(0.35),
      kills: i === restartAt ? [] : kills,
      restartPostgres: i === restartAt,
    });
  }
  return cycles;
}

/**
 * The plan and two independent streams drawn from `seed`: the first world (drawn while seeding) and the
 * changes between cycles (drawn in the body), so the two steps never draw the same numbers or ids.
 */
function streams(seed: number) {
  const root = new Draw(seed);
  const cycles = plan(root);
  return { cycles, world: new Draw(root.int(0, 2 ** 31 - 1)), changes: new Draw(root.int(0, 2 ** 31 - 1)) };
}

/** A quarter of `--owners`: eight cycles with their faults fit CI's few minutes. */
const ownersFor = (requested: number): number => Math.max(20, Math.ceil(requested / 4));

const newDocument = (draw: Draw, owner: string, expiresAt: string | null): ModelDocument & { type: string } => ({
  id: draw.uuid(),
  ownerUserId: owner,
  expiresAt,
  status: draw.chance(0.05) ? 'Archived' : 'Active',
  isDeleted: draw.chance(0.03),
  type: draw.pick(TYPES),
});

/**
 * Documents of `owners` new owners around `asOf` (expired ones included, and some undated). Documents
 * near the retention bound (so the prune has work) avoid `oldGap`: a day from which the step back would
 * reach a marker a later day pruned, which re-sends under the retention bound (issue 19 item 1).
 */
function owners(draw: Draw, count: number, asOf: string, oldGap?: [string, string]) {
  const docs: (ModelDocument & { type: string })[] = [];
  for (let o = 0; o < count; o++) {
    const owner = draw.uuid();
    for (let d = draw.int(1, 3); d > 0; d--) {
      let expiresAt: string | null = draw.chance(0.05) ? null : addDays(asOf, draw.int(-12, 45));
      if (oldGap && draw.chance(0.08)) {
        expiresAt = addDays(asOf, -draw.int(80, 100));
        if (expiresAt >= oldGap[0] && expiresAt < oldGap[1]) expiresAt = addDays(oldGap[0], -1);
      }
      docs.push(newDocument(draw, owner, expiresAt));
    }
  }
  return docs;
}

async function insertDocuments(db: FaultDb, docs: (ModelDocument & { type: string })[]): Promise<void> {
  await db.admin.query(
    `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, is_deleted, payload_cipher)
     select d.id, d.owner, gen_random_uuid(), d.type, '**** 0000', d.expires_at, d.status, d.is_deleted, '\\x00'
       from unnest($1::uuid[], $2::uuid[], $3::text[], $4::date[], $5::text[], $6::boolean[])
            as d(id, owner, type, expires_at, status, is_deleted)`,
    [
      docs.map((d) => d.id),
      docs.map((d) => d.ownerUserId),
      docs.map((d) => d.type),
      docs.map((d) => d.expiresAt),
      docs.map((d) => d.status),
      docs.map((d) => d.isDeleted),
    ],
  );
}

async function readDocuments(db: FaultDb): Promise<ModelDocument[]> {
  const { rows } = await db.admin.query<ModelDocument>(
    `select id::text, owner_user_id::text as "ownerUserId", expires_at::text as "expiresAt", status,
            is_deleted as "isDeleted"
       from profile.person_documents`,
  );
  return rows;
}

async function readMarkers(db: FaultDb): Promise<ModelMarker[]> {
  const { rows } = await db.admin.query<ModelMarker>(
    `select document_id::text as "documentId", threshold_days as "thresholdDays", expires_at::text as "expiresAt",
            to_char(reminded_at at time zone 'UTC', 'YYYY-MM-DD') as "remindedOn"
       from profile.document_expiry_reminders`,
  );
  return rows;
}

/** The outbox rows of the cycles `ids` (their correlation ids), as model events, with each row's cycle. */
async function readEvents(db: FaultDb, ids: string[]): Promise<{ cycle: string; event: ModelEvent }[]> {
  const { rows } = await db.admin.query<{ correlation_id: string; payload: Payload }>(
    'select correlation_id, payload from profile.outbox_events where correlation_id = any($1)',
    [ids],
  );
  return rows.map((r) => ({
    cycle: r.correlation_id,
    event: {
      ownerUserId: r.payload.ownerUserId,
      remindedOn: r.payload.remindedAt.slice(0, 10),
      documents: r.payload.documents.map((d) => ({
        documentId: d.documentId,
        expiresAt: d.expiresAt,
        thresholdDays: d.thresholdDays,
        daysLeft: d.daysLeft,
      })),
    },
  }));
}

interface Payload {
  ownerUserId: string;
  remindedAt: string;
  documents: { documentId: string; expiresAt: string; thresholdDays: number; daysLeft: number }[];
}

/** Renewals, archives and deletions, new documents of known owners, and new owners, all drawn. */
async function changeWorld(db: FaultDb, draw: Draw, asOf: string, ownerCount: number): Promise<string> {
  const current = (await readDocuments(db)).filter((d) => d.expiresAt !== null && d.expiresAt >= addDays(asOf, -15));
  const some = (share: number) => current.filter(() => draw.chance(share));
  const renewed = some(0.04);
  for (const d of renewed) {
    await db.admin.query('update profile.person_documents set expires_at = expires_at + $2::int where id = $1', [
      d.id,
      draw.pick([draw.int(3, 20), draw.int(300, 400)]),
    ]);
  }
  const archived = some(0.02).map((d) => d.id);
  await db.admin.query(`update profile.person_documents set status = 'Archived' where id = any($1::uuid[])`, [
    archived,
  ]);
  const deleted = some(0.01).map((d) => d.id);
  await db.admin.query('update profile.person_documents set is_deleted = true where id = any($1::uuid[])', [deleted]);
  const knownOwners = [...new Set(current.map((d) => d.ownerUserId))];
  const added = Array.from({ length: Math.ceil(ownerCount * 0.03) }, () =>
    newDocument(draw, draw.pick(knownOwners), addDays(asOf, draw.int(-5, 45))),
  );
  const newOwners = owners(draw, Math.ceil(ownerCount * 0.03), asOf);
  await insertDocuments(db, [...added, ...newOwners]);
  return `${renewed.length} renewed, ${archived.length} archived, ${deleted.length} deleted, ${added.length} added, ${newOwners.length} of new owners`;
}

/** A LISTEN session on the outbox's channel that counts commits, reconnecting after a server restart. */
function commitCounter(db: FaultDb) {
  let commits = 0;
  let client: pg.Client | undefined;
  let stopped = false;
  const connect = async (): Promise<void> => {
    while (!stopped) {
      const c = new pg.Client({ connectionString: db.ownerUrl });
      c.on('error', () => undefined);
      try {
        await c.connect();
        c.on('notification', () => commits++);
        c.on('end', () => void (stopped || sleep(500).then(connect)));
        await c.query(`listen ${NOTIFY_CHANNEL}`);
        client = c;
        return;
      } catch {
        await c.end().catch(() => undefined);
        await sleep(500);
      }
    }
  };
  return {
    start: connect,
    get commits() {
      return commits;
    },
    stop: async () => {
      stopped = true;
      await client?.end().catch(() => undefined);
    },
  };
}

export const chaos = cycleScenario(
  {
    id: 's11',
    name: `chaos: ${CYCLES} cycles over a changing random world, AsOf forward and once back, thresholds changing, the worker SIGKILLed at random (some at an owner group's commit), PostgreSQL restarted once, twin cycles with the same input`,
    owners: ownersFor,
    kafka: true,
    ownChecks: 'model per cycle, counts per cycle',
    seed: async (db, count, h) => {
      const { cycles, world } = streams(h.seed);
      const back = cycles.findIndex((c, i) => i > 0 && c.asOf < cycles[i - 1].asOf);
      // The days the step back could reach that the latest day before it pruned.
      const gap: [string, string] = [
        addDays(cycles[back].asOf, -RETENTION_DAYS),
        addDays(cycles[back - 1].asOf, -RETENTION_DAYS),
      ];
      const docs = owners(world, count, AS_OF, gap);
      await insertDocuments(db, docs);
      return docs.length;
    },
  },
  async (run) => {
    const { h, db } = run;
    // The seed step drew the same plan: it is replayed from the seed, not passed around.
    const { cycles, changes: draw } = streams(h.seed);
    h.say(`  s11 seed ${h.seed}: days ${cycles.map((c) => c.asOf).join(' ')}`);
    const pruneCutoffRule = await hasPruneCutoffTable(db);
    const relay: { proc: Proc; restarts: number } = { proc: run.startRelay(), restarts: 0 };
    const counter = commitCounter(db);
    await counter.start();
    const worker = { proc: run.workers[0], kills: 0, onCommit: 0 };
    const problems: string[] = [];
    const changes: string[] = [];
    let ledger: ModelLedger = { markers: [], pruneCutoff: null };
    let reminders = 0;
    let events = 0;
    let twins = 0;
    try {
      for (const [i, c] of cycles.entries()) {
        if (i > 0) changes.push(await changeWorld(db, draw, c.asOf, ownersFor(h.owners)));
        const documents = await readDocuments(db);
        const input: CycleInput = { ...FAULT_CYCLE, asOf: c.asOf, thresholdsDays: c.thresholdsDays };
        const handles = [await run.startCycle(input)];
        if (c.twin) handles.push(await run.startCycle(input));
        twins += c.twin ? 1 : 0;
        const results = await inflict(run, c, handles, counter, worker, relay);
        // Owners a fault left failed stay due: cycles with the same input finish the day's work.
        let pending = results.some(unfinished);
        for (let r = 0; pending && r < 3; r++) {
          const handle = await run.startCycle(input);
          handles.push(handle);
          results.push(await handle.result());
          pending = unfinished(results[results.length - 1]);
        }
        const model = runCycle(documents, ledger, {
          asOfDate: c.asOf,
          thresholdsDays: c.thresholdsDays,
          retentionDays: RETENTION_DAYS,
          pruneCutoffRule,
        });
        const label = `cycle ${i + 1} (${c.asOf}, ${c.thresholdsDays.join(',')})`;
        const markers = await readMarkers(db);
        const rows = await readEvents(
          db,
          handles.map((x) => x.workflowId),
        );
        problems.push(
          ...diffLines(`${label} markers`, model.ledger.markers.map(markerKey), markers.map(markerKey)),
          ...diffLines(
            `${label} events`,
            model.events.map(eventKey),
            rows.map((r) => eventKey(r.event)),
          ),
          ...countProblems(label, handles, results, rows),
          ...(pending ? [`${label}: still unfinished after 3 more cycles with its input`] : []),
        );
        reminders += rows.reduce((n, r) => n + r.event.documents.length, 0);
        events += rows.length;
        // The next cycle is judged from the ledger as it is, so one wrong cycle is reported once.
        ledger = { markers, pruneCutoff: model.ledger.pruneCutoff };
      }
      await waitFor('the relay to publish every outbox row', async () => (await outboxCount(db, true)) === 0, 120_000);
    } finally {
      await counter.stop();
    }
    const last = cycles[cycles.length - 1];
    return {
      detail:
        `seed ${h.seed}; ${cycles.length} cycles (${cycles[0].asOf} to ${last.asOf}, one back), ${twins} with a twin; ` +
        `${worker.kills} worker kills (${worker.onCommit} at a commit), 1 PostgreSQL restart` +
        `${relay.restarts ? `, the relay restarted ${relay.restarts}×` : ''}; ${reminders} reminders in ${events} events, ` +
        `model ${pruneCutoffRule ? 'with' : 'without'} the prune-cutoff bound; world changes: ${changes.slice(0, 2).join('; ')}…`,
      problems,
      judgedAt: {
        asOf: last.asOf,
        thresholds: last.thresholdsDays,
        prunedBefore: ledger.pruneCutoff ?? undefined,
      },
    };
  },
);

const unfinished = (r: CycleResult): boolean => r.status !== 'completed' || r.failedOwners > 0;

/**
 * The cycle's faults while it runs: the planned kills (each followed by a new worker), or a
 * PostgreSQL restart after its first commit; then every handle's result.
 */
async function inflict(
  run: CycleRun,
  c: PlannedCycle,
  handles: WorkflowHandle<CycleWorkflow>[],
  counter: ReturnType<typeof commitCounter>,
  worker: { proc: Proc; kills: number; onCommit: number },
  relay: { proc: Proc; restarts: number },
): Promise<CycleResult[]> {
  let done = false;
  const results = Promise.all(handles.map((x) => x.result())).finally(() => {
    done = true;
  });
  const before = counter.commits;
  const started = Date.now();
  const until = async (reached: () => boolean) => {
    while (!done && !reached()) await sleep(5);
    return !done;
  };
  if (c.restartPostgres) {
    if (await until(() => counter.commits > before)) {
      await run.db.admin.end();
      await run.h.stack.postgres.restart(3_000);
      run.db.admin = createPool({ connectionString: run.db.ownerUrl, max: 4 });
    }
  }
  for (const kill of c.kills) {
    const atCommit = 'afterCommits' in kill;
    const reached = atCommit
      ? () => counter.commits - before >= kill.afterCommits
      : () => Date.now() - started >= kill.afterMs;
    if (!(await until(reached))) break;
    await worker.proc.kill('SIGKILL');
    worker.kills++;
    worker.onCommit += atCommit ? 1 : 0;
    worker.proc = run.startWorker();
  }
  const out = await results;
  // Issue 19 item 4: a PostgreSQL restart may end the relay; the suite needs one running for I4.
  if (relay.proc.child.exitCode !== null) {
    relay.proc = run.startRelay();
    relay.restarts++;
  }
  return out;
}

/**
 * Each cycle's reported counts against its own outbox rows: reminders = documents listed, owners
 * notified = rows. Known to fail after a kill between a group's commit and its report (issue 19 item 6,
 * being fixed): the problem says so.
 */
function countProblems(
  label: string,
  handles: WorkflowHandle<CycleWorkflow>[],
  results: CycleResult[],
  rows: { cycle: string; event: ModelEvent }[],
): string[] {
  return handles.flatMap((handle, i) => {
    const own = rows.filter((r) => r.cycle === handle.workflowId);
    const held = own.reduce((n, r) => n + r.event.documents.length, 0);
    const { remindersSent, ownersNotified } = results[i];
    if (remindersSent === held && ownersNotified === own.length) return [];
    return [
      `COUNTS (issue 19 item 6, undercount after a kill): ${label} ${handle.workflowId} reported ` +
        `${remindersSent} reminders to ${ownersNotified} owners, its outbox rows hold ${held} to ${own.length}`,
    ];
  });
}

/** Whether the ledger remembers its prune cutoff (issue 19 item 1, migration 011): the model's bound follows. */
async function hasPruneCutoffTable(db: FaultDb): Promise<boolean> {
  const { rows } = await db.admin.query<{ found: boolean }>(
    `select to_regclass('profile.document_expiry_reminder_prune_cutoff') is not null as found`,
  );
  return rows[0].found;
}
