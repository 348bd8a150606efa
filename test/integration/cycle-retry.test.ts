/**
 * Claims retried inside a real cycle (issue 46), on the local stack: a worker whose first attempts die at their
 * claim transactions, on the layout that made a retry's work the table's (a straggler below a reminded window),
 * with a small history limit so the run continues as new between claims. The run accepts its own
 * continuation every time, and its result equals, field by field, the same day's without the faults.
 */
import type pg from 'pg';
import type { CycleInput, CycleResult } from '../../src/domain/cycle';
import { partitionWorkflowId, ZERO_COUNTS } from '../../src/domain/cycle';
import { observedPool } from '../support/claims';
import { forgetCycles, outbox, seedStragglerDay } from '../support/data';
import { useIntegration } from '../support/harness';

const AS_OF_DATE = '2026-09-02';

const stack = useIntegration('cycle-retry', { client: true });

/** The worker's pool, failing every `every`-th claim transaction at its BEGIN: its attempt fails there. */
function claimsDying(every: number): { pool: pg.Pool; died: () => number } {
  let claims = 0;
  let died = 0;
  const pool = observedPool(stack.db.worker, (text) => {
    if (!/^BEGIN/i.test(text) || /READ ONLY/i.test(text)) return;
    claims += 1;
    if (claims % every !== 0) return;
    died += 1;
    throw new Error(`claim transaction ${claims}: its attempt died`);
  });
  return { pool, died: () => died };
}

/** The counts of a result: what must not depend on faults. */
const countsOf = (r: CycleResult) =>
  Object.fromEntries(Object.keys(ZERO_COUNTS).map((k) => [k, r[k as keyof typeof ZERO_COUNTS]]));

test.each([
  ["in the cycle's own run", 1],
  ['in two partitions', 2],
])(
  'claims retried after their pages committed, %s, continuing as new between claims: the run completes, and its counts equal the day without the faults',
  async (_, partitions) => {
    await seedStragglerDay(stack.db.admin, AS_OF_DATE, { reminded: 300, due: 40 });
    const input: CycleInput = { asOf: AS_OF_DATE, batchSize: 4, pagesPerClaim: 2, maxHistoryEvents: 20, partitions };
    const clean = await stack.startWorker();
    const expected = await (await stack.startCycle(input, { taskQueue: clean.taskQueue })).result();
    await clean.stop();
    expect(expected).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 41, documentsSeen: 41 }));
    await forgetCycles(stack.db.admin);

    const dying = claimsDying(2);
    const faulty = await stack.startWorker({ pool: dying.pool });
    const result = await (await stack.startCycle(input, { taskQueue: faulty.taskQueue })).result();

    expect(dying.died()).toBeGreaterThanOrEqual(3);
    expect(result.status).toBe('completed');
    expect(countsOf(result)).toEqual(countsOf(expected));
    // The runs that claimed pages continued as new: the cycle's own, or each partition's.
    const continued = async (workflowId: string) => {
      const { runId, raw } = await stack.client.workflow.getHandle(workflowId).describe();
      return runId !== raw.workflowExecutionInfo?.firstRunId;
    };
    const claimers =
      partitions === 1
        ? [result.jobRunId]
        : [0, 1].map((index) => partitionWorkflowId(result.jobRunId, { index, count: partitions }));
    for (const id of claimers) expect(await continued(id)).toBe(true);
    const events = await outbox(stack.db.admin);
    expect(events).toHaveLength(41);
    expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(41);
  },
  180_000,
);
