/**
 * Where a cycle ran, read from its histories the way an operator would check a deploy: the build id each
 * workflow task of the cycle and its partitions completed on, and the identity of the worker that ran each
 * activity. And a gate that holds a cycle open, deterministically, while a test changes the routing.
 */
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type pg from 'pg';
import type { temporal } from '@temporalio/proto';
import { runHistories, startedChildren } from '../../src/temporal/histories';
import { waitFor } from './wait';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The events of every run of `workflowId` and of every child it started, recursively. */
async function eventsOfTree(client: Client, workflowId: string, firstExecutionRunId: string): Promise<HistoryEvent[]> {
  const runs = await runHistories(client, { workflowId, firstExecutionRunId });
  const children = await Promise.all(
    startedChildren(runs).map((c) => eventsOfTree(client, c.workflowId, c.firstExecutionRunId)),
  );
  return [...runs.flatMap((r) => r.history.events ?? []), ...children.flat()];
}

/** Where a cycle and its partitions ran. */
export interface Placement {
  /** The build id of each workflow task completed, `(unversioned)` for a worker without a version. */
  workflowTaskBuildIds: Set<string>;
  /** The identity of the worker of each activity started. */
  activityIdentities: Set<string>;
  /** The cycle and its partitions. */
  workflows: number;
  /** Their runs: more than `workflows` when one continued as new. */
  runs: number;
  activities: number;
}

/** Where the cycle of `handle` ran, once it has ended. */
export async function placement(client: Client, handle: WorkflowHandleWithFirstExecutionRunId): Promise<Placement> {
  const events = await eventsOfTree(client, handle.workflowId, handle.firstExecutionRunId);
  const activities = events.flatMap((e) =>
    e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.identity ?? ''] : [],
  );
  return {
    workflowTaskBuildIds: new Set(
      events.flatMap((e) =>
        e.workflowTaskCompletedEventAttributes
          ? [e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId || '(unversioned)']
          : [],
      ),
    ),
    activityIdentities: new Set(activities),
    workflows: 1 + events.filter((e) => e.childWorkflowExecutionStartedEventAttributes).length,
    runs: events.filter((e) => e.workflowExecutionStartedEventAttributes).length,
    activities: activities.length,
  };
}

/** The advisory lock the gate holds; no key the job uses (owners' keys are hashes of their ids). */
const GATE_KEY = 4242;

/**
 * Holds every claim statement until the returned `open`: each waits in a trigger for the test's advisory lock,
 * so a cycle is certainly open while the test changes the current version. `waiting` resolves once a claim
 * waits at the gate (the cycle is open and claiming).
 */
export async function closeClaimGate(admin: pg.Pool): Promise<{ waiting(): Promise<void>; open(): Promise<void> }> {
  await admin.query(`
    create or replace function profile.test_claim_gate() returns trigger language plpgsql as $$
    begin perform pg_advisory_xact_lock_shared(${GATE_KEY}); return null; end $$;
    create trigger test_claim_gate before insert on profile.document_expiry_reminders
      for each statement execute function profile.test_claim_gate();`);
  const holder = await admin.connect();
  await holder.query('select pg_advisory_lock($1)', [GATE_KEY]);
  let opened = false;
  return {
    waiting: () =>
      waitFor(async () => {
        const { rows } = await admin.query<{ n: number }>(
          `select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = $1 and not granted`,
          [GATE_KEY],
        );
        return rows[0].n > 0;
      }, 60_000),
    open: async () => {
      if (opened) return;
      opened = true;
      await holder.query('select pg_advisory_unlock($1)', [GATE_KEY]);
      holder.release();
      await admin.query('drop trigger test_claim_gate on profile.document_expiry_reminders');
    },
  };
}
