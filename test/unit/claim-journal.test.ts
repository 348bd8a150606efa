/**
 * The retry rule's model (src/activities/claim/journal.ts): an activity's attempts commit parts in one order, each
 * dying at a random transaction, the last running to its end; whatever the deaths, the last attempt reports what
 * an attempt that never died reports, and no part is committed twice.
 */
import { Journal, groupPart, pagePart, secondTryPart } from '../../src/activities/claim/journal';
import type { Receipt, RemindOwnersResult } from '../../src/activities/claim/types';
import { mulberry32 } from '../../scripts/faults/model';

/** A part of a page as a first try meets it: the owners it locks, those it finds busy, what its claim does. */
interface PlannedPart {
  part: string;
  locked: string[];
  busy: string[];
  sent: number;
  markers: number;
}

/** An activity's pages' parts, in order, and the owners held for good (still busy at the second try). */
interface Plan {
  parts: PlannedPart[];
  heldForGood: Set<string>;
  groupSize: number;
}

function randomPlan(random: () => number): Plan {
  const owners = Array.from({ length: 12 }, (_, i) => `owner-${i}`);
  const pick = () => owners[Math.floor(random() * owners.length)];
  const parts: PlannedPart[] = [];
  const pages = 1 + Math.floor(random() * 4);
  for (let page = 1; page <= pages; page += 1) {
    const groups = Math.floor(random() * 3);
    for (let g = -1; g < groups; g += 1) {
      const locked = [...new Set(Array.from({ length: 1 + Math.floor(random() * 3) }, pick))];
      const busy = [...new Set(Array.from({ length: Math.floor(random() * 3) }, pick))].filter(
        (o) => !locked.includes(o),
      );
      parts.push({
        part: g < 0 ? pagePart(page) : groupPart(page, g),
        locked,
        busy,
        sent: Math.floor(random() * 3),
        markers: Math.floor(random() * 5),
      });
    }
  }
  return { parts, heldForGood: new Set(owners.filter(() => random() < 0.2)), groupSize: 1 + Math.floor(random() * 2) };
}

const counts = (processed: number, sent: number, markers: number) => ({
  ownersProcessed: processed,
  ownersNotified: Math.min(processed, sent),
  remindersSent: sent,
  markersInserted: markers,
  skippedAlreadyMarked: 0,
});

/**
 * One attempt over `plan`, its earlier attempts' receipts given: replays what they committed, commits the rest,
 * and dies before its `dieAt`-th commit when given. Returns what it committed, and its result if it ran to the end.
 */
function attempt(
  plan: Plan,
  earlier: Receipt[],
  dieAt?: number,
): { committed: Receipt[]; result?: RemindOwnersResult & { ownersFoundBusy: number } } {
  const journal = new Journal(earlier);
  const committed: Receipt[] = [];
  const commit = (r: Receipt): boolean => {
    if (committed.length === dieAt) return false;
    journal.commit(r);
    committed.push(r);
    return true;
  };
  for (const p of plan.parts) {
    if (journal.replay(p.part)) continue;
    const r = {
      ...counts(p.locked.length, p.sent, p.markers),
      part: p.part,
      ownerIds: [],
      busyOwnerIds: p.busy,
      clearedOwnerIds: journal.cleared(p.locked),
    };
    if (!commit(r)) return { committed };
  }
  const { owners, firstPart } = journal.secondTryOwners();
  for (let i = 0; i < owners.length; i += plan.groupSize) {
    const group = owners.slice(i, i + plan.groupSize);
    const busy = group.filter((o) => plan.heldForGood.has(o));
    const r = {
      ...counts(group.length - busy.length, group.length - busy.length, group.length - busy.length),
      part: secondTryPart(firstPart + i / plan.groupSize),
      ownerIds: group,
      busyOwnerIds: busy,
      clearedOwnerIds: journal.cleared(group.filter((o) => !busy.includes(o))),
    };
    if (!commit(r)) return { committed };
  }
  return { committed, result: { ...journal.result(), ownersFoundBusy: journal.ownersFoundBusy } };
}

test('property (seeded): attempts dying at any commit, the last one reports what an attempt that never died reports, and commits no part twice', () => {
  const random = mulberry32(46);
  for (let run = 0; run < 2_000; run += 1) {
    const plan = randomPlan(random);
    const whole = attempt(plan, []);
    expect(whole.result).toBeDefined();
    const receipts: Receipt[] = [];
    let last: ReturnType<typeof attempt> | undefined;
    for (let n = 1; !last?.result; n += 1) {
      // Up to four attempts die, each at a random commit of what is left; then one runs to its end.
      const dieAt = n <= 4 && random() < 0.7 ? Math.floor(random() * 4) : undefined;
      last = attempt(plan, receipts, dieAt);
      receipts.push(...last.committed);
    }
    expect(last.result).toEqual(whole.result);
    expect(new Set(receipts.map((r) => r.part)).size).toBe(receipts.length);
  }
});

test('the mirror: a receipt counted twice is refused, not added', () => {
  const r: Receipt = {
    ...counts(1, 1, 1),
    part: pagePart(1),
    ownerIds: [],
    busyOwnerIds: [],
    clearedOwnerIds: [],
  };
  const journal = new Journal([r]);
  expect(journal.replay(pagePart(1))).toBe(true);
  expect(journal.replay(pagePart(1))).toBe(true);
  expect(() => journal.commit(r)).toThrow(/counted twice/);
  expect(journal.result().remindersSent).toBe(1);
});

test("a first try's busy owner a later part claims gets no second try; one still busy after its second try is reported", () => {
  const journal = new Journal();
  const receipt = (part: string, busy: string[], cleared: string[], ownerIds: string[] = []): Receipt => ({
    ...counts(1, 0, 0),
    part,
    ownerIds,
    busyOwnerIds: busy,
    clearedOwnerIds: cleared,
  });
  journal.commit(receipt(pagePart(1), ['a', 'b'], []));
  journal.commit(receipt(pagePart(2), [], journal.cleared(['a', 'c'])));
  const { owners, firstPart } = journal.secondTryOwners();
  expect({ owners, firstPart }).toEqual({ owners: ['b'], firstPart: 0 });
  journal.commit(receipt(secondTryPart(0), ['b'], [], ['b']));
  expect(journal.result().busyOwnerIds).toEqual(['b']);
  expect(journal.ownersFoundBusy).toBe(2);
});
