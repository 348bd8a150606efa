/**
 * `explain`: why a document was, or was not, reminded, as of a day, in words a support desk reads. The
 * rule is the scan's (docs/DESIGN.md, "Due"): in the window, active, not deleted, and no marker at or below
 * its current threshold. This is its reading for one document, by the thresholds rule's TypeScript form
 * (thresholds.ts), which a property test pins to the SQL that decides; `explain` also runs the owner
 * statement's own read (`dueCtes`) beside this to say what the next cycle would send.
 */
import { addDays, daysBetween } from './dates';
import { crossedThresholds, currentThreshold as currentOf, quietingMarker } from './thresholds';

/** One of the owner's documents as `explain` reads it (never its cipher). */
export interface ExplainedDocumentInput {
  documentId: string;
  type: string;
  numberMask: string;
  status: string;
  isDeleted: boolean;
  /** `YYYY-MM-DD`, or null for a document that never expires. */
  expiresAt: string | null;
}

/** A marker of the ledger: a reminder (or a silent mark) for one threshold of the document. */
export interface ExplainedMarker {
  thresholdDays: number;
  remindedAt: string;
  /** `<run id>/<activity id>` of the owner transaction that inserted it; null for markers before it was kept. */
  queuedBy: string | null;
  /** The owner it was written for, when that is not the document's owner now (the document changed owner). */
  previousOwnerUserId?: string;
  /**
   * The workflow of `queuedBy`'s run (a partition's own id for a partitioned cycle), as Temporal's visibility
   * lists it: `temporal workflow show --workflow-id <it> --run-id <run>` opens the run. Absent when not read.
   */
  workflowId?: string;
}

/** The day and the rule `explain` reads a document against. */
export interface ExplainWindow {
  asOfDate: string;
  thresholdsDays: readonly number[];
  retentionDays: number;
  /** The ledger's prune cutoff (never scanned below), or null before the first prune. */
  pruneCutoff: string | null;
}

/**
 * Every verdict `explain` gives, in the order its rules apply (`waiting` and `failed` come from the day's
 * cycles). These are the words it prints, the JSON values and the words of docs/OPERATIONS.md's support
 * section (a unit test reads all three).
 */
export const VERDICTS = [
  'deleted',
  'inactive',
  'no-expiry',
  'past-retention',
  'pruned',
  'not-due',
  'reminded',
  'due',
  'waiting',
  'failed',
] as const;

type Verdict = (typeof VERDICTS)[number];

/** What `explain` says of one document. */
export interface DocumentExplanation extends ExplainedDocumentInput {
  /** Days from the AsOf date to the expiry (negative once expired); null without an expiry. */
  daysLeft: number | null;
  /** The thresholds already crossed as of the day (`daysLeft <= t`), most urgent last. */
  thresholdsCrossed: number[];
  /** The smallest threshold at or above `daysLeft`: the reminder the document is due for. */
  currentThreshold: number | null;
  markers: ExplainedMarker[];
  verdict: Verdict;
  /** The verdict in words. */
  why: string;
}

/**
 * The verdict for one document as of `window.asOfDate`, with its markers: the first rule that applies of
 * deleted, inactive, no expiry, past retention, below the prune cutoff, not due yet, reminded, due.
 */
export function explainDocument(
  doc: ExplainedDocumentInput,
  markers: readonly ExplainedMarker[],
  window: ExplainWindow,
): DocumentExplanation {
  const ascending = [...window.thresholdsDays].sort((a, b) => a - b);
  const daysLeft = doc.expiresAt === null ? null : daysBetween(window.asOfDate, doc.expiresAt);
  const currentThreshold = daysLeft === null ? null : (currentOf(daysLeft, window.thresholdsDays) ?? null);
  const thresholdsCrossed = daysLeft === null ? [] : crossedThresholds(daysLeft, [...ascending].reverse());
  const sorted = [...markers].sort((a, b) => b.thresholdDays - a.thresholdDays);
  const base = { ...doc, daysLeft, thresholdsCrossed, currentThreshold, markers: sorted };
  const say = (verdict: Verdict, why: string): DocumentExplanation => ({ ...base, verdict, why });

  if (doc.isDeleted) return say('deleted', 'deleted: a deleted document is never reminded');
  if (doc.status !== 'Active')
    return say('inactive', `inactive: its status is ${doc.status}, and only active documents are reminded`);
  if (doc.expiresAt === null || daysLeft === null) return say('no-expiry', 'no-expiry: no expiry date, never reminded');
  const byRetention = addDays(window.asOfDate, -window.retentionDays);
  if (doc.expiresAt < byRetention) {
    return say(
      'past-retention',
      `past-retention: expired ${-daysLeft} days before ${window.asOfDate}, more than the retention of ${window.retentionDays} days: no longer reminded`,
    );
  }
  if (window.pruneCutoff !== null && doc.expiresAt < window.pruneCutoff) {
    return say(
      'pruned',
      `pruned: expired before the prune cutoff ${window.pruneCutoff}: its markers may be pruned, and no cycle, of any day, reads below the cutoff, so it is not reminded again`,
    );
  }
  if (currentThreshold === null) {
    return say(
      'not-due',
      `not-due: expires in ${daysLeft} days, and the first threshold is ${ascending[ascending.length - 1]} days`,
    );
  }
  const sent = quietingMarker(sorted, currentThreshold);
  if (sent) {
    const next = ascending.filter((t) => t < sent.thresholdDays).at(-1);
    return say(
      'reminded',
      `reminded: at ${days(sent.thresholdDays)} on ${sent.remindedAt.slice(0, 10)}` +
        (sent.previousOwnerUserId ? ` to its previous owner ${sent.previousOwnerUserId}` : '') +
        (sent.queuedBy ? ` by run ${runOf(sent.queuedBy)}` : '') +
        (sent.workflowId ? ` of workflow ${sent.workflowId}` : '') +
        (next === undefined ? '; no threshold is left below it' : `; the next reminder is at ${days(next)}`),
    );
  }
  return say(
    'due',
    `due: the next cycle as of ${window.asOfDate} reminds it at ${currentThreshold} days (${daysLeft < 0 ? `expired ${-daysLeft} days ago` : `${daysLeft} days left`})`,
  );
}

/** A cycle as of the day explained, as Temporal lists it. */
export interface CycleOfDay {
  workflowId: string;
  /** Its latest run (a cycle that continued as new has several). */
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED, TIMED_OUT. */
  status: string;
  /**
   * How the cycle says it ended (its `ReminderOutcome`, else its result's status): `completed`, `time-limit`,
   * `cancelled`, `failed`, `running`. A cycle that stopped at its time limit or was cancelled returns a
   * result, so Temporal lists it COMPLETED: only this tells it from one that read every page. Absent when
   * neither was read.
   */
  outcome?: string;
  /** The run's page in the Web UI: a link under TEMPORAL_UI_URL, or without it a path under the UI's address. */
  webUi: string;
}

/** Where a cycle of the day met the owner and did not claim it: the activity whose result names the owner. */
export interface OwnerMet {
  cycle: CycleOfDay;
  /** `busy`: another transaction held the owner's lock; `failed`: its claim failed for good. */
  outcome: 'busy' | 'failed';
  /** The claim's error, for `failed`. */
  error?: string;
  /**
   * The workflow (the cycle, or one of its partitions), run and activity whose result named the owner, and
   * whether that workflow is still open: a partition that ended has counted the owner busy or failed for good,
   * though its cycle may still run.
   */
  seenIn: {
    workflowId: string;
    runId: string;
    activityType: string;
    activityId: string;
    webUi: string;
    running: boolean;
  };
}

/** A partition of the newest cycle of the day that scans one of the owner's due documents, as it stands. */
export interface PartitionOfDay {
  workflowId: string;
  /** Its latest run. */
  runId: string;
  /** The ids it scans: from `from`, up to but not including `until` (null: to the end). */
  range: readonly [string, string | null];
  running: boolean;
  /** The `status` of its result (`completed`, `time-limit`, `cancelled`); absent while it runs or when it has none. */
  outcome?: string;
}

/** What the histories of the day's cycles say of the owner, or why they were not read. */
export type DayHistory =
  { cycles: CycleOfDay[]; met?: OwnerMet; partitions?: readonly PartitionOfDay[] } | { unavailable: string };

/**
 * A document the database has due (no marker at its current threshold) read against the day's cycles: a
 * cycle that met its owner busy or failing makes it `waiting` or `failed` (the next cycle retries); a cycle
 * that ran without meeting it, or a history that could not be read, is said after the due verdict. Any other
 * verdict is returned as it is: the database alone decides those.
 */
export function explainAfterCycles(
  doc: DocumentExplanation,
  day: DayHistory,
  asOfDate: string,
): DocumentExplanation & { metInCycle?: OwnerMet } {
  if (doc.verdict !== 'due') return doc;
  if ('unavailable' in day) {
    return {
      ...doc,
      why:
        `${doc.why}; whether a cycle as of ${asOfDate} already met its owner busy or failing is in Temporal's ` +
        `history, not read: ${day.unavailable}`,
    };
  }
  const { met, cycles } = day;
  if (met) {
    const cycle = `cycle ${met.cycle.workflowId}, run ${met.cycle.runId}`;
    const partitionEnded = met.cycle.status === 'RUNNING' && !met.seenIn.running;
    return met.outcome === 'busy'
      ? {
          ...doc,
          verdict: 'waiting',
          why:
            `waiting: the owner was busy in ${cycle} (another transaction held it); ` +
            (met.cycle.status !== 'RUNNING'
              ? 'the next cycle retries'
              : partitionEnded
                ? `${met.seenIn.workflowId}, the partition that reads it, has ended and counted it busy: the next cycle retries`
                : 'that cycle retries it before it ends, else the next cycle does'),
          metInCycle: met,
        }
      : {
          ...doc,
          verdict: 'failed',
          why: `failed: in ${cycle}: ${met.error ?? 'no error kept'}; the next cycle retries`,
          metInCycle: met,
        };
  }
  const latest = cycles[0];
  if (!latest) return doc;
  const own = day.partitions?.find((p) => inRange(doc.documentId, p.range));
  const ran = own ? partitionRan(own, latest) : cycleRan(latest);
  return { ...doc, why: `${doc.why}; ${ran}` };
}

const inRange = (id: string, [from, until]: readonly [string, string | null]) =>
  id >= from && (until === null || id < until);

/** What the newest cycle did, as a whole (unpartitioned, or its partitions not read). */
function cycleRan(latest: CycleOfDay): string {
  const cycle = `cycle ${latest.workflowId}, run ${latest.runId},`;
  const stopped = latest.outcome === 'time-limit' || latest.outcome === 'cancelled';
  return stopped
    ? `${cycle} stopped before it reached this document (outcome ${latest.outcome}: ${
        latest.outcome === 'time-limit' ? 'it ran out of its maximum run duration' : 'it was cancelled'
      }); the next cycle reminds it`
    : latest.status === 'COMPLETED'
      ? `${cycle} completed without leaving its owner busy or failed: the document became due, or was added, after that cycle read it`
      : latest.status === 'RUNNING'
        ? `${cycle} is still running and may not have reached it yet`
        : `${cycle} ended ${latest.status} and may not have reached it`;
}

/**
 * What the partition that scans the document did: a cycle's outcome is its worst partition's, and this
 * document's partition may have read every page of its range while another stopped.
 */
function partitionRan(own: PartitionOfDay, latest: CycleOfDay): string {
  const partition = `partition ${own.workflowId}, run ${own.runId}, of cycle ${latest.workflowId},`;
  if (own.running) return `${partition} is still running and may not have reached it yet`;
  if (own.outcome === 'time-limit' || own.outcome === 'cancelled') {
    return `${partition} stopped before it reached this document (outcome ${own.outcome}: ${
      own.outcome === 'time-limit' ? 'it ran out of its maximum run duration' : 'it was cancelled'
    }); the next cycle reminds it`;
  }
  if (own.outcome === 'completed') {
    return `${partition} read every page of its range without leaving its owner busy or failed: the document became due, or was added, after that partition read it`;
  }
  return `${partition} ended without a result and may not have reached it`;
}

/** The run id of a marker's `queuedBy` (`<run id>/<activity id>`). */
export function runOf(queuedBy: string): string {
  return queuedBy.split('/')[0];
}

/** `n days`, or `1 day`. */
function days(n: number): string {
  return n === 1 ? '1 day' : `${n} days`;
}
