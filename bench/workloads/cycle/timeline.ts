/**
 * Where a cycle's time goes, read from its histories: the cycle's own steps on a time line (its activities,
 * its partitions as child workflows), and per partition what its activities and workflow tasks waited and
 * ran. A small day is mostly fixed cost (settings, plan, partition start, prune, result); this names each.
 */
import type { temporal as proto } from '@temporalio/proto';

type HistoryEvent = proto.api.history.v1.IHistoryEvent;

/** Milliseconds since the epoch of an event's time. */
function msOf(e: HistoryEvent): number {
  const t = e.eventTime;
  return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
}

/** One step of the cycle: from when it was asked for to when it ended, relative to the cycle's first event. */
interface Span {
  step: string;
  /** ms from the cycle's start to the step being scheduled (or initiated). */
  at: number;
  /** ms it waited for a worker (scheduled → started). */
  queued: number;
  /** ms from started to its end. */
  ran: number;
}

/** Per activity type of a run: how many, and the ms they spent queued and running, summed. */
interface Tally {
  count: number;
  queuedMs: number;
  ranMs: number;
}

/** What one run's (or chain's) histories say about where its time went. */
export interface Timeline {
  /** The cycle's steps in order: its activities and its partitions. */
  cycle: Span[];
  /** ms from the cycle's first event to its last. */
  cycleMs: number;
  /** Per partition: its length, its workflow tasks and its activities by type. */
  partitions: { ms: number; workflowTasks: Tally; activities: Record<string, Tally> }[];
  /** The cycle's own workflow tasks. */
  cycleWorkflowTasks: Tally;
}

/** How a kind of step shows in history: the event that asks for it, the one that starts it, those that end it. */
interface StepEvents {
  asked: (e: HistoryEvent) => string | undefined;
  started: (e: HistoryEvent) => unknown;
  ended: (e: HistoryEvent) => unknown;
}

const ACTIVITY: StepEvents = {
  asked: (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined,
  started: (e) => e.activityTaskStartedEventAttributes?.scheduledEventId,
  ended: (e) =>
    (
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes
    )?.scheduledEventId,
};

const CHILD: StepEvents = {
  asked: (e) => {
    const id = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    return id ? `child ${id.slice(id.lastIndexOf('/') + 1)}` : undefined;
  },
  started: (e) => e.childWorkflowExecutionStartedEventAttributes?.initiatedEventId,
  ended: (e) =>
    (
      e.childWorkflowExecutionCompletedEventAttributes ??
      e.childWorkflowExecutionFailedEventAttributes ??
      e.childWorkflowExecutionCanceledEventAttributes ??
      e.childWorkflowExecutionTimedOutEventAttributes ??
      e.childWorkflowExecutionTerminatedEventAttributes
    )?.initiatedEventId,
};

/** The steps of one kind in a run, each relative to `origin`. */
function spans(events: HistoryEvent[], origin: number, kind: StepEvents): Span[] {
  const byAsked = new Map<string, { step: string; asked: number; started?: number; ended?: number }>();
  for (const e of events) {
    const step = kind.asked(e);
    if (step) {
      byAsked.set(String(e.eventId), { step, asked: msOf(e) });
      continue;
    }
    const started = kind.started(e);
    const ended = started == null ? kind.ended(e) : undefined;
    const s = byAsked.get(String(started ?? ended));
    if (s && started != null) s.started = msOf(e);
    else if (s && ended != null) s.ended = msOf(e);
  }
  return [...byAsked.values()].map((s) => ({
    step: s.step,
    at: s.asked - origin,
    queued: (s.started ?? s.asked) - s.asked,
    ran: (s.ended ?? s.started ?? s.asked) - (s.started ?? s.asked),
  }));
}

function workflowTasks(events: HistoryEvent[]): Tally {
  const scheduled = new Map<string, number>();
  const started = new Map<string, number>();
  const tally: Tally = { count: 0, queuedMs: 0, ranMs: 0 };
  for (const e of events) {
    if (e.workflowTaskScheduledEventAttributes) scheduled.set(String(e.eventId), msOf(e));
    const s = e.workflowTaskStartedEventAttributes;
    if (s) {
      started.set(String(e.eventId), msOf(e));
      tally.count += 1;
      tally.queuedMs += msOf(e) - (scheduled.get(String(s.scheduledEventId)) ?? msOf(e));
    }
    const c = e.workflowTaskCompletedEventAttributes;
    if (c) tally.ranMs += msOf(e) - (started.get(String(c.startedEventId)) ?? msOf(e));
  }
  return tally;
}

function add(into: Tally, t: Tally): Tally {
  return { count: into.count + t.count, queuedMs: into.queuedMs + t.queuedMs, ranMs: into.ranMs + t.ranMs };
}

/** The spans of a chain of runs (continued as new), each relative to the chain's first event. */
function chainMs(runs: HistoryEvent[][]): number {
  const first = runs[0]?.[0];
  const lastRun = runs[runs.length - 1] ?? [];
  const last = lastRun[lastRun.length - 1];
  return first && last ? msOf(last) - msOf(first) : 0;
}

/**
 * The cycle's time line from its runs' histories (`cycleRuns`, first run first) and each partition's
 * (`partitionRuns[i]`, its chain of runs).
 */
export function cycleTimeline(cycleRuns: HistoryEvent[][], partitionRuns: HistoryEvent[][][]): Timeline {
  const origin = cycleRuns[0]?.[0] ? msOf(cycleRuns[0][0]) : 0;
  const cycle = cycleRuns
    .flatMap((events) => [...spans(events, origin, ACTIVITY), ...spans(events, origin, CHILD)])
    .sort((a, b) => a.at - b.at);
  const partitions = partitionRuns.map((runs) => {
    const activities: Record<string, Tally> = {};
    for (const span of runs.flatMap((events) => spans(events, origin, ACTIVITY))) {
      activities[span.step] = add(activities[span.step] ?? { count: 0, queuedMs: 0, ranMs: 0 }, {
        count: 1,
        queuedMs: span.queued,
        ranMs: span.ran,
      });
    }
    return {
      ms: chainMs(runs),
      workflowTasks: runs.map(workflowTasks).reduce(add, { count: 0, queuedMs: 0, ranMs: 0 }),
      activities,
    };
  });
  return {
    cycle,
    cycleMs: chainMs(cycleRuns),
    partitions,
    cycleWorkflowTasks: cycleRuns.map(workflowTasks).reduce(add, { count: 0, queuedMs: 0, ranMs: 0 }),
  };
}
