/**
 * One pass over a lane of the insert-only outbox (migration 025; docs/DESIGN.md, "The relay's next outbox"),
 * in one transaction: take the lane (or leave it to the relay loop that has it), send the events of its held
 * keys that are due again, then read its events after its cursor below the horizon, send them, move the cursor
 * over what has a verdict, hold the keys Kafka refused, and record where the events went. Nothing is written to
 * an event; a crash before the commit leaves the cursor and the holds as they were, and the next pass sends the
 * events again (at least once).
 */
import type pg from 'pg';
import {
  insertDeliveries,
  laneCursor,
  moveLane,
  pinLanePlan,
  readLane,
  tryLockLane,
  type LaneEvent,
  type LanePosition,
} from '../db/outbox-events';
import {
  dueHolds,
  heldEvents,
  holdKeys,
  legacyKeys,
  recordHeldTry,
  releaseHold,
  waitsForLegacyRows,
  type NewHold,
} from '../db/outbox-held';
import { withTransaction } from '../db/pool';
import type { Delivery } from './deliver';
import { laneOutcome, type LaneOutcome, type LaneVerdicts } from './lane-outcome';

/** Held keys a pass sends again at most, so that a pass stays a batch's work. */
const HOLDS_A_PASS = 10;

/** A held key's events refused again: the event, Kafka's reason, and whether the key is parked now. */
interface HeldRefusal {
  event: LaneEvent;
  error: string;
  parked: boolean;
}

/** What a lane pass did, once its transaction committed. */
export interface LanePassResult {
  lane: number;
  /** Events read after the cursor. */
  claimed: number;
  /** Events published that the cursor passed or a held key's try published (a later one is sent again). */
  published: LaneEvent[];
  /** The batch's delivery (after the cursor). */
  delivery: Delivery | undefined;
  /** Held keys' events refused again. */
  heldRefused: HeldRefusal[];
  /** A send without a verdict (the batch's or a held key's): the loop backs off. */
  failed: { error: Error; events: readonly { topic: string }[] } | undefined;
  /**
   * Where the pass's time went, in ms: taking the lane and reading its batch (held keys' sends included),
   * Kafka's part of the batch, and recording the outcome with the commit (filled in by the caller).
   */
  timings: { readMs: number; sendMs: number; writeMs: number };
}

/** What a lane pass needs from its relay loop. */
export interface LanePassDeps {
  pool: pg.Pool;
  batchSize: number;
  /** RELAY_MAX_ATTEMPTS: a key refused this often is parked. */
  maxRejections: number;
  /** RELAY_MAX_BACKOFF, in seconds: the longest a refused key waits for its next try. */
  maxBackoffSeconds: number;
  /** Sends a batch under the relay's deadline and says what became of each event. */
  send(events: LaneEvent[]): Promise<Delivery>;
  /** Called after Kafka acknowledged events and before the cursor moves over them (tests inject crashes here). */
  onSent?: (ids: string[]) => Promise<void> | void;
}

/** A batch whose every event waits for the old outbox: nothing went to Kafka. */
const NOTHING_SENT: Delivery = { published: [], placements: new Map(), rejected: [], failed: [] };

/**
 * `legacy` holds for the keys of `keys` (rows of the old outbox before their events here), each from its first
 * event in the batch: the cursor passes the key's events, which are sent once the old rows are published.
 */
function legacyHolds(events: readonly LaneEvent[], keys: ReadonlySet<string>): NewHold[] {
  if (keys.size === 0) return [];
  const holds = new Map<string, NewHold>();
  for (const e of events) {
    if (keys.has(e.message_key) && !holds.has(e.message_key)) {
      holds.set(e.message_key, { messageKey: e.message_key, from: { xid: e.event_xid, id: e.id }, reason: 'legacy' });
    }
  }
  return [...holds.values()];
}

/** A delivery's verdicts by event id, as the lane's rule reads them. */
function verdictsOf(delivery: Delivery): LaneVerdicts {
  return {
    published: new Set(delivery.published.map((e) => e.id)),
    placements: delivery.placements,
    rejected: new Map(delivery.rejected.map(({ row, error }) => [row.id, error])),
    failed: new Set(delivery.failed.map((e) => e.id)),
  };
}

/** The events the outcome covers that Kafka acknowledged: what the pass published for good. */
function publishedFor(events: readonly LaneEvent[], outcome: LaneOutcome, verdicts: LaneVerdicts): LaneEvent[] {
  return events.slice(0, outcome.covered).filter((e) => verdicts.published.has(e.id));
}

/**
 * Publishes one batch of `lane`, after its held keys that are due.
 * @returns undefined when another loop holds the lane, or it had nothing to send.
 */
export async function publishLane(deps: LanePassDeps, lane: number): Promise<LanePassResult | undefined> {
  const t0 = performance.now();
  let sentAt = t0;
  const result = await withTransaction(deps.pool, async (tx) => {
    if (!(await tryLockLane(tx, lane))) return undefined;
    await pinLanePlan(tx);
    const from = await laneCursor(tx, lane);
    const result: LanePassResult = {
      lane,
      claimed: 0,
      published: [],
      delivery: undefined,
      heldRefused: [],
      failed: undefined,
      timings: { readMs: 0, sendMs: 0, writeMs: 0 },
    };
    const triedHolds = await retryHolds(deps, tx, lane, from, result);
    if (result.failed) return result;
    const { events, oldRowsWaiting } = await readLane(tx, lane, from, deps.batchSize);
    if (events.length === 0) return triedHolds > 0 ? result : undefined;
    const waiting = oldRowsWaiting ? await legacyKeys(tx, events) : new Set<string>();
    const legacy = legacyHolds(events, waiting);
    const sendable = waiting.size === 0 ? events : events.filter((e) => !waiting.has(e.message_key));
    const readAt = performance.now();
    const delivery = sendable.length > 0 ? await deps.send(sendable) : NOTHING_SENT;
    sentAt = performance.now();
    result.timings.readMs = Math.round(readAt - t0);
    result.timings.sendMs = Math.round(sentAt - readAt);
    if (delivery.published.length > 0) await deps.onSent?.(delivery.published.map((e) => e.id));
    const verdicts = verdictsOf(delivery);
    const outcome = laneOutcome(events, verdicts, legacy);
    if (outcome.to) {
      await moveLane(tx, lane, from, outcome.to);
      await holdKeys(tx, lane, outcome.holds, deps);
      await insertDeliveries(tx, lane, outcome.to, outcome.runs);
    }
    result.published.push(...publishedFor(events, outcome, verdicts));
    result.claimed = events.length;
    result.delivery = delivery;
    if (delivery.failed.length > 0) {
      result.failed = { error: delivery.error ?? new Error('publish failed'), events: delivery.failed };
    }
    return result;
  });
  if (result && result.claimed > 0) result.timings.writeMs = Math.round(performance.now() - sentAt);
  return result;
}

/**
 * Sends the events of `lane`'s due held keys, up to the cursor, each key's in order, and releases a key once
 * they are all published. A `legacy` key whose old rows are not all published yet is looked at again a second
 * later (it does not keep a slot of every pass). A refusal
 * moves the hold to the refused event (parked at RELAY_MAX_ATTEMPTS); a send without a verdict ends the pass.
 * @returns how many keys it sent.
 */
async function retryHolds(
  deps: LanePassDeps,
  tx: pg.PoolClient,
  lane: number,
  cursor: LanePosition,
  result: LanePassResult,
): Promise<number> {
  let tried = 0;
  for (const hold of await dueHolds(tx, lane, HOLDS_A_PASS)) {
    if (hold.reason === 'legacy' && (await waitsForLegacyRows(tx, hold))) continue;
    tried++;
    const events = await heldEvents(tx, hold, cursor);
    if (events.length === 0) {
      await releaseHold(tx, hold.message_key);
      continue;
    }
    const delivery = await deps.send(events);
    if (delivery.published.length > 0) await deps.onSent?.(delivery.published.map((e) => e.id));
    const verdicts = verdictsOf(delivery);
    const outcome = laneOutcome(events, verdicts);
    result.published.push(...publishedFor(events, outcome, verdicts));
    if (outcome.to) await insertDeliveries(tx, lane, outcome.to, outcome.runs);
    const refusal = outcome.holds[0];
    if (outcome.covered === events.length && !refusal) {
      await releaseHold(tx, hold.message_key);
      continue;
    }
    const stop = refusal?.from ?? { xid: events[outcome.covered].event_xid, id: events[outcome.covered].id };
    const error = refusal?.error ?? delivery.error?.message ?? 'no verdict';
    const { parked } = await recordHeldTry(tx, hold.message_key, stop, { refused: refusal !== undefined, error }, deps);
    if (refusal) {
      result.heldRefused.push({ event: events.find((e) => e.id === stop.id)!, error, parked });
      continue;
    }
    result.failed = { error: delivery.error ?? new Error(error), events: delivery.failed };
    break;
  }
  return tried;
}
