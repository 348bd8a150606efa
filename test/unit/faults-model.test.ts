import {
  Draw,
  diffLines,
  dueWindowLowerBound,
  mulberry32,
  runCycle,
  type ModelCycle,
  type ModelDocument,
  type ModelLedger,
} from '../../scripts/faults/model';

const EMPTY: ModelLedger = { markers: [], pruneCutoff: null };
const cycleOn = (asOfDate: string, thresholdsDays = [30, 7, 1, 0], pruneCutoffRule = false): ModelCycle => ({
  asOfDate,
  thresholdsDays,
  retentionDays: 90,
  pruneCutoffRule,
});
const doc = (id: string, expiresAt: string | null, owner = 'o1', status = 'Active'): ModelDocument => ({
  id,
  ownerUserId: owner,
  expiresAt,
  status,
  isDeleted: false,
});

describe('the chaos model of the cycle rules', () => {
  it('a document first seen 5 days out gets markers at 30 and 7 and one reminder, at 7', () => {
    const { ledger, events } = runCycle([doc('a', '2026-09-07')], EMPTY, cycleOn('2026-09-02'));
    expect(ledger.markers.map((m) => m.thresholdDays).sort((x, y) => x - y)).toEqual([7, 30]);
    expect(events).toEqual([
      {
        ownerUserId: 'o1',
        remindedOn: '2026-09-02',
        documents: [{ documentId: 'a', expiresAt: '2026-09-07', thresholdDays: 7, daysLeft: 5 }],
      },
    ]);
  });

  it('one event per owner lists its due documents by expiry; archived, deleted and undated ones are left out', () => {
    const docs = [
      doc('b', '2026-09-20'),
      doc('a', '2026-09-01'),
      doc('c', '2026-09-03', 'o2', 'Archived'),
      { ...doc('d', '2026-09-03', 'o2'), isDeleted: true },
      doc('e', null, 'o2'),
      doc('f', '2026-12-01', 'o2'),
    ];
    const { events } = runCycle(docs, EMPTY, cycleOn('2026-09-02'));
    expect(events).toHaveLength(1);
    expect(events[0].documents.map((d) => [d.documentId, d.thresholdDays, d.daysLeft])).toEqual([
      ['a', 0, -1],
      ['b', 30, 18],
    ]);
  });

  it('a marker at or below the current threshold keeps a document quiet; a later day sends the next threshold', () => {
    const first = runCycle([doc('a', '2026-09-12')], EMPTY, cycleOn('2026-09-02'));
    expect(runCycle([doc('a', '2026-09-12')], first.ledger, cycleOn('2026-09-03')).events).toEqual([]);
    // Thresholds 30,3,0 after a reminder at 30: 7 is gone, so DaysLeft 5 is still quiet and 3 fires.
    expect(runCycle([doc('a', '2026-09-12')], first.ledger, cycleOn('2026-09-07', [30, 3, 0])).events).toEqual([]);
    const at3 = runCycle([doc('a', '2026-09-12')], first.ledger, cycleOn('2026-09-09', [30, 3, 0]));
    expect(at3.events[0].documents[0]).toMatchObject({ thresholdDays: 3, daysLeft: 3 });
    // Back on 30,7,1,0 two days earlier: 7 is current, the 3-marker below it keeps it quiet.
    expect(runCycle([doc('a', '2026-09-12')], at3.ledger, cycleOn('2026-09-07')).events).toEqual([]);
  });

  it('a renewal keeps the markers at their old expiry; the prune goes by that expiry', () => {
    const first = runCycle([doc('a', '2026-09-03')], EMPTY, cycleOn('2026-09-02'));
    const renewed = [doc('a', '2026-09-25')];
    const later = runCycle(renewed, first.ledger, cycleOn('2026-09-04'));
    expect(later.events).toEqual([]);
    const pruned = runCycle(renewed, later.ledger, cycleOn('2026-12-03'));
    // The old markers (expiry 09-03) are pruned; the renewed expiry, passed too, is reminded at 0.
    expect(pruned.ledger.markers.map((m) => [m.thresholdDays, m.expiresAt])).toEqual([[0, '2026-09-25']]);
    expect(pruned.ledger.pruneCutoff).toBe('2026-09-04');
  });

  it('a past day re-sends what a later prune removed under the retention bound, not under the prune-cutoff rule', () => {
    const old = [doc('p', '2026-06-03')];
    const marked = runCycle(old, EMPTY, cycleOn('2026-09-01'));
    const pruned = runCycle(old, marked.ledger, cycleOn('2026-09-05'));
    expect(pruned.ledger.markers).toEqual([]);
    expect(dueWindowLowerBound(cycleOn('2026-09-02'), pruned.ledger)).toBe('2026-06-04');
    expect(runCycle(old, pruned.ledger, cycleOn('2026-09-01')).events).toHaveLength(1);
    expect(dueWindowLowerBound(cycleOn('2026-09-01', undefined, true), pruned.ledger)).toBe('2026-06-07');
    expect(runCycle(old, pruned.ledger, cycleOn('2026-09-01', undefined, true)).events).toEqual([]);
  });

  it('diffLines names what is missing and what is extra, counting repeats', () => {
    expect(diffLines('x', ['a', 'b'], ['b', 'a'])).toEqual([]);
    expect(diffLines('x', ['a'], ['a', 'a', 'c'])[0]).toMatch(/0 expected but missing, 2 unexpected/);
  });
});

describe('the chaos model, random days and thresholds (property)', () => {
  const SETS = [
    [30, 7, 1, 0],
    [30, 14, 7, 1, 0],
    [30, 3, 0],
    [14, 2],
    [60, 30, 7, 0],
  ];

  it('with the prune-cutoff bound, days forward and back never re-send a (document, threshold) nor send a less urgent one after a more urgent one', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const draw = new Draw(seed);
      const docs = Array.from({ length: 8 }, (_, i) => doc(`d${i}`, addDaysTo('2026-06-01', draw.int(-20, 200))));
      let ledger = EMPTY;
      let day = '2026-06-01';
      const sent = new Map<string, number[]>();
      for (let step = 0; step < 40; step++) {
        day = addDaysTo(day, draw.chance(0.2) ? -draw.int(1, 5) : draw.int(1, 9));
        const result = runCycle(docs, ledger, cycleOn(day, draw.pick(SETS), true));
        ledger = result.ledger;
        for (const d of result.events.flatMap((e) => e.documents)) {
          const before = sent.get(d.documentId) ?? [];
          expect({ seed, step, sentAgain: before.includes(d.thresholdDays) }).toEqual({ seed, step, sentAgain: false });
          expect({ seed, step, lessUrgent: before.some((t) => t < d.thresholdDays) }).toEqual({
            seed,
            step,
            lessUrgent: false,
          });
          sent.set(d.documentId, [...before, d.thresholdDays]);
        }
      }
    }
  });
});

const addDaysTo = (date: string, days: number): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

describe('the chaos PRNG', () => {
  it('the same seed draws the same numbers and ids; another seed does not', () => {
    const a = new Draw(42);
    const b = new Draw(42);
    const drawn = (d: Draw) => [d.int(1, 100), d.next(), d.uuid(), d.pick(['x', 'y', 'z']), d.chance(0.5)];
    expect(drawn(a)).toEqual(drawn(b));
    expect(mulberry32(1)()).not.toBe(mulberry32(2)());
    expect(new Draw(7).uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('draws integers inside their bounds', () => {
    const d = new Draw(3);
    const values = Array.from({ length: 1000 }, () => d.int(-2, 2));
    expect(Math.min(...values)).toBe(-2);
    expect(Math.max(...values)).toBe(2);
  });
});
