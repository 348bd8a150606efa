/**
 * `explain --owner <id> | --document <id> [--as-of <date>]`: why (not)? for one investor, read-only. First
 * the day's cycles from Temporal (`explain-history.ts`) and the settings the newest of them recorded, which
 * decide "due"; then the documents, markers (of the owner's documents, whoever owned them) and the next
 * cycle's due list in one read-only snapshot, and the outbox rows, as the support role (SUPPORT_DATABASE_URL;
 * without it the worker's and the relay's connections); then from Temporal again the workflow of each run that
 * wrote a marker and, when a document is due, whether a cycle of the day left its owner busy or failed.
 */
import type { Client } from '@temporalio/client';
import { requireDatabaseUrl, type Config } from '../config';
import type { CandidateWindow } from '../db/candidates';
import { selectPruneCutoff } from '../db/candidates';
import {
  selectDocumentOwner,
  selectMarkersOfOwnerDocuments,
  selectOwnerDocuments,
  selectOwnerEvents,
  type OwnerEvent,
} from '../db/explain';
import { createPool } from '../db/pool';
import { selectDueDocumentsOfOwners } from '../db/preview';
import type { WonDocument } from '../db/reminders';
import { errorOf } from '../domain/failures';
import { RELAY_ROLE, SUPPORT_ROLE } from '../domain/names';
import {
  explainAfterCycles,
  explainDocument,
  runOf,
  type DayHistory,
  type DocumentExplanation,
  type ExplainedDocumentInput,
  type ExplainedMarker,
  type OwnerMet,
} from '../domain/explain';
import { withTemporalClient } from '../temporal/connection';
import { cyclesOfDay, ownerInCyclesOfDay, settingsOfDay, workflowsOfRuns } from './explain-history';
import { withReadOnlySnapshot } from './cycles';

/** Who `explain` is asked about. */
export type ExplainTarget = { ownerUserId: string } | { documentId: string };

/**
 * Where the thresholds and retention that judged "due" come from: the settings the newest cycle of the day
 * recorded in its history (its `resolveCycleSettings` result), or, when no cycle of the day recorded any
 * (none ran yet, its history is past the namespace's retention, or Temporal was not read), the client's own
 * configuration (`REMINDER_THRESHOLDS_DAYS`, `REMINDER_RETENTION_DAYS`), with why.
 */
type SettingsSource = { cycle: { workflowId: string; runId: string } } | { client: string };

/** What `explain` answers. */
export interface Explanation extends CandidateWindow {
  ownerUserId: string | null;
  settingsFrom: SettingsSource;
  pruneCutoff: string | null;
  documents: (DocumentExplanation & {
    remindedBy?: { workflowId: string; eventId: string }[];
    /** For a document still due: the cycle of the day that met its owner busy or failing. */
    metInCycle?: OwnerMet;
  })[];
  /** The cycles as of `asOfDate` (Temporal's history), or why they were not read. */
  cyclesOfDay: DayHistory;
  /** What a cycle as of `asOfDate` would send the owner now (the owner statement's own read). */
  nextCycle: WonDocument[];
  /**
   * The outbox rows of the owner, and of the owners its documents had before (those that name one of its
   * documents), or why they could not be read.
   */
  events: OwnerEvent[] | { unavailable: string };
}

/** How long `explain` waits for an unreachable Temporal frontend before it answers from the database alone. */
const TEMPORAL_CONNECT_TIMEOUT_MS = 5_000;

/** Temporal's answer, or why there is none: the rest of the answer never fails for it. */
function fromTemporal<T>(config: Config, fn: (client: Client) => Promise<T>): Promise<T | { unavailable: string }> {
  return withTemporalClient(config, fn, { connectTimeoutMs: TEMPORAL_CONNECT_TIMEOUT_MS }).catch((err: unknown) => ({
    unavailable: errorOf(err).message.split('\n')[0].replace(/\.$/, ''),
  }));
}

/**
 * The connections `explain` reads with: the support role's (SUPPORT_DATABASE_URL) for both; without it, as
 * before that role existed, the worker's for the documents and the relay's for the outbox.
 */
function readUrls(config: Config): {
  documents: string;
  documentsVariable: string;
  outbox: () => string;
  outboxVariable: string;
} {
  const support = config.supportDatabaseUrl;
  if (support) {
    const variable = 'SUPPORT_DATABASE_URL';
    return { documents: support, documentsVariable: variable, outbox: () => support, outboxVariable: variable };
  }
  return {
    documents: requireDatabaseUrl(config, 'worker'),
    documentsVariable: 'DATABASE_URL',
    outbox: () => requireDatabaseUrl(config, 'relay'),
    outboxVariable: 'RELAY_DATABASE_URL (or DATABASE_URL)',
  };
}

/**
 * The outbox rows of `owners`, read on a connection of its own; a refusal says which role reads them.
 * Exported for the benchmark of explain's database part (bench/explain-owner.ts).
 */
export async function readOutbox(url: string, urlVariable: string, owners: readonly string[]): Promise<OwnerEvent[]> {
  const pool = createPool({ connectionString: url, urlVariable, max: 1, applicationName: 'expiry-reminder-explain' });
  try {
    return await selectOwnerEvents(pool, owners);
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
    throw new Error(
      `${errorOf(err).message}: explain reads the outbox as ${SUPPORT_ROLE} (SUPPORT_DATABASE_URL), or without it as ${RELAY_ROLE} (RELAY_DATABASE_URL)`,
    );
  } finally {
    await pool.end();
  }
}

/** Reads everything `explain` says about the owner (or the document's owner) as of `asOfDate`. */
export async function explainCommand(
  config: Config,
  target: ExplainTarget,
  options: { asOfDate: string },
): Promise<Explanation> {
  const urls = readUrls(config);
  const { asOfDate } = options;
  const uiUrl = config.temporal.uiUrl;
  const day = await fromTemporal(config, async (client) =>
    settingsOfDay(client, await cyclesOfDay(client, { taskQueue: config.temporal.taskQueue, asOfDate, uiUrl })),
  );
  const recorded = 'settings' in day ? day.settings : undefined;
  const window: CandidateWindow = {
    asOfDate,
    thresholdsDays: recorded?.thresholdsDays ?? config.cycle.thresholdsDays,
    retentionDays: recorded?.retentionDays ?? config.cycle.retentionDays,
  };
  const settingsFrom: SettingsSource = recorded
    ? { cycle: { workflowId: recorded.workflowId, runId: recorded.runId } }
    : {
        client:
          'unavailable' in day
            ? `Temporal's history not read: ${day.unavailable}`
            : day.cycles.length === 0
              ? 'no cycle as of this day was found'
              : 'no cycle as of this day recorded its settings',
      };
  const cycles: DayHistory = 'unavailable' in day ? day : { cycles: day.cycles };

  const read = await readDatabase(urls.documents, target, window, urls.documentsVariable);
  const base = { ...window, settingsFrom, cyclesOfDay: cycles };
  if (read.ownerUserId === null) return { ...base, ...read, ownerUserId: null, documents: [], events: [] };
  const owner = read.ownerUserId;
  const judge = (markers: Map<string, ExplainedMarker[]>) =>
    read.documents.map((d) =>
      explainDocument(d, markers.get(d.documentId) ?? [], { ...window, pruneCutoff: read.pruneCutoff }),
    );
  const due = judge(read.markers)
    .filter((d) => d.verdict === 'due')
    .map((d) => d.documentId);
  const runIds = [...read.markers.values()].flat().flatMap((m) => (m.queuedBy ? [runOf(m.queuedBy)] : []));
  const owners = [owner, ...new Set([...read.markers.values()].flat().flatMap((m) => m.previousOwnerUserId ?? []))];
  const [events, fromHistory] = await Promise.all([
    Promise.resolve()
      .then(() => readOutbox(urls.outbox(), urls.outboxVariable, owners))
      .then((rows) => eventsOfDocuments(rows, owner, read.documents))
      .catch((err: Error) => ({ unavailable: err.message }) as const),
    'unavailable' in cycles || (runIds.length === 0 && due.length === 0)
      ? undefined
      : fromTemporal(config, async (client) => ({
          workflows: await workflowsOfRuns(client, runIds),
          day:
            due.length > 0
              ? await ownerInCyclesOfDay(client, { cycles: cycles.cycles, ownerUserId: owner, documentIds: due, uiUrl })
              : {},
        })),
  ]);
  const history = fromHistory && !('unavailable' in fromHistory) ? fromHistory : undefined;
  const dayHistory: DayHistory =
    'unavailable' in cycles
      ? cycles
      : fromHistory && 'unavailable' in fromHistory
        ? fromHistory
        : { ...cycles, ...history?.day };
  const named = new Map(
    [...read.markers].map(([id, markers]) => [
      id,
      markers.map((m) => {
        const workflowId = m.queuedBy ? history?.workflows.get(runOf(m.queuedBy)) : undefined;
        return workflowId ? { ...m, workflowId } : m;
      }),
    ]),
  );
  const documents = judge(named).map((doc) => {
    const d = explainAfterCycles(doc, dayHistory, asOfDate);
    const remindedBy = Array.isArray(events)
      ? events
          .filter((e) => e.documents.some((x) => x.documentId === d.documentId))
          .map((e) => ({ workflowId: e.correlationId, eventId: e.eventId }))
      : [];
    return remindedBy.length > 0 ? { ...d, remindedBy } : d;
  });
  const shown = 'documentId' in target ? documents.filter((d) => d.documentId === target.documentId) : documents;
  return {
    ...base,
    ownerUserId: owner,
    pruneCutoff: read.pruneCutoff,
    documents: shown,
    nextCycle: read.nextCycle,
    cyclesOfDay: dayHistory,
    events,
  };
}

/**
 * The database's part, in one read-only snapshot: the owner, its documents and their markers, the next cycle.
 * Exported for the benchmark of explain's database part (bench/explain-owner.ts).
 * @param urlVariable the variable `url` came from, which a refused connection names.
 */
export async function readDatabase(
  url: string,
  target: ExplainTarget,
  window: CandidateWindow,
  urlVariable = 'SUPPORT_DATABASE_URL',
): Promise<{
  ownerUserId: string | null;
  pruneCutoff: string | null;
  documents: ExplainedDocumentInput[];
  markers: Map<string, ExplainedMarker[]>;
  nextCycle: WonDocument[];
}> {
  // A refused login names the variable its URL came from (the support role's, for a support desk).
  const pool = createPool({ connectionString: url, urlVariable, max: 1, applicationName: 'expiry-reminder-explain' });
  try {
    return await withReadOnlySnapshot(pool, async (db) => {
      const ownerUserId =
        'ownerUserId' in target ? target.ownerUserId : ((await selectDocumentOwner(db, target.documentId)) ?? null);
      const pruneCutoff = await selectPruneCutoff(db);
      if (ownerUserId === null) {
        return { ownerUserId, pruneCutoff, documents: [], markers: new Map(), nextCycle: [] };
      }
      const markers = await selectMarkersOfOwnerDocuments(db, ownerUserId);
      const documents = await selectOwnerDocuments(db, ownerUserId);
      const nextCycle = (await selectDueDocumentsOfOwners(db, [ownerUserId], window)).map(
        ({ ownerUserId: _, ...doc }) => doc,
      );
      return { ownerUserId, pruneCutoff, documents, markers, nextCycle };
    });
  } finally {
    await pool.end();
  }
}

/**
 * The owner's events, and those of its documents' earlier owners that name one of its documents (an event
 * is keyed by the owner it was sent to; a document that changed owner has its earlier reminders there).
 */
function eventsOfDocuments(
  rows: OwnerEvent[],
  ownerUserId: string,
  documents: readonly ExplainedDocumentInput[],
): OwnerEvent[] {
  const ids = new Set(documents.map((d) => d.documentId));
  return rows.filter((e) => e.messageKey === ownerUserId || e.documents.some((d) => ids.has(d.documentId)));
}

/** The explanation as text a support desk reads: one block per document, then the next cycle and the events. */
export function explanationText(e: Explanation): string {
  if (e.ownerUserId === null) return 'No such document.\n';
  const lines = [
    `Owner ${e.ownerUserId}, as of ${e.asOfDate} (thresholds ${e.thresholdsDays.join(', ')} days, retention ${e.retentionDays} days` +
      `${e.pruneCutoff ? `, prune cutoff ${e.pruneCutoff}` : ''})`,
    'cycle' in e.settingsFrom
      ? `Settings: as cycle ${e.settingsFrom.cycle.workflowId} recorded them (run ${e.settingsFrom.cycle.runId}).`
      : `Settings: the client's configuration (${e.settingsFrom.client}).`,
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
      lines.push(
        `  marker ${m.thresholdDays} days at ${m.remindedAt}` +
          (m.previousOwnerUserId ? ` for previous owner ${m.previousOwnerUserId}` : '') +
          (m.queuedBy ? ` by ${m.queuedBy}` : '') +
          (m.workflowId ? ` of workflow ${m.workflowId}` : ''),
      );
      if (m.queuedBy && m.workflowId) lines.push(`    ${showCommand(m.workflowId, runOf(m.queuedBy))}`);
    }
    for (const r of d.remindedBy ?? []) lines.push(`  in event ${r.eventId} of cycle ${r.workflowId}`);
    if (d.metInCycle) {
      const { seenIn, cycle } = d.metInCycle;
      lines.push(
        `  seen ${d.metInCycle.outcome} in ${seenIn.activityType} ${seenIn.activityId} of ${seenIn.workflowId} (run ${seenIn.runId})`,
        `  Web UI: ${cycle.webUi}${seenIn.webUi === cycle.webUi ? '' : ` (the cycle), ${seenIn.webUi} (where)`}`,
        `    ${showCommand(seenIn.workflowId, seenIn.runId)}`,
      );
    }
  }
  lines.push(
    '',
    e.nextCycle.length === 0
      ? 'The next cycle as of this day sends this owner nothing.'
      : `The next cycle as of this day sends one event: ${e.nextCycle.map((d) => `${d.type} ${d.documentId} at ${d.thresholdDays} days`).join('; ')}.`,
  );
  lines.push(cyclesOfDayText(e.cyclesOfDay));
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
        `  ${ev.eventId} by cycle ${ev.correlationId}` +
          (ev.messageKey === e.ownerUserId ? '' : ` to previous owner ${ev.messageKey}`) +
          `, created ${ev.createdAt}, ${state}, ${ev.attempts} attempts` +
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
  return `Cycles as of this day: ${day.cycles
    .map((c) => `${c.workflowId} run ${c.runId}, ${c.status}${c.outcome ? ` (${c.outcome})` : ''} (Web UI ${c.webUi})`)
    .join('; ')}.`;
}

/** The `temporal` command that opens a run: its own workflow id (a partition's, for a partition's run) and run id. */
function showCommand(workflowId: string, runId: string): string {
  return `temporal workflow show --workflow-id '${workflowId.replace(/'/g, "'\\''")}' --run-id ${runId}`;
}
