/**
 * What only Temporal's history knows for `explain`: the cycles as of a day, and whether one of them met an
 * owner busy (another transaction held its lock) or failing. A claim returns such owners by id
 * (`busyOwnerIds`, `failed`) in the result of its `claimPage` or `remindOwners` activity, the only place an
 * owner id is kept once the cycle ended (its scan positions are deleted by its prune). Read-only.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { idRanges } from '../db/candidates';
import { partitionOfWorkflowId } from '../domain/cycle';
import { addDays } from '../domain/dates';
import type { CycleOfDay, OwnerMet, PartitionOfDay } from '../domain/explain';
import { REMINDER_OUTCOME } from '../domain/search-attributes';
import { WORKFLOW_TYPE } from '../domain/names';
import {
  endedActivities,
  firstRunIdOf,
  runHistories,
  startedChildren,
  type EndedActivity,
} from '../temporal/histories';

/** How many of the day's cycles, newest first, have their histories read (a day has one, or a few reruns). */
const CYCLES_READ = 5;

/** How many distinct runs of an owner's markers `explain` looks up by run id (a year holds a few dozen). */
const RUNS_LOOKED_UP = 100;

/** Where the Web UI shows a run: a link under `uiUrl` (TEMPORAL_UI_URL), or without it the path under the UI's address. */
type WebUi = (workflowId: string, runId: string) => string;

function webUiOf(uiUrl: string | undefined, namespace: string): WebUi {
  return (workflowId, runId) =>
    `${uiUrl ?? ''}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`;
}

/** The visibility query for the cycles on `taskQueue` as of `asOfDate` (their ReminderAsOf falls on that day). */
function cyclesOfDayQuery(taskQueue: string, asOfDate: string): string {
  return (
    `WorkflowType = ${JSON.stringify(WORKFLOW_TYPE)} AND TaskQueue = ${JSON.stringify(taskQueue)} ` +
    `AND ExecutionStatus != "ContinuedAsNew" ` +
    `AND ReminderAsOf >= "${asOfDate}T00:00:00Z" AND ReminderAsOf < "${addDays(asOfDate, 1)}T00:00:00Z"`
  );
}

/**
 * Whether a partition (`<cycle id>/partition-<i>-of-<K>`) scans one of `documentIds`: only such a partition
 * pages the owner, since each scans one id range. Any other workflow (the cycle itself) may.
 */
function mayMeet(workflowId: string, documentIds: readonly string[]): boolean {
  const partition = partitionOfWorkflowId(workflowId);
  const range = partition && idRanges(partition.count)[partition.index];
  if (!range) return true;
  const [from, until] = range;
  return documentIds.some((id) => id >= from && (until === null || id < until));
}

/**
 * What a claim activity that ended says of an owner: nothing, busy or failed (with the error) as its result
 * reports them, failed when the whole activity failed with the owner in its input, or claimed when its input
 * names the owner and its result does not (a busy retry).
 */
export function ownerOutcome(
  activity: Omit<EndedActivity, 'activityType' | 'activityId'>,
  ownerUserId: string,
): { outcome: 'busy' | 'failed' | 'claimed'; error?: string } | undefined {
  const input = activity.input as { ownerUserIds?: unknown } | null | undefined;
  const named = Array.isArray(input?.ownerUserIds) && input.ownerUserIds.includes(ownerUserId);
  if (activity.failure !== undefined) return named ? { outcome: 'failed', error: activity.failure } : undefined;
  const result = activity.result as { busyOwnerIds?: unknown; failed?: unknown } | null | undefined;
  if (!result || !Array.isArray(result.busyOwnerIds) || !Array.isArray(result.failed)) return undefined;
  const failed = (result.failed as { ownerUserId?: unknown; error?: unknown }[]).find(
    (f) => f.ownerUserId === ownerUserId,
  );
  if (failed) return { outcome: 'failed', error: String(failed.error) };
  if ((result.busyOwnerIds as unknown[]).includes(ownerUserId)) return { outcome: 'busy' };
  return named ? { outcome: 'claimed' } : undefined;
}

type Run = Awaited<ReturnType<typeof runHistories>>[number];

/** Whether a workflow's latest run is still open: its history does not end with a close event. */
function isOpen(chain: readonly Run[]): boolean {
  const last = chain.at(-1)?.history.events?.at(-1);
  return !(
    last?.workflowExecutionCompletedEventAttributes ||
    last?.workflowExecutionFailedEventAttributes ||
    last?.workflowExecutionTimedOutEventAttributes ||
    last?.workflowExecutionTerminatedEventAttributes ||
    last?.workflowExecutionCanceledEventAttributes ||
    last?.workflowExecutionContinuedAsNewEventAttributes
  );
}

/** Each read partition of the cycle as it stands: its range, whether it runs, how its result says it ended. */
function partitionsOf(workflows: readonly { workflowId: string; runs: readonly Run[] }[]): PartitionOfDay[] {
  return workflows.flatMap(({ workflowId, runs }) => {
    const partition = partitionOfWorkflowId(workflowId);
    const range = partition && idRanges(partition.count)[partition.index];
    const last = runs.at(-1);
    if (!range || !last) return [];
    const outcome = resultStatusInHistory(last.history);
    return [{ workflowId, runId: last.runId, range, running: isOpen(runs), ...(outcome ? { outcome } : {}) }];
  });
}

/**
 * Where the cycle (its own runs and its partitions') last met the owner without claiming it; a failure
 * outweighs a busy owner (a retry that failed for good), and an owner a later retry claimed was not left.
 * With the partitions read (those that scan one of the owner's due documents), as they stand.
 */
async function ownerInCycle(
  client: Client,
  webUi: WebUi,
  cycle: CycleOfDay,
  owner: { ownerUserId: string; documentIds: readonly string[] },
): Promise<{ met?: OwnerMet; partitions: PartitionOfDay[] }> {
  const { ownerUserId } = owner;
  const runs = await runHistories(client, {
    workflowId: cycle.workflowId,
    firstExecutionRunId: await firstRunIdOf(client, cycle.workflowId),
  });
  const workflows = [{ workflowId: cycle.workflowId, runs }];
  for (const child of startedChildren(runs).filter((c) => mayMeet(c.workflowId, owner.documentIds))) {
    workflows.push({ workflowId: child.workflowId, runs: await runHistories(client, child) });
  }
  let met: OwnerMet | undefined;
  for (const { workflowId, runs: chain } of workflows) {
    let last: OwnerMet | undefined;
    for (const { runId, history } of chain) {
      for (const activity of endedActivities(history)) {
        const seen = ownerOutcome(activity, ownerUserId);
        if (!seen) continue;
        last =
          seen.outcome === 'claimed'
            ? undefined
            : {
                cycle,
                outcome: seen.outcome,
                ...(seen.error !== undefined ? { error: seen.error } : {}),
                seenIn: {
                  workflowId,
                  runId,
                  activityType: activity.activityType,
                  activityId: activity.activityId,
                  webUi: webUi(workflowId, runId),
                  running: isOpen(chain),
                },
              };
      }
    }
    if (last && (!met || last.outcome === 'failed')) met = last;
  }
  return { ...(met ? { met } : {}), partitions: partitionsOf(workflows) };
}

/** The settings a cycle recorded (its `resolveCycleSettings` result) that decide "due": thresholds and retention. */
export interface RecordedSettings {
  thresholdsDays: number[];
  retentionDays: number;
  /** The cycle, and the run whose history holds them. */
  workflowId: string;
  runId: string;
}

/**
 * The thresholds and retention a run's history recorded: the result of its `resolveCycleSettings` activity
 * (every run of a cycle asks, a continued one gets its carried settings back). Undefined when the run has
 * none, or none of that shape (a run whose input was refused, a history of another version).
 */
export function settingsInHistory(
  history: temporal.api.history.v1.IHistory,
): Pick<RecordedSettings, 'thresholdsDays' | 'retentionDays'> | undefined {
  for (const activity of endedActivities(history)) {
    if (activity.activityType !== 'resolveCycleSettings') continue;
    const r = activity.result as { thresholdsDays?: unknown; retentionDays?: unknown } | null | undefined;
    const thresholds = r?.thresholdsDays;
    if (
      Array.isArray(thresholds) &&
      thresholds.length > 0 &&
      thresholds.every((t) => Number.isInteger(t)) &&
      Number.isInteger(r?.retentionDays)
    ) {
      return { thresholdsDays: thresholds as number[], retentionDays: r!.retentionDays as number };
    }
  }
  return undefined;
}

/** The `status` of the result a run's history ends with (`completed`, `time-limit`, `cancelled`), if any. */
export function resultStatusInHistory(history: temporal.api.history.v1.IHistory): string | undefined {
  const events = history.events ?? [];
  const completed = events[events.length - 1]?.workflowExecutionCompletedEventAttributes;
  const payload = completed?.result?.payloads?.[0];
  if (!payload) return undefined;
  const status = (defaultPayloadConverter.fromPayload(payload) as { status?: unknown } | null)?.status;
  return typeof status === 'string' ? status : undefined;
}

/**
 * The cycles on `taskQueue` as of `asOfDate`, newest first, with the outcome each upserted
 * (`ReminderOutcome`). Visibility is eventually consistent: a cycle that ended a moment ago may still be
 * listed as running.
 */
export async function cyclesOfDay(
  client: Client,
  options: { taskQueue: string; asOfDate: string; uiUrl?: string },
): Promise<CycleOfDay[]> {
  const webUi = webUiOf(options.uiUrl, client.options.namespace);
  const cycles: (CycleOfDay & { startTime: number })[] = [];
  for await (const wf of client.workflow.list({ query: cyclesOfDayQuery(options.taskQueue, options.asOfDate) })) {
    const outcome = wf.typedSearchAttributes.get(REMINDER_OUTCOME);
    cycles.push({
      workflowId: wf.workflowId,
      runId: wf.runId,
      status: wf.status.name,
      ...(outcome ? { outcome } : {}),
      webUi: webUi(wf.workflowId, wf.runId),
      startTime: wf.startTime.getTime(),
    });
  }
  return cycles.sort((a, b) => b.startTime - a.startTime).map(({ startTime: _, ...c }) => c);
}

/**
 * The settings the newest of `cycles` that recorded any ran with, read from its listed run's history; the
 * cycles come back with the outcome their result gives where the search attribute had none.
 */
export async function settingsOfDay(
  client: Client,
  cycles: readonly CycleOfDay[],
): Promise<{ cycles: CycleOfDay[]; settings?: RecordedSettings }> {
  const read = [...cycles];
  let settings: RecordedSettings | undefined;
  for (const [i, cycle] of cycles.slice(0, CYCLES_READ).entries()) {
    if (settings && cycle.outcome) break;
    const history = await client.workflow.getHandle(cycle.workflowId, cycle.runId).fetchHistory();
    const status = cycle.outcome ?? resultStatusInHistory(history);
    if (status) read[i] = { ...cycle, outcome: status };
    const recorded = settings ? undefined : settingsInHistory(history);
    if (recorded) settings = { ...recorded, workflowId: cycle.workflowId, runId: cycle.runId };
  }
  return { cycles: read, ...(settings ? { settings } : {}) };
}

/**
 * The workflow of each run id (a marker's `queuedBy` names only its run: a partition's, for a partitioned
 * cycle), from Temporal's visibility; runs past the namespace's retention are left out.
 */
export async function workflowsOfRuns(client: Client, runIds: readonly string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const ids = [...new Set(runIds)].filter((id) => /^[0-9a-f-]{36}$/i.test(id)).slice(0, RUNS_LOOKED_UP);
  if (ids.length === 0) return found;
  const query = `RunId IN (${ids.map((id) => JSON.stringify(id)).join(', ')})`;
  for await (const wf of client.workflow.list({ query })) found.set(wf.runId, wf.workflowId);
  return found;
}

/**
 * Where the newest of the day's cycles that met the owner without claiming it did so, if one did; and the
 * partitions of the newest cycle that scan the owner's due documents, as they stand.
 */
export async function ownerInCyclesOfDay(
  client: Client,
  options: {
    cycles: readonly CycleOfDay[];
    ownerUserId: string;
    /** The owner's documents due now: only the partitions that scan one of them are read. */
    documentIds: readonly string[];
    uiUrl?: string;
  },
): Promise<{ met?: OwnerMet; partitions?: PartitionOfDay[] }> {
  const webUi = webUiOf(options.uiUrl, client.options.namespace);
  let partitions: PartitionOfDay[] | undefined;
  for (const cycle of options.cycles.slice(0, CYCLES_READ)) {
    const read = await ownerInCycle(client, webUi, cycle, options);
    partitions ??= read.partitions;
    if (read.met) return { met: read.met, partitions };
  }
  return partitions ? { partitions } : {};
}
