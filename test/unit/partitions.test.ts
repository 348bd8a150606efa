/**
 * The partition rules (docs/DESIGN.md#partitions): how many partitions a day gets, and the id ranges they
 * scan, which cover the UUID space once, in order, with no gap and no overlap, for any count.
 */
import crypto from 'node:crypto';
import { idRanges } from '../../src/db/candidates';
import { partitionCount, partitionOfWorkflowId, partitionWorkflowId } from '../../src/domain/cycle';
import { CYCLE_SETTINGS } from '../../src/domain/settings';
import { mulberry32 } from '../../scripts/faults/model';

const MAX_PARTITIONS = CYCLE_SETTINGS.partitions.max;

describe('partitionCount', () => {
  it('gives a small day and a day with nothing due one partition, and a big day one per partition size', () => {
    expect(partitionCount(0, 8, 25_000)).toBe(1);
    expect(partitionCount(24_999, 8, 25_000)).toBe(1);
    expect(partitionCount(25_001, 8, 25_000)).toBe(2);
    expect(partitionCount(100_000, 8, 25_000)).toBe(4);
  });

  it('never goes past the configured maximum, nor the hard one', () => {
    expect(partitionCount(10_000_000, 8, 25_000)).toBe(8);
    expect(partitionCount(10_000_000, 1_000, 1)).toBe(MAX_PARTITIONS);
  });

  it('holds its bounds for random days (seeded)', () => {
    const random = mulberry32(29);
    for (let i = 0; i < 2_000; i += 1) {
      const due = Math.floor(random() * 1e7);
      const max = 1 + Math.floor(random() * MAX_PARTITIONS);
      const size = 1 + Math.floor(random() * 1e5);
      const k = partitionCount(due, max, size);
      expect(k).toBeGreaterThanOrEqual(1);
      expect(k).toBeLessThanOrEqual(max);
      // Enough partitions for the day unless capped, and no more than it needs.
      if (k < max) expect(k * size).toBeGreaterThanOrEqual(due);
      if (k > 1) expect((k - 1) * size).toBeLessThan(due);
    }
  });
});

describe('idRanges', () => {
  it('covers the UUID space from the nil UUID, each range ending where the next begins', () => {
    for (let count = 1; count <= MAX_PARTITIONS; count += 1) {
      const ranges = idRanges(count);
      expect(ranges).toHaveLength(count);
      expect(ranges[0][0]).toBe('00000000-0000-0000-0000-000000000000');
      expect(ranges[count - 1][1]).toBeNull();
      for (let i = 1; i < count; i += 1) expect(ranges[i][0]).toBe(ranges[i - 1][1]);
    }
  });

  it('puts every id in exactly one partition, for random ids and counts', () => {
    const random = mulberry32(7);
    for (let i = 0; i < 2_000; i += 1) {
      const count = 1 + Math.floor(random() * MAX_PARTITIONS);
      const id = crypto.randomUUID();
      const holders = idRanges(count).filter(([from, until]) => id >= from && (until === null || id < until));
      expect(holders).toHaveLength(1);
    }
  });
});

describe('partitionOfWorkflowId', () => {
  it("reads back the partition a partition's workflow id names, and nothing from a cycle's", () => {
    for (const count of [1, 2, 8, MAX_PARTITIONS]) {
      for (let index = 0; index < count; index += 1) {
        expect(
          partitionOfWorkflowId(partitionWorkflowId('document-expiry-reminder-2026-09-02T03:00:00Z', { index, count })),
        ).toEqual({
          index,
          count,
        });
      }
    }
    expect(partitionOfWorkflowId('manual-2026-09-02-a1b2c3')).toBeUndefined();
  });
});
