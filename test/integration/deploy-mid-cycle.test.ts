/**
 * A deploy in the middle of a cycle (docs/SAFE-DEPLOYS.md): a partitioned cycle that a worker of the previous
 * landing (`bench/compare-base`, exported from git) started is finished by a worker of this code, as a rolling
 * deploy does it. The previous landing runs from its own source, with its own workflow bundle.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { prepareRevision, resolveRevisions } from '../../bench/compare/revisions';
import { partitionWorkflowId } from '../../src/domain/cycle';
import { firstRunIdOf, runHistories } from '../../src/temporal/histories';
import { WORKFLOWS_PATH, workflowSideOptions } from '../../src/temporal/worker';
import { createTracing } from '../../src/observability/tracing';
import { insertDocuments, outbox } from '../support/data';
import { startEntryProcess } from '../support/processes';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';

const ROOT = path.resolve(__dirname, '..', '..');
const AS_OF_DATE = '2026-09-02';
const OWNERS = 240;

const stack = useIntegration('deploy-mid-cycle', { client: true });

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The JSON of an event's first payload, as the default converter wrote it. */
const payloadOf = (payloads: { data?: Uint8Array | null }[] | null | undefined): unknown =>
  payloads?.[0]?.data ? JSON.parse(Buffer.from(payloads[0].data).toString('utf8')) : undefined;

/** The `claimPage` activities of a history: each one's input, and the identity of the worker that ran it. */
function pageClaims(events: HistoryEvent[]): { input: { page: number; pages?: number }; identity: string }[] {
  const scheduled = new Map<string, { page: number; pages?: number }>();
  const claims: { input: { page: number; pages?: number }; identity: string }[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'claimPage') {
      scheduled.set(String(e.eventId), payloadOf(s.input?.payloads) as { page: number; pages?: number });
    }
    const started = e.activityTaskStartedEventAttributes;
    const input = started && scheduled.get(String(started.scheduledEventId));
    if (started && input) claims.push({ input, identity: started.identity ?? '' });
  }
  return claims;
}

test('a partitioned cycle a worker of the previous landing started is finished by this code: one event per owner, its histories replay', async () => {
  const base = fs.readFileSync(path.join(ROOT, 'bench', 'compare-base'), 'utf8').trim();
  const [previous] = resolveRevisions([base]);
  prepareRevision(previous, () => {});
  const previousHasPagesPerClaim = fs
    .readFileSync(path.join(previous.dir, 'src', 'workflows', 'cycle.ts'), 'utf8')
    .includes('pages-per-claim-v1');
  await insertDocuments(
    stack.db.admin,
    AS_OF_DATE,
    Array.from({ length: OWNERS }, (_, i) => ({ daysLeft: i % 8 })),
  );
  // Each claim statement takes 100 ms longer, so the previous worker is still in the middle of the day when
  // it stops.
  await stack.db.admin.query(`
    create function profile.test_slow_claim() returns trigger language plpgsql as $$
    begin perform pg_sleep(0.1); return null; end $$;
    create trigger test_slow_claim before insert on profile.document_expiry_reminders
      for each statement execute function profile.test_slow_claim();`);
  const taskQueue = `test-${crypto.randomUUID()}`;
  stack.trackTaskQueue(taskQueue);
  const old = await startEntryProcess({
    root: previous.dir,
    entry: 'worker',
    env: { DATABASE_URL: stack.db.workerUrl, TEMPORAL_TASK_QUEUE: taskQueue, METRICS_PORT: '0', LOG_LEVEL: 'info' },
    ready: 'worker started',
    // It bundles its own workflow code, not this clone's.
    unset: ['WORKFLOW_BUNDLE_PATH'],
  });
  let oldStopped = false;
  try {
    const handle = await stack.startCycle({ asOf: AS_OF_DATE, partitions: 2, batchSize: 5 }, { taskQueue });
    const first = partitionWorkflowId(handle.workflowId, { index: 0, count: 2 });
    const claimed = async () => {
      try {
        const { events } = await stack.client.workflow.getHandle(first).fetchHistory();
        return (events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length;
      } catch {
        return 0;
      }
    };
    // Three page claims of the previous worker.
    await waitFor(async () => (await claimed()) >= 3, 60_000);
    expect(await old.stop()).toBe(0);
    oldStopped = true;
    await stack.db.admin.query('drop trigger test_slow_claim on profile.document_expiry_reminders');
    await stack.startWorker({ taskQueue, identity: 'this-code' });

    const result = await handle.result();

    expect(result).toEqual(
      expect.objectContaining({ status: 'completed', partitions: 2, remindersSent: OWNERS, ownersNotified: OWNERS }),
    );
    const events = await outbox(stack.db.admin);
    expect(new Set(events.map((e) => e.aggregate_id)).size).toBe(OWNERS);
    expect(events).toHaveLength(OWNERS);

    // Both workers claimed pages of the first partition; its histories replay against this code.
    const runs = await runHistories(stack.client, {
      workflowId: first,
      firstExecutionRunId: await firstRunIdOf(stack.client, first),
    });
    const claims = runs.flatMap((r) => pageClaims(r.history.events ?? []));
    const identities = new Set(claims.map((c) => c.identity));
    expect(identities.has('this-code')).toBe(true);
    expect(identities.size).toBe(2);
    if (!previousHasPagesPerClaim) {
      // The previous worker asked for one page at a time; this code asks for several from its first new
      // command on, in the same run.
      expect(claims.some((c) => c.input.pages === undefined)).toBe(true);
      expect(claims.some((c) => c.input.pages === 8)).toBe(true);
    }
    const { workflowModules, sinks } = workflowSideOptions(
      createTracing({ serviceName: 'deploy-test' }),
      undefined,
      false,
    );
    const replayed = Worker.runReplayHistories(
      {
        workflowsPath: WORKFLOWS_PATH,
        interceptors: { workflowModules },
        sinks,
        replayName: 'deploy-mid-cycle',
      },
      runs.map((r) => ({ workflowId: first, history: r.history })),
    );
    for await (const r of replayed) expect(r.error).toBeUndefined();
  } finally {
    if (!oldStopped) await old.stop();
  }
});
