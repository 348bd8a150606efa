/**
 * The lane's rule (src/relay/lane-outcome.ts): how far a batch moves its lane's cursor, which keys it holds
 * and where its events went. Named cases, then random batches against the rule's promises: nothing passed
 * without a verdict or a hold, the cursor as far as the verdicts allow, each published event in one run at
 * its offset.
 */
import type { PublishedPlacement } from '../../src/db/outbox';
import type { LaneEvent } from '../../src/db/outbox-events';
import { deliveryRuns, laneOutcome, type LaneVerdicts } from '../../src/relay/lane-outcome';
import { mulberry32 } from '../../scripts/faults/model';

function event(n: number, key: string, topic = 't'): LaneEvent {
  return {
    id: `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`,
    aggregate_type: 'Profile',
    aggregate_id: key,
    topic,
    message_key: key,
    event_type: 'E',
    contract_version: 1,
    payload: '{}',
    correlation_id: 'c',
    attempts: 0,
    trace_context: null,
    event_xid: String(1000 + n),
  };
}

function verdicts(v: Partial<LaneVerdicts>): LaneVerdicts {
  return { published: new Set(), placements: new Map(), rejected: new Map(), failed: new Set(), ...v };
}

const at = (partition: number, offset: number): PublishedPlacement => ({ partition, offset: String(offset) });

describe('a lane batch’s outcome', () => {
  const [a1, b1, a2, c1] = [event(1, 'a'), event(2, 'b'), event(3, 'a'), event(4, 'c')];

  test('every event published: the cursor moves to the last, one run a partition', () => {
    const out = laneOutcome(
      [a1, b1, a2, c1],
      verdicts({
        published: new Set([a1.id, b1.id, a2.id, c1.id]),
        placements: new Map([
          [a1.id, at(0, 10)],
          [a2.id, at(0, 11)],
          [b1.id, at(1, 5)],
          [c1.id, at(1, 6)],
        ]),
      }),
    );
    expect(out.to).toEqual({ xid: c1.event_xid, id: c1.id });
    expect(out.holds).toEqual([]);
    expect(out.published).toBe(4);
    expect(out.runs).toEqual([
      { topic: 't', partition: 0, baseOffset: '10', ids: [a1.id, a2.id] },
      { topic: 't', partition: 1, baseOffset: '5', ids: [b1.id, c1.id] },
    ]);
  });

  test('one refused event among good ones: its key is held from it, the cursor passes it and its key’s later event', () => {
    const out = laneOutcome(
      [a1, b1, a2, c1],
      verdicts({ published: new Set([b1.id, c1.id]), rejected: new Map([[a1.id, 'MESSAGE_TOO_LARGE']]) }),
    );
    expect(out.to).toEqual({ xid: c1.event_xid, id: c1.id });
    expect(out.holds).toEqual([
      { messageKey: 'a', from: { xid: a1.event_xid, id: a1.id }, reason: 'refused', error: 'MESSAGE_TOO_LARGE' },
    ]);
    expect(out.published).toBe(2);
  });

  test('an event without a verdict stops the cursor before it, even with later events published', () => {
    const out = laneOutcome(
      [a1, b1, a2, c1],
      verdicts({ published: new Set([a1.id, c1.id]), failed: new Set([b1.id, a2.id]) }),
    );
    expect(out.to).toEqual({ xid: a1.event_xid, id: a1.id });
    expect(out.published).toBe(1);
    expect(out.runs.flatMap((r) => r.ids)).toEqual([]);
  });

  test('the first event without a verdict: the cursor stays', () => {
    const out = laneOutcome([a1, b1], verdicts({ failed: new Set([a1.id]), published: new Set([b1.id]) }));
    expect(out.to).toBeUndefined();
    expect(out.holds).toEqual([]);
    expect(out.published).toBe(0);
  });

  test('an event in no list and behind no refusal of its key is not passed', () => {
    const out = laneOutcome([a1, b1, c1], verdicts({ published: new Set([a1.id, c1.id]) }));
    expect(out.to).toEqual({ xid: a1.event_xid, id: a1.id });
  });

  test('a refusal after the stop holds nothing: the next pass reads it again', () => {
    const out = laneOutcome(
      [a1, b1, c1],
      verdicts({
        failed: new Set([b1.id]),
        published: new Set([a1.id]),
        rejected: new Map([[c1.id, 'INVALID_RECORD']]),
      }),
    );
    expect(out.holds).toEqual([]);
    expect(out.to).toEqual({ xid: a1.event_xid, id: a1.id });
  });

  test('a key the pass holds itself (its old rows first): its events are passed unsent, its hold kept once reached', () => {
    const legacy = { messageKey: 'a', from: { xid: a1.event_xid, id: a1.id }, reason: 'legacy' as const };
    const out = laneOutcome([a1, b1, a2, c1], verdicts({ published: new Set([b1.id, c1.id]) }), [legacy]);
    expect(out.to).toEqual({ xid: c1.event_xid, id: c1.id });
    expect(out.holds).toEqual([legacy]);
    expect(out.published).toBe(2);
    // Mirror image: the cursor stops before the held key's first event, so the hold is not written yet.
    const stopped = laneOutcome([b1, a1, a2], verdicts({ failed: new Set([b1.id]) }), [legacy]);
    expect(stopped).toMatchObject({ to: undefined, holds: [], covered: 0 });
  });

  test('an empty batch moves nothing', () => {
    expect(laneOutcome([], verdicts({}))).toEqual({ to: undefined, holds: [], runs: [], covered: 0, published: 0 });
  });

  test('runs split where offsets jump (a partition sent in halves around a refused event)', () => {
    const runs = deliveryRuns(
      [a1, b1, a2],
      new Map([
        [a1.id, at(2, 7)],
        [b1.id, at(2, 8)],
        [a2.id, at(2, 12)],
      ]),
    );
    expect(runs).toEqual([
      { topic: 't', partition: 2, baseOffset: '7', ids: [a1.id, b1.id] },
      { topic: 't', partition: 2, baseOffset: '12', ids: [a2.id] },
    ]);
  });

  test('offsets past 2^53 and of different lengths are ordered and joined as numbers, not as text', () => {
    const big = (offset: string): PublishedPlacement => ({ partition: 0, offset });
    const runs = deliveryRuns(
      [a1, b1, a2, c1],
      new Map([
        [a1.id, big('9007199254740993')],
        [b1.id, big('9007199254740992')],
        [a2.id, big('999999999999999')],
        [c1.id, big('1000000000000000')],
      ]),
    );
    expect(runs).toEqual([
      { topic: 't', partition: 0, baseOffset: '999999999999999', ids: [a2.id, c1.id] },
      { topic: 't', partition: 0, baseOffset: '9007199254740992', ids: [b1.id, a1.id] },
    ]);
  });

  test('random batches keep the rule’s promises (500 batches)', () => {
    const random = mulberry32(48);
    for (let round = 0; round < 500; round++) {
      const n = Math.floor(random() * 12);
      const events = Array.from({ length: n }, (_, i) => event(i + 1, `k${Math.floor(random() * 4)}`));
      // Verdicts as the delivery gives them: a key refused in the batch leaves its later events unsent; any
      // event may end without a verdict; published events get offsets in order per partition.
      const v = verdicts({ published: new Set(), placements: new Map(), rejected: new Map(), failed: new Set() });
      const refusedKeys = new Set<string>();
      const nextOffset = [0, 0, 0];
      for (const e of events) {
        const r = random();
        if (refusedKeys.has(e.message_key)) {
          if (r < 0.2) (v.failed as Set<string>).add(e.id);
          continue;
        }
        if (r < 0.15) (v.failed as Set<string>).add(e.id);
        else if (r < 0.3) {
          (v.rejected as Map<string, string>).set(e.id, 'refused');
          refusedKeys.add(e.message_key);
        } else {
          (v.published as Set<string>).add(e.id);
          const partition = Number(e.message_key.slice(1)) % 3;
          if (random() < 0.9)
            (v.placements as Map<string, PublishedPlacement>).set(e.id, at(partition, nextOffset[partition]));
          nextOffset[partition] += random() < 0.1 ? 2 : 1;
        }
      }
      const out = laneOutcome(events, v);
      const covered = out.to ? events.findIndex((e) => e.id === out.to?.id) + 1 : 0;
      expect(out.covered).toBe(covered);
      // Nothing passed without a verdict: each covered event is published, or its key is held from an event
      // at or before it.
      for (const e of events.slice(0, covered)) {
        if (v.published.has(e.id)) continue;
        const hold = out.holds.find((h) => h.messageKey === e.message_key);
        expect(hold).toBeDefined();
        expect(events.findIndex((x) => x.id === hold?.from.id)).toBeLessThanOrEqual(events.indexOf(e));
      }
      // As far as the verdicts allow: the next event has none of its own and no refusal before it covers it.
      if (covered < events.length) {
        const next = events[covered];
        const heldBefore = events
          .slice(0, covered)
          .some((e) => e.message_key === next.message_key && v.rejected.has(e.id));
        expect(v.failed.has(next.id) || (!v.published.has(next.id) && !v.rejected.has(next.id) && !heldBefore)).toBe(
          true,
        );
      }
      // Holds only for refusals the cursor passed, each from its key's first refused event.
      for (const h of out.holds) {
        const first = events.slice(0, covered).find((e) => e.message_key === h.messageKey && v.rejected.has(e.id));
        expect(h.from.id).toBe(first?.id);
      }
      expect(out.holds.length).toBe(
        new Set(
          events
            .slice(0, covered)
            .filter((e) => v.rejected.has(e.id))
            .map((e) => e.message_key),
        ).size,
      );
      // Each covered published event with a placement in exactly one run, at its offset.
      const published = events.slice(0, covered).filter((e) => v.published.has(e.id));
      expect(out.published).toBe(published.length);
      const inRuns = new Map<string, PublishedPlacement>();
      for (const run of out.runs) {
        run.ids.forEach((id, i) => {
          expect(inRuns.has(id)).toBe(false);
          inRuns.set(id, { partition: run.partition, offset: String(BigInt(run.baseOffset) + BigInt(i)) });
        });
      }
      expect(inRuns).toEqual(
        new Map(published.filter((e) => v.placements.has(e.id)).map((e) => [e.id, v.placements.get(e.id)])),
      );
    }
  });
});
