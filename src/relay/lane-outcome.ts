/**
 * What a lane's batch did to the lane (docs/DESIGN.md, "The relay's next outbox"): how far its cursor moves,
 * which keys it holds, and where the published events went. A pure rule, so that a property test can hold it
 * against a model (`test/unit/lane-outcome.test.ts`).
 *
 * The cursor moves over the longest prefix of the batch in which every event has a verdict: published,
 * refused by Kafka (its key is then held from that event on), or left unsent behind a refused event of its key
 * (covered by that hold). The first event without a verdict (Kafka unreachable, the deadline; or none at all,
 * which the delivery never leaves but the rule does not take on trust) stops it: that
 * event and every one after it are read again by the next pass, so an event published after the stop is sent
 * again (at least once), and none is skipped.
 */
import type { PublishedPlacement } from '../db/outbox';
import type { DeliveryRun, LaneEvent, LanePosition } from '../db/outbox-events';
import type { NewHold } from '../db/outbox-held';

/** A batch's verdicts, as the relay's delivery gives them (by event id). */
export interface LaneVerdicts {
  published: ReadonlySet<string>;
  /** Where each published event went, when Kafka said. */
  placements: ReadonlyMap<string, PublishedPlacement>;
  /** Kafka's refusal of each refused event. */
  rejected: ReadonlyMap<string, string>;
  /** Events without a verdict. */
  failed: ReadonlySet<string>;
}

/** What the lane's transaction writes for a batch. */
export interface LaneOutcome {
  /** The cursor's new place, or undefined when it stays (the first event had no verdict). */
  to: LanePosition | undefined;
  /** Keys refused in the covered prefix, each from its first refused event, and the pass's own holds it reached. */
  holds: NewHold[];
  /** Where the covered prefix's published events went, in runs of consecutive offsets. */
  runs: DeliveryRun[];
  /** How many events the cursor passed: the batch's first `covered`. */
  covered: number;
  /** Events of the prefix that were published: the count the relay reports. */
  published: number;
}

/**
 * The lane's outcome for `events` (in lane order) and their verdicts. `held`: keys the pass holds before it sends
 * (each from its first event in the batch, which was not sent), as a refused event holds its key.
 */
export function laneOutcome(
  events: readonly LaneEvent[],
  verdicts: LaneVerdicts,
  held: readonly NewHold[] = [],
): LaneOutcome {
  const holds = new Map<string, NewHold>(held.map((h) => [h.messageKey, h]));
  let covered = 0;
  let published = 0;
  for (const e of events) {
    const refusal = verdicts.rejected.get(e.id);
    if (verdicts.failed.has(e.id)) break;
    if (refusal !== undefined) {
      if (!holds.has(e.message_key)) {
        holds.set(e.message_key, {
          messageKey: e.message_key,
          from: { xid: e.event_xid, id: e.id },
          reason: 'refused',
          error: refusal,
        });
      }
    } else if (verdicts.published.has(e.id)) published++;
    // No verdict and no refused event of its key before it: nothing says it may be passed.
    else if (!holds.has(e.message_key)) break;
    covered++;
  }
  const prefix = events.slice(0, covered);
  const passed = new Set(prefix.map((e) => e.id));
  const last = prefix[prefix.length - 1];
  return {
    to: last ? { xid: last.event_xid, id: last.id } : undefined,
    // A hold the pass brought whose first event the cursor did not reach is not needed yet.
    holds: [...holds.values()].filter((h) => passed.has(h.from.id)),
    runs: deliveryRuns(
      prefix.filter((e) => verdicts.published.has(e.id)),
      verdicts.placements,
    ),
    covered,
    published,
  };
}

/**
 * Published events grouped into runs of consecutive offsets of one partition, in offset order. Events without
 * a placement (the client did not say) are in none.
 */
export function deliveryRuns(
  events: readonly Pick<LaneEvent, 'id' | 'topic'>[],
  placements: ReadonlyMap<string, PublishedPlacement>,
): DeliveryRun[] {
  const placed: { id: string; topic: string; partition: number; offset: string }[] = [];
  for (const e of events) {
    const p = placements.get(e.id);
    if (p) placed.push({ id: e.id, topic: e.topic, partition: p.partition, offset: p.offset });
  }
  placed.sort((a, b) =>
    a.topic !== b.topic
      ? a.topic < b.topic
        ? -1
        : 1
      : a.partition - b.partition || compareOffsets(a.offset, b.offset),
  );
  const runs: DeliveryRun[] = [];
  let open: { run: DeliveryRun; last: string } | undefined;
  for (const x of placed) {
    if (open && open.run.topic === x.topic && open.run.partition === x.partition && follows(open.last, x.offset)) {
      open.run.ids.push(x.id);
      open.last = x.offset;
      continue;
    }
    const run = { topic: x.topic, partition: x.partition, baseOffset: x.offset, ids: [x.id] };
    runs.push(run);
    open = { run, last: x.offset };
  }
  return runs;
}

/** Offsets (decimal, no leading zeros) in numeric order, without parsing them: the longer one is larger. */
function compareOffsets(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** True when offset `next` is `prev` + 1: as numbers while they are exact as ones (15 digits), else as BigInt. */
function follows(prev: string, next: string): boolean {
  if (next.length <= 15) return Number(next) === Number(prev) + 1;
  return BigInt(next) === BigInt(prev) + 1n;
}
