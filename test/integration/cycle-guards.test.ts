/**
 * What no run's input, no stuck lock and no unlucky timing may do to the ledger: each test starts real
 * cycles on the dev server against real PostgreSQL and checks the ledger, the outbox, the result and the
 * history. Each guards one way a cycle could send a wrong reminder, or none.
 */
import crypto from 'node:crypto';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import pg from 'pg';
import { ownerLockKeySql } from '../../src/activities/claim/sql/lock-owners';
import { ZERO_COUNTS } from '../../src/domain/cycle';
import { addDays, utcDate } from '../../src/domain/dates';
import { WORKFLOW_TYPE } from '../../src/domain/names';
import { holdOwnerLock, insertDocuments, markers, outbox } from '../support/data';
import { historyBytes } from '../support/history';
import { testConfig, testCycleSettings, type TestWorker } from '../support/stack';
import { waitFor } from '../support/wait';
import type { CycleWorkflow } from '../../src/workflows';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('cycle-guards', { client: true });
/** This test's worker: each test (or describe) starts its own, with the configuration it needs. */
let w: TestWorker;

beforeEach(async () => {
  await stack.db.admin.query(`
    drop trigger if exists slow_marks on profile.document_expiry_reminders;
    drop trigger if exists lose_page_one on profile.document_expiry_reminder_scan_positions;`);
});

/** The error a cycle failed with: the activity's ApplicationFailure message and type, or the workflow's. */
async function failureOf(handle: WorkflowHandle, timeoutMs = 30_000): Promise<{ type?: string; message: string }> {
  const outcome = await Promise.race([
    handle.result().then(
      (r) => ({ result: r as unknown }),
      (err: unknown) => ({ err }),
    ),
    new Promise<{ stuck: true }>((resolve) => setTimeout(() => resolve({ stuck: true }), timeoutMs)),
  ]);
  if ('stuck' in outcome) {
    await handle.terminate('stuck in the test');
    throw new Error(`${handle.workflowId} neither completed nor failed within ${timeoutMs} ms`);
  }
  if ('result' in outcome) throw new Error(`expected the cycle to fail, it returned ${JSON.stringify(outcome.result)}`);
  const err = outcome.err;
  if (!(err instanceof WorkflowFailedError)) throw err;
  let cause = err.cause as (Error & { type?: string }) | undefined;
  while (cause?.cause instanceof Error) cause = cause.cause as Error & { type?: string };
  return { type: cause?.type, message: cause?.message ?? err.message };
}

function startWith(input: unknown, workflowId?: string) {
  return stack.client.workflow.start<CycleWorkflow>(WORKFLOW_TYPE, {
    taskQueue: w.taskQueue,
    workflowId: workflowId ?? `test-cycle-${crypto.randomUUID()}`,
    args: [input as never],
  });
}

/** Every marker insert statement sleeps this long, so owners are in flight when the test acts. */
async function slowMarks(seconds: number): Promise<void> {
  await stack.db.admin.query(`
    create or replace function profile.slow_marks() returns trigger language plpgsql as $$
    begin perform pg_sleep(${seconds}); return null; end $$;
    create trigger slow_marks after insert on profile.document_expiry_reminders
      for each statement execute function profile.slow_marks();`);
}

describe('a run cannot undo the ledger', () => {
  beforeEach(async () => {
    w = await stack.startWorker();
  });

  test('asOf a year ahead (a typo for this year) is refused at start, naming the field and the value; nothing is sent or pruned', async () => {
    const today = utcDate(new Date());
    const typo = `${Number(today.slice(0, 4)) + 1}${today.slice(4)}`;
    // Valid for two more months today; "expired" as of the typo. An old marker the typo's prune would delete.
    await insertDocuments(stack.db.admin, today, [{ daysLeft: 60 }]);
    await stack.db.admin.query(
      `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
       values (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Passport', 7, $1, now())`,
      [addDays(today, 30)],
    );

    const failure = await failureOf(await stack.startCycle({ asOf: typo }, { taskQueue: w.taskQueue }));

    expect(failure.type).toBe('InvalidCycleInput');
    expect(failure.message).toContain(`asOf="${typo}": after today's UTC date (${today})`);
    expect(await outbox(stack.db.admin)).toEqual([]);
    expect(await markers(stack.db.admin)).toHaveLength(1);
  });

  test('retentionDays other than the configured one (0 from the Web UI) is refused; the configured value is accepted', async () => {
    const [old] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: -30 }]);
    await stack.db.admin.query(
      `insert into profile.document_expiry_reminders (id, document_id, owner_user_id, type, threshold_days, expires_at, reminded_at)
       values (gen_random_uuid(), $1, $2, 'Passport', 0, $3, now())`,
      [old.id, old.ownerUserId, old.expiresAt],
    );

    const failure = await failureOf(
      await stack.startCycle({ asOf: AS_OF_DATE, retentionDays: 0 }, { taskQueue: w.taskQueue }),
    );

    expect(failure.message).toContain(
      'retentionDays=0: expected the configured retention, 90 (REMINDER_RETENTION_DAYS)',
    );
    expect(await markers(stack.db.admin)).toHaveLength(1);
    const ok = await (
      await stack.startCycle({ asOf: AS_OF_DATE, retentionDays: 90 }, { taskQueue: w.taskQueue })
    ).result();
    expect(ok).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 0, pruned: 0 }));
    expect(await markers(stack.db.admin)).toHaveLength(1);
  });

  test.each([
    ['null', null, 'the input must be an object such as {} or {"asOf": "2026-12-01"}, got null'],
    ['a string', '2026-09-02', 'got the string "2026-09-02"'],
    [
      'an unknown field (a typo for asOf)',
      { asof: '2026-09-02' },
      'unknown field "asof": expected only asOf, thresholdsDays',
    ],
    ['a null continuation', { continuation: null }, 'continuation: expected an object with settings'],
    [
      'a thresholds list with ten years and more',
      { thresholdsDays: [36500, 7] },
      'every threshold must be at most 3650 days',
    ],
  ])(
    'input with %s fails the cycle once, with a message, instead of looping on workflow-task failures',
    async (_what, input, message) => {
      await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }]);

      const failure = await failureOf(await startWith(input), 20_000);

      expect(failure.message).toContain(message);
      expect(await outbox(stack.db.admin)).toEqual([]);
    },
  );

  test('a continuation from outside, well formed, is refused before it reads or writes anything', async () => {
    await insertDocuments(
      stack.db.admin,
      AS_OF_DATE,
      Array.from({ length: 5 }, () => ({ daysLeft: 7 })),
    );
    const settings = testCycleSettings(AS_OF_DATE, { batchSize: 2 });
    const continuation = {
      settings,
      startedAtMs: Date.now() - 1_000,
      counts: { ...ZERO_COUNTS, pages: 2 },
      runs: 2,
      busyOwnerIds: [],
    };

    const failure = await failureOf(await startWith({ continuation }));

    expect(failure.type).toBe('InvalidCycleInput');
    expect(failure.message).toContain('continuation: only a run that continued as new may carry one');
    expect(await outbox(stack.db.admin)).toEqual([]);
  });

  test('a workflow id longer than correlation_id holds is refused at start instead of failing every owner', async () => {
    await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }]);

    const failure = await failureOf(await startWith({ asOf: AS_OF_DATE }, `manual-${'x'.repeat(200)}`));

    expect(failure.message).toContain('is 207 characters long: expected at most 128');
    expect(await markers(stack.db.admin)).toEqual([]);
  });
});

describe('a busy owner is retried, never dropped for the day', () => {
  const holdOwner = (ownerUserId: string) => holdOwnerLock(stack.db.worker, ownerUserId);

  test('an owner locked by another transaction at its turn is retried later in the cycle and reminded', async () => {
    w = await stack.startWorker();
    const [held, other] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }, { daysLeft: 1 }]);
    const release = await holdOwner(held.ownerUserId);
    const handle = await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue: w.taskQueue });
    await waitFor(async () => (await outbox(stack.db.admin)).length === 1);
    await release();

    const result = await handle.result();

    expect(result).toEqual(
      expect.objectContaining({
        status: 'completed',
        ownersBusy: 1,
        failedOwners: 0,
        remindersSent: 2,
        ownersProcessed: 2,
      }),
    );
    expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual(
      [held.ownerUserId, other.ownerUserId].sort(),
    );
  });

  test("a support login holding an owner's lock in its session (pg_advisory_lock, PUBLIC's) is ended at the cycle's retry of that owner, who is reminded in that cycle", async () => {
    w = await stack.startWorker();
    const [held, other] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }, { daysLeft: 1 }]);
    const support = new pg.Client({ connectionString: stack.db.supportUrl });
    const lost: Error[] = [];
    support.on('error', (err) => lost.push(err));
    await support.connect();
    try {
      await support.query(`select pg_advisory_lock(${ownerLockKeySql('$1::uuid')})`, [held.ownerUserId]);

      const result = await (await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue: w.taskQueue })).result();

      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', ownersBusy: 1, failedOwners: 0, remindersSent: 2 }),
      );
      expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id).sort()).toEqual(
        [held.ownerUserId, other.ownerUserId].sort(),
      );
      await expect(support.query('select 1')).rejects.toThrow();
      expect(w.logs.messages('support session held an owner lock, ended it')).toHaveLength(1);
    } finally {
      await support.end().catch(() => {});
    }
  });

  test('an owner still locked when the retry window ends counts as failed (the workflow logs it by id, the errors metric counts it)', async () => {
    // 1 s idle-in-transaction timeout: the busy owners get 2 × 1 s + 10 s of retries.
    w = await stack.startWorker({ config: testConfig({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '1s' }) });
    const [held] = await insertDocuments(stack.db.admin, AS_OF_DATE, [{ daysLeft: 7 }, { daysLeft: 1 }]);
    const release = await holdOwner(held.ownerUserId);
    try {
      const result = await (await stack.startCycle({ asOf: AS_OF_DATE }, { taskQueue: w.taskQueue })).result();

      expect(result).toEqual(
        expect.objectContaining({ status: 'completed', ownersBusy: 1, failedOwners: 1, remindersSent: 1 }),
      );
    } finally {
      await release();
    }
    expect((await outbox(stack.db.admin)).map((r) => r.aggregate_id)).not.toContain(held.ownerUserId);
  });
});

describe('a cycle ends cleanly whatever arrives while it waits', () => {
  beforeEach(async () => {
    w = await stack.startWorker();
    // Six due owners whose marks take two seconds a statement: the cycle is still running when the test acts.
    await insertDocuments(
      stack.db.admin,
      AS_OF_DATE,
      Array.from({ length: 6 }, () => ({ daysLeft: 7 })),
    );
    await slowMarks(2);
  });

  test('a claim whose previous page lost its recorded end fails the cycle once (ScanPositionMissing, not retried)', async () => {
    // Page 1's end position vanishes as it is written, so the claim of page 2 fails for good.
    await stack.db.admin.query(`
      create or replace function profile.lose_page_one() returns trigger language plpgsql as $$
      begin delete from profile.document_expiry_reminder_scan_positions where cycle_id = new.cycle_id and page = 1; return null; end $$;
      create trigger lose_page_one after insert or update on profile.document_expiry_reminder_scan_positions
        for each row when (new.page = 1) execute function profile.lose_page_one();`);

    const handle = await stack.startCycle(
      { asOf: AS_OF_DATE, batchSize: 3, pagesPerClaim: 1 },
      { taskQueue: w.taskQueue },
    );
    const failure = await failureOf(handle);

    expect(failure.type).toBe('ScanPositionMissing');
    // One attempt: the failure is not retried.
    const { events } = await handle.fetchHistory();
    const page2 = (events ?? []).filter((e) => e.activityTaskStartedEventAttributes).at(-1);
    expect(page2?.activityTaskStartedEventAttributes?.attempt).toBe(1);
  });

  test('a cancel request while the claim before a hand-over runs stops the cycle there', async () => {
    // The smallest history budget and a page per claim: the run would continue as new after its first claim.
    const handle = await stack.startCycle(
      {
        asOf: AS_OF_DATE,
        batchSize: 2,
        maxHistoryEvents: 10,
        pagesPerClaim: 1,
      },
      { taskQueue: w.taskQueue },
    );
    await waitFor(async () => {
      const { rows } = await stack.db.admin.query(`select 1 from pg_stat_activity where wait_event = 'PgSleep'`);
      return rows.length > 0;
    });
    await handle.cancel();

    const result = await handle.result();

    expect(result).toEqual(expect.objectContaining({ status: 'cancelled', runs: 1, pages: 1, remindersSent: 2 }));
    expect(await outbox(stack.db.admin)).toHaveLength(2);
  });
});

test('no document value in any run of a cycle that pages one document at a time and continues as new', async () => {
  w = await stack.startWorker();
  const docs = await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    [3, 5, 6, 9, 12, 20].map((daysLeft) => ({ daysLeft, numberMask: `**** ${crypto.randomInt(100000, 999999)}` })),
  );
  const handle = await stack.startCycle(
    {
      asOf: AS_OF_DATE,
      batchSize: 1,
      maxHistoryEvents: 10,
      pagesPerClaim: 1,
    },
    { taskQueue: w.taskQueue },
  );
  const result = await handle.result();
  expect(result).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 6 }));
  expect(result.runs).toBeGreaterThan(3);

  // Every run of the chain, first to last.
  const histories: Buffer[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    const target: WorkflowHandle = stack.client.workflow.getHandle<CycleWorkflow>(handle.workflowId, runId);
    histories.push(await historyBytes(target));
    const events = (await target.fetchHistory()).events;
    runId = events?.[events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  expect(histories).toHaveLength(result.runs);
  for (const history of histories) {
    for (const doc of docs) {
      expect([doc.expiresAt, history.includes(doc.expiresAt!)]).toEqual([doc.expiresAt, false]);
      expect(history.includes(doc.numberMask)).toBe(false);
    }
  }
  // The positions stay in PostgreSQL only while the cycle runs.
  const { rows } = await stack.db.admin.query(
    'select * from profile.document_expiry_reminder_scan_positions where cycle_id = $1',
    [handle.firstExecutionRunId],
  );
  expect(rows).toEqual([]);
});
