/** The prune's cutoff (issue 28, item 1.6): AsOfDate − RetentionDays, never past the worker's today − RetentionDays. */
import { pruneCutoffFor } from '../../src/domain/cycle';
import { addDays, utcDate } from '../../src/domain/dates';
import { mulberry32 } from '../../scripts/faults/model';

const NOW = new Date('2026-12-05T10:00:00Z');

describe('pruneCutoffFor', () => {
  it("is AsOfDate − RetentionDays for today's cycle and for a past day", () => {
    expect(pruneCutoffFor('2026-12-05', 90, NOW)).toEqual({ cutoff: '2026-09-06' });
    expect(pruneCutoffFor('2026-11-01', 90, NOW)).toEqual({ cutoff: '2026-08-03' });
    expect(pruneCutoffFor('2026-12-05', 0, NOW)).toEqual({ cutoff: '2026-12-05' });
  });

  it("holds the cutoff at the worker's today when the cycle's AsOf lies after it (a clock that jumped ahead)", () => {
    expect(pruneCutoffFor('2027-12-05', 90, NOW)).toEqual({ cutoff: '2026-09-06', heldBackFrom: '2027-09-06' });
    // A workflow clock minutes ahead across midnight: the next day's cutoff waits for the worker's midnight.
    expect(pruneCutoffFor('2026-12-06', 30, new Date('2026-12-05T23:58:00Z'))).toEqual({
      cutoff: '2026-11-05',
      heldBackFrom: '2026-11-06',
    });
  });

  it('property (seeded): never past today − retention, and equal to AsOf − retention whenever AsOf is not after today', () => {
    const random = mulberry32(28);
    for (let i = 0; i < 2_000; i += 1) {
      const now = new Date(Date.UTC(2020, 0, 1) + Math.floor(random() * 3_000 * 86_400_000));
      const asOf = addDays(utcDate(now), Math.floor(random() * 800) - 400);
      const retention = Math.floor(random() * 1_000);
      const { cutoff, heldBackFrom } = pruneCutoffFor(asOf, retention, now);
      const allowed = addDays(utcDate(now), -retention);
      expect(cutoff <= allowed).toBe(true);
      if (asOf <= utcDate(now)) expect({ cutoff, heldBackFrom }).toEqual({ cutoff: addDays(asOf, -retention) });
      else expect({ cutoff, heldBackFrom }).toEqual({ cutoff: allowed, heldBackFrom: addDays(asOf, -retention) });
    }
  });
});
