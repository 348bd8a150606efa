/**
 * A small model of the cycle rules (docs/DESIGN.md#cycle-rules, #owner-transaction, #prune), written
 * apart from the SQL of `src/db/candidates.ts` and `src/db/reminders.ts` so the chaos scenario (s11) can
 * judge every cycle against it: given the documents, the thresholds, AsOf, the retention and the ledger
 * before a completed cycle, it computes the ledger after and the events the outbox must hold. Pure: no
 * I/O, and the PRNG the scenario draws everything from lives here too, so a seed replays a run.
 */

const DAY_MS = 86_400_000;

/** A document as the cycle reads it. */
export interface ModelDocument {
  id: string;
  ownerUserId: string;
  /** `YYYY-MM-DD`, or null (never expires). */
  expiresAt: string | null;
  status: string;
  isDeleted: boolean;
}

/** A ledger row: the reminder for (document, threshold) is handled. */
export interface ModelMarker {
  documentId: string;
  thresholdDays: number;
  /** The document's expiry when the marker was written: the prune reads this one, not the document's. */
  expiresAt: string;
  /** AsOfDate of the cycle that wrote it. */
  remindedOn: string;
}

interface ModelEventDocument {
  documentId: string;
  expiresAt: string;
  thresholdDays: number;
  daysLeft: number;
}

/** One outbox row: an owner and every document it was reminded of, in `(expiresAt, id)` order. */
export interface ModelEvent {
  ownerUserId: string;
  remindedOn: string;
  documents: ModelEventDocument[];
}

export interface ModelLedger {
  markers: ModelMarker[];
  /**
   * The highest cutoff a prune has applied (`expires_at < cutoff` deleted), or null before the first.
   * Only the prune-cutoff rule reads it ({@link dueWindowLowerBound}).
   */
  pruneCutoff: string | null;
}

export interface ModelCycle {
  asOfDate: string;
  /** Descending, as the cycle input requires. */
  thresholdsDays: readonly number[];
  retentionDays: number;
  /**
   * Issue 19 item 1: the window's lower bound is `greatest(AsOfDate − RetentionDays, highest prune
   * cutoff ever applied)` once the ledger remembers its prune cutoff (migration 011). Off: the bound
   * is `AsOfDate − RetentionDays` alone, the rule before it.
   */
  pruneCutoffRule: boolean;
}

export const addDays = (date: string, days: number): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

const daysBetween = (from: string, to: string): number =>
  Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);

/** The most urgent threshold `t` with `daysLeft ≤ t`, or undefined when none is crossed. */
function modelCurrentThreshold(daysLeft: number, thresholds: readonly number[]): number | undefined {
  let current: number | undefined;
  for (const t of thresholds) if (daysLeft <= t && (current === undefined || t < current)) current = t;
  return current;
}

/**
 * The lowest `expires_at` the cycle looks at. With the prune-cutoff rule a cycle as of a past day never
 * reaches below what a later cycle already pruned, so it cannot re-send what that cycle handled.
 */
export function dueWindowLowerBound(cycle: ModelCycle, ledger: ModelLedger): string {
  const byRetention = addDays(cycle.asOfDate, -cycle.retentionDays);
  if (!cycle.pruneCutoffRule || ledger.pruneCutoff === null) return byRetention;
  return ledger.pruneCutoff > byRetention ? ledger.pruneCutoff : byRetention;
}

/** The prune's cutoff for a cycle: markers of documents that expired before it are deleted. */
const pruneCutoff = (cycle: ModelCycle): string => addDays(cycle.asOfDate, -cycle.retentionDays);

/**
 * One completed cycle (every owner handled, then the prune): the ledger after it and the events it
 * (and any twin with the same input) must have written, one per owner with a due document.
 */
export function runCycle(
  documents: readonly ModelDocument[],
  ledger: ModelLedger,
  cycle: ModelCycle,
): { ledger: ModelLedger; events: ModelEvent[] } {
  const from = dueWindowLowerBound(cycle, ledger);
  const until = addDays(cycle.asOfDate, Math.max(...cycle.thresholdsDays));
  const marked = new Map<string, number[]>();
  for (const m of ledger.markers) marked.set(m.documentId, [...(marked.get(m.documentId) ?? []), m.thresholdDays]);

  const markers = [...ledger.markers];
  const won = new Map<string, ModelEventDocument[]>();
  for (const d of documents) {
    if (d.expiresAt === null || d.status !== 'Active' || d.isDeleted) continue;
    if (d.expiresAt < from || d.expiresAt > until) continue;
    const daysLeft = daysBetween(cycle.asOfDate, d.expiresAt);
    const current = modelCurrentThreshold(daysLeft, cycle.thresholdsDays);
    if (current === undefined) continue;
    const existing = marked.get(d.id) ?? [];
    // Something at least as urgent was handled (resolution 2).
    if (existing.some((t) => t <= current)) continue;
    for (const t of cycle.thresholdsDays) {
      if (daysLeft <= t && !existing.includes(t)) {
        markers.push({ documentId: d.id, thresholdDays: t, expiresAt: d.expiresAt, remindedOn: cycle.asOfDate });
      }
    }
    const item = { documentId: d.id, expiresAt: d.expiresAt, thresholdDays: current, daysLeft };
    won.set(d.ownerUserId, [...(won.get(d.ownerUserId) ?? []), item]);
  }

  const cutoff = pruneCutoff(cycle);
  const events = [...won].map(([ownerUserId, docs]) => ({
    ownerUserId,
    remindedOn: cycle.asOfDate,
    documents: docs.sort((a, b) => compare(a.expiresAt, b.expiresAt) || compare(a.documentId, b.documentId)),
  }));
  return {
    ledger: {
      markers: markers.filter((m) => m.expiresAt >= cutoff),
      pruneCutoff: ledger.pruneCutoff === null || cutoff > ledger.pruneCutoff ? cutoff : ledger.pruneCutoff,
    },
    events,
  };
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A marker as one comparable line. */
export const markerKey = (m: ModelMarker): string =>
  `${m.documentId} ${m.thresholdDays} ${m.expiresAt} ${m.remindedOn}`;

/** An event as one comparable line. */
export const eventKey = (e: ModelEvent): string =>
  `${e.ownerUserId} ${e.remindedOn} [${e.documents
    .map((d) => `${d.documentId}@${d.thresholdDays}/${d.daysLeft}/${d.expiresAt}`)
    .join(' ')}]`;

/**
 * What differs between two lists of lines, as at most `limit` sentences (first the lines only in
 * `expected`, then those only in `actual`); empty when they hold the same lines the same number of times.
 */
export function diffLines(what: string, expected: string[], actual: string[], limit = 3): string[] {
  const count = new Map<string, number>();
  for (const l of expected) count.set(l, (count.get(l) ?? 0) + 1);
  for (const l of actual) count.set(l, (count.get(l) ?? 0) - 1);
  const missing = [...count].filter(([, n]) => n > 0).map(([l]) => l);
  const extra = [...count].filter(([, n]) => n < 0).map(([l]) => l);
  if (missing.length === 0 && extra.length === 0) return [];
  return [
    `${what}: ${missing.length} expected but missing, ${extra.length} unexpected` +
      `${missing.length ? `; missing e.g. ${missing.slice(0, limit).join(' | ')}` : ''}` +
      `${extra.length ? `; unexpected e.g. ${extra.slice(0, limit).join(' | ')}` : ''}`,
  ];
}

/** A seeded PRNG (mulberry32): the same seed gives the same numbers in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Draws from one PRNG: integers, picks, chances, and UUIDs (v4 layout), so ids replay too. */
export class Draw {
  readonly next: () => number;
  constructor(readonly seed: number) {
    this.next = mulberry32(seed);
  }
  /** A whole number in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => Math.floor(this.next() * 16).toString(16));
    hex[12] = '4';
    hex[16] = '89ab'[Math.floor(this.next() * 4)];
    const s = hex.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }
}
