/**
 * The recorded paths through the workflow: each scenario seeds a fresh database, runs one cycle on the
 * recorder's worker, and checks that the cycle took the path the scenario is named for, so a fixture
 * never silently records some other path.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import {
  WorkflowFailedError,
  type Client,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type pg from 'pg';
import type { CycleInput, CycleResult } from '../../src/domain/cycle';
import { WORKFLOW_TYPE } from '../../src/domain/names';
import { addDays } from '../../src/domain/dates';
import type { CycleWorkflow } from '../../src/workflows';
import { insertDocuments, rejectOwner } from '../stack/documents';

/** Every cycle runs as of this day, so the seeded data means the same thing whenever it is recorded. */
const AS_OF_DATE = '2026-09-02';

/** What a scenario gets from the recorder. */
interface ScenarioContext {
  client: Client;
  taskQueue: string;
  /** Owner connection: seeds data and installs test triggers. */
  admin: pg.Pool;
  log: (line: string) => void;
}

/** One recorded path through the workflow. */
export interface Scenario {
  name: string;
  /** Seeds data, runs the cycle to its end, checks its outcome; returns its handle (first run). */
  run(ctx: ScenarioContext): Promise<WorkflowHandleWithFirstExecutionRunId>;
}

/**
 * The recorded paths through the workflow. Each stays small (a handful of owners) so a fixture is a
 * few hundred lines of JSON and replays in milliseconds.
 */
export const SCENARIOS: Scenario[] = [
  {
    // A small day of several pages in one claim, an owner with documents on two pages, an expired
    // document, an owner that fails for good (errcode 22023 from a trigger: non-retryable), and prune.
    name: 'normal',
    async run(ctx) {
      const bad = crypto.randomUUID();
      const twoDocs = crypto.randomUUID();
      await insertDocuments(ctx.admin, AS_OF_DATE, [
        { daysLeft: -3 },
        { daysLeft: 0, ownerUserId: bad },
        { daysLeft: 1, ownerUserId: twoDocs },
        { daysLeft: 5 },
        { daysLeft: 7 },
        { daysLeft: 25, ownerUserId: twoDocs },
        { daysLeft: 30 },
        { daysLeft: 45 },
        { daysLeft: null },
      ]);
      await insertMarker(ctx.admin, addDays(AS_OF_DATE, -120));
      await rejectOwner(ctx.admin, bad);
      const handle = await start(ctx, 'normal', {
        asOf: AS_OF_DATE,
        batchSize: 3,
        ownerConcurrency: 4,
        ownerGroupSize: 2,
      });
      const result = await handle.result();
      check(
        'normal',
        result,
        (r) => r.status === 'completed' && r.failedOwners === 1 && r.pages >= 3 && r.pruned === 1 && r.runs === 1,
      );
      return handle;
    },
  },
  {
    // Pages of 2 owners, a claim per page and a history budget of 32 events: the first run starts fresh and
    // continues as new, a middle run starts from a continuation and continues as new, the last one completes.
    name: 'continued-as-new',
    async run(ctx) {
      await insertOwners(ctx, 9, (i) => i % 8);
      const handle = await start(ctx, 'continued-as-new', {
        asOf: AS_OF_DATE,
        batchSize: 2,
        maxHistoryEvents: 32,
        pagesPerClaim: 1,
      });
      const result = await handle.result();
      check('continued-as-new', result, (r) => r.status === 'completed' && r.runs >= 3 && r.ownersProcessed === 9);
      return handle;
    },
  },
  {
    // Cancelled while a claim runs: the claim in flight finishes, nothing new starts, no prune.
    name: 'cancelled',
    async run(ctx) {
      await insertOwners(ctx, 6, () => 7);
      await slowOwners(ctx.admin);
      const handle = await start(ctx, 'cancelled', {
        asOf: AS_OF_DATE,
        ownerConcurrency: 1,
        batchSize: 2,
        pagesPerClaim: 1,
      });
      await waitForScheduled(handle, ['claimPage'], 1);
      await handle.cancel();
      const result = await handle.result();
      check(
        'cancelled',
        result,
        (r) => r.status === 'cancelled' && r.ownersProcessed > 0 && r.ownersProcessed < 6 && r.pruned === 0,
      );
      return handle;
    },
  },
  {
    // MaxRunDuration passes while a claim runs: the cycle ends as time-limit, and still prunes.
    name: 'time-limit',
    async run(ctx) {
      await insertOwners(ctx, 6, () => 1);
      await insertMarker(ctx.admin, addDays(AS_OF_DATE, -200));
      await slowOwners(ctx.admin);
      const handle = await start(ctx, 'time-limit', {
        asOf: AS_OF_DATE,
        ownerConcurrency: 1,
        batchSize: 2,
        pagesPerClaim: 1,
        maxRunDurationMs: 1_000,
      });
      const result = await handle.result();
      check('time-limit', result, (r) => r.status === 'time-limit' && r.ownersProcessed < 6 && r.pruned === 1);
      return handle;
    },
  },
  {
    // A day in two partitions (child workflows over two id ranges), one owner with a document in each;
    // pages of 2 and a budget of 40 events, so the first partition continues as new.
    name: 'partitioned',
    async run(ctx) {
      const owner = crypto.randomUUID();
      await insertDocuments(ctx.admin, AS_OF_DATE, [
        { id: `1${crypto.randomUUID().slice(1)}`, ownerUserId: owner, daysLeft: 1 },
        { id: `c${crypto.randomUUID().slice(1)}`, ownerUserId: owner, daysLeft: 7 },
      ]);
      // Forty more owners, all in the first partition's id range, so that partition continues as new (its
      // activities claim up to 8 pages of 2 each: with the default, 64, one activity would claim them all).
      await insertDocuments(
        ctx.admin,
        AS_OF_DATE,
        Array.from({ length: 40 }, (_, i) => ({ id: `2${crypto.randomUUID().slice(1)}`, daysLeft: i % 8 })),
      );
      const handle = await start(ctx, 'partitioned', {
        asOf: AS_OF_DATE,
        partitions: 2,
        batchSize: 2,
        ownerGroupSize: 2,
        maxHistoryEvents: 24,
        pagesPerClaim: 8,
      });
      const result = await handle.result();
      check(
        'partitioned',
        result,
        (r) => r.status === 'completed' && r.partitions === 2 && r.ownersNotified === 41 && r.remindersSent === 42,
      );
      return handle;
    },
  },
  {
    // Invalid input: resolveCycleSettings fails non-retryably, the cycle marks its outcome and fails.
    name: 'failed-invalid-input',
    async run(ctx) {
      const handle = await start(ctx, 'failed-invalid-input', { thresholdsDays: [7, 30], batchSize: 0 });
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      const type =
        err instanceof WorkflowFailedError ? (err.cause?.cause as { type?: string } | undefined)?.type : undefined;
      if (type !== 'InvalidCycleInput') {
        throw new Error(`failed-invalid-input: expected the cycle to fail with InvalidCycleInput, got ${String(err)}`);
      }
      return handle;
    },
  },
];

function start(ctx: ScenarioContext, name: string, input: CycleInput): Promise<WorkflowHandleWithFirstExecutionRunId> {
  return ctx.client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue: ctx.taskQueue,
    workflowId: `replay-fixture-${name}-${crypto.randomBytes(3).toString('hex')}`,
    args: [input],
  });
}

function check(name: string, result: CycleResult, ok: (r: CycleResult) => boolean): void {
  if (!ok(result))
    throw new Error(`${name}: the cycle did not take the path this fixture is for: ${JSON.stringify(result)}`);
}

/** A ledger row of a document that expired on `expiresAt`, for the prune to delete. */
async function insertMarker(admin: pg.Pool, expiresAt: string): Promise<void> {
  await admin.query(
    `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
     values (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'ForeignPassport', 0, $1, now() - interval '200 days')`,
    [expiresAt],
  );
}

/** Every owner transaction takes at least 0.4 s, so a cancel or a deadline lands mid-claim. */
async function slowOwners(admin: pg.Pool): Promise<void> {
  await admin.query(`
    create function profile.replay_fixture_slow() returns trigger language plpgsql as $$
    begin perform pg_sleep(0.4); return null; end $$;
    create trigger replay_fixture_slow after insert on profile.document_expiry_reminders
      for each statement execute function profile.replay_fixture_slow();`);
}

/** One document each for `count` new owners, the i-th expiring `daysLeft(i)` days after AsOf. */
async function insertOwners(ctx: ScenarioContext, count: number, daysLeft: (i: number) => number): Promise<void> {
  await insertDocuments(
    ctx.admin,
    AS_OF_DATE,
    Array.from({ length: count }, (_, i) => ({ daysLeft: daysLeft(i) })),
  );
}

/** Removes what a scenario installed and seeded, so the next one starts from empty tables. */
export async function dropTestTriggers(admin: pg.Pool): Promise<void> {
  await admin.query(`
    drop trigger if exists test_reject_owner on profile.document_expiry_reminders;
    drop function if exists profile.test_reject_owner();
    drop trigger if exists replay_fixture_slow on profile.document_expiry_reminders;
    drop function if exists profile.replay_fixture_slow();
    truncate profile.person_documents, profile.document_expiry_reminders, profile.outbox_messages,
    profile.document_expiry_reminder_prune_cutoff, profile.outbox_events;`);
}

/** Waits until the run has scheduled `count` activities of one of `types`. */
async function waitForScheduled(handle: WorkflowHandle, types: string[], count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { events } = await handle.fetchHistory();
    const scheduled = (events ?? []).filter((e) =>
      types.includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    );
    if (scheduled.length >= count) return;
    await sleep(100);
  }
  throw new Error(`${handle.workflowId}: ${count} ${types.join(' or ')} activities were not scheduled within 30 s`);
}
