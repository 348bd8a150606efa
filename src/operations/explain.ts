/**
 * `explain --owner <id> | --document <id> [--as-of <date>]`: why (not)? for one investor, read-only. The
 * documents, markers and the next cycle's due list are read as the worker (DATABASE_URL) in one snapshot;
 * the outbox rows as the relay (RELAY_DATABASE_URL, else DATABASE_URL), since the worker's role may only
 * insert them; and, when a document is due, the cycles of the day from Temporal (`explain-history.ts`), which
 * alone know whether one of them left the owner busy or failed.
 */
import { requireDatabaseUrl, type Config } from '../config';
import type { CandidateWindow } from '../db/candidates';
import { selectPruneCutoff } from '../db/candidates';
import {
  selectDocumentOwner,
  selectOwnerDocuments,
  selectOwnerEvents,
  selectOwnerMarkers,
  type OwnerEvent,
} from '../db/explain';
import { createPool } from '../db/pool';
import { selectDueDocumentsOfOwners } from '../db/preview';
import type { WonDocument } from '../db/reminders';
import { errorOf } from '../domain/failures';
import {
  explainAfterCycles,
  explainDocument,
  type DayHistory,
  type DocumentExplanation,
  type OwnerMet,
} from '../domain/explain';
import { withTemporalClient } from '../temporal/connection';
import { ownerInCyclesOfDay } from './explain-history';
import { withReadOnlySnapshot } from './cycles';
import { withOutbox } from './outbox';

/** Who `explain` is asked about. */
export type ExplainTarget = { ownerUserId: string } | { documentId: string };

/** What `explain` answers. */
export interface Explanation extends CandidateWindow {
  ownerUserId: string | null;
  pruneCutoff: string | null;
  documents: (DocumentExplanation & {
    remindedBy?: { workflowId: string; eventId: string }[];
    /** For a document still due: the cycle of the day that met its owner busy or failing. */
    metInCycle?: OwnerMet;
  })[];
  /**
   * The cycles as of `asOfDate` (Temporal's history), read when a document is due; or why they were not read.
   * Absent when nothing is due.
   */
  cyclesOfDay?: DayHistory;
  /** What a cycle as of `asOfDate` would send the owner now (the owner statement's own read). */
  nextCycle: WonDocument[];
  /** The owner's outbox rows, or why they could not be read. */
  events: OwnerEvent[] | { unavailable: string };
}

/** How long `explain` waits for an unreachable Temporal frontend before it answers from the database alone. */
const TEMPORAL_CONNECT_TIMEOUT_MS = 5_000;

/**
 * The day's cycles and where one met the owner without claiming it, or why Temporal could not say: the rest
 * of the answer never waits on it for more than the connect timeout, and never fails for it.
 */
function readCyclesOfDay(
  config: Config,
  asOfDate: string,
  owner: { ownerUserId: string; documentIds: string[] },
): Promise<DayHistory> {
  return withTemporalClient(
    config,
    (client) =>
      ownerInCyclesOfDay(client, {
        taskQueue: config.temporal.taskQueue,
        asOfDate,
        ...owner,
        uiUrl: config.temporal.uiUrl,
      }),
    { connectTimeoutMs: TEMPORAL_CONNECT_TIMEOUT_MS },
  ).catch((err: unknown) => ({ unavailable: errorOf(err).message.split('\n')[0].replace(/\.$/, '') }));
}

/** Reads everything `explain` says about the owner (or the document's owner) as of `asOfDate`. */
export async function explainCommand(
  config: Config,
  target: ExplainTarget,
  options: { asOfDate: string },
): Promise<Explanation> {
  const window: CandidateWindow = {
    asOfDate: options.asOfDate,
    thresholdsDays: config.cycle.thresholdsDays,
    retentionDays: config.cycle.retentionDays,
  };
  const pool = createPool({
    connectionString: requireDatabaseUrl(config, 'worker'),
    max: 1,
    applicationName: 'expiry-reminder-explain',
  });
  let read: Omit<Explanation, 'events'>;
  try {
    read = await withReadOnlySnapshot(pool, async (db) => {
      const ownerUserId =
        'ownerUserId' in target ? target.ownerUserId : ((await selectDocumentOwner(db, target.documentId)) ?? null);
      const pruneCutoff = await selectPruneCutoff(db);
      if (ownerUserId === null) return { ...window, ownerUserId, pruneCutoff, documents: [], nextCycle: [] };
      const markers = await selectOwnerMarkers(db, ownerUserId);
      const documents = (await selectOwnerDocuments(db, ownerUserId)).map((d) =>
        explainDocument(d, markers.get(d.documentId) ?? [], { ...window, pruneCutoff }),
      );
      const nextCycle = (await selectDueDocumentsOfOwners(db, [ownerUserId], window)).map(
        ({ ownerUserId: _, ...doc }) => doc,
      );
      return { ...window, ownerUserId, pruneCutoff, documents, nextCycle };
    });
  } finally {
    await pool.end();
  }
  if (read.ownerUserId === null) return { ...read, events: [] };
  const owner = read.ownerUserId;
  const due = read.documents.filter((d) => d.verdict === 'due').map((d) => d.documentId);
  const [events, cyclesOfDay] = await Promise.all([
    withOutbox(config, (outbox) => selectOwnerEvents(outbox, owner)).catch(
      (err: Error) => ({ unavailable: err.message }) as const,
    ),
    due.length > 0 ? readCyclesOfDay(config, read.asOfDate, { ownerUserId: owner, documentIds: due }) : undefined,
  ]);
  const documents = read.documents.map((doc) => {
    const d = cyclesOfDay ? explainAfterCycles(doc, cyclesOfDay, read.asOfDate) : doc;
    const remindedBy = Array.isArray(events)
      ? events
          .filter((e) => e.documents.some((x) => x.documentId === d.documentId))
          .map((e) => ({ workflowId: e.correlationId, eventId: e.eventId }))
      : [];
    return remindedBy.length > 0 ? { ...d, remindedBy } : d;
  });
  const shown = 'documentId' in target ? documents.filter((d) => d.documentId === target.documentId) : documents;
  return { ...read, documents: shown, events, ...(cyclesOfDay ? { cyclesOfDay } : {}) };
}

/** The explanation as text a support desk reads: one block per document, then the next cycle and the events. */
export function explanationText(e: Explanation): string {
  if (e.ownerUserId === null) return 'No such document.\n';
  const lines = [
    `Owner ${e.ownerUserId}, as of ${e.asOfDate} (thresholds ${e.thresholdsDays.join(', ')} days, retention ${e.retentionDays} days` +
      `${e.pruneCutoff ? `, prune cutoff ${e.pruneCutoff}` : ''})`,
  ];
  if (e.documents.length === 0) lines.push('', 'No documents found for this owner.');
  for (const d of e.documents) {
    lines.push(
      '',
      `${d.type} ${d.numberMask} (${d.documentId}): ${d.status}${d.isDeleted ? ', deleted' : ''}, ` +
        `expires ${d.expiresAt ?? 'never'}${d.daysLeft === null ? '' : ` (${d.daysLeft} days left)`}`,
      `  ${d.why}`,
    );
    if (d.thresholdsCrossed.length > 0) lines.push(`  thresholds crossed: ${d.thresholdsCrossed.join(', ')}`);
    for (const m of d.markers) {
      lines.push(`  marker ${m.thresholdDays} days at ${m.remindedAt}${m.queuedBy ? ` by ${m.queuedBy}` : ''}`);
    }
    for (const r of d.remindedBy ?? []) lines.push(`  in event ${r.eventId} of cycle ${r.workflowId}`);
    if (d.metInCycle) {
      const { seenIn, cycle } = d.metInCycle;
      lines.push(
        `  seen ${d.metInCycle.outcome} in ${seenIn.activityType} ${seenIn.activityId} of ${seenIn.workflowId} (run ${seenIn.runId})`,
        `  Web UI: ${cycle.webUi}${seenIn.webUi === cycle.webUi ? '' : ` (the cycle), ${seenIn.webUi} (where)`}`,
      );
    }
  }
  lines.push(
    '',
    e.nextCycle.length === 0
      ? 'The next cycle as of this day sends this owner nothing.'
      : `The next cycle as of this day sends one event: ${e.nextCycle.map((d) => `${d.type} ${d.documentId} at ${d.thresholdDays} days`).join('; ')}.`,
  );
  if (e.cyclesOfDay) lines.push(cyclesOfDayText(e.cyclesOfDay));
  if (!Array.isArray(e.events)) lines.push(`Events: not readable (${e.events.unavailable}).`);
  else if (e.events.length === 0)
    lines.push('Events: none in the outbox (published ones are kept for OUTBOX_RETENTION).');
  else {
    lines.push('Events:');
    for (const ev of e.events) {
      const state = ev.parkedAt
        ? `parked ${ev.parkedAt} (${ev.lastError ?? 'no error kept'})`
        : ev.publishedAt
          ? `published ${ev.publishedAt}${ev.kafka ? ` to partition ${ev.kafka.partition} at offset ${ev.kafka.offset}` : ''}`
          : `waiting to be published${ev.lastError ? ` (last error: ${ev.lastError})` : ''}`;
      lines.push(
        `  ${ev.eventId} by cycle ${ev.correlationId}, created ${ev.createdAt}, ${state}, ${ev.attempts} attempts` +
          `${ev.retries > 0 ? `, ${ev.retries} operator retries` : ''}: ` +
          ev.documents.map((d) => `${d.documentId} at ${d.thresholdDays} days`).join('; '),
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The day's cycles in one line, or why Temporal's history was not read. */
function cyclesOfDayText(day: DayHistory): string {
  if ('unavailable' in day) return `Cycles as of this day: history not read (${day.unavailable}).`;
  if (day.cycles.length === 0) {
    return 'Cycles as of this day: none found (none ran yet, or their histories are past the retention of the namespace).';
  }
  return `Cycles as of this day: ${day.cycles.map((c) => `${c.workflowId} run ${c.runId}, ${c.status} (Web UI ${c.webUi})`).join('; ')}.`;
}
