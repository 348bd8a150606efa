/**
 * Which day a run without `asOf` computes as of (issue 19, rule 2), and which completed runs count as
 * the job being alive.
 */
import client from 'prom-client';
import { defaultAsOf } from '../../src/domain/cycle-input';
import { ZERO_COUNTS, type CycleResult } from '../../src/domain/cycle';
import { coversToday, createWorkerMetrics, recordCycleEnded } from '../../src/observability/metrics';

const at = (iso: string) => new Date(iso);

describe('defaultAsOf', () => {
  test("a scheduled run that starts on its action time's day computes as of the action time", () => {
    expect(defaultAsOf(at('2026-12-04T03:00:00Z'), at('2026-12-04T03:00:02Z'))).toEqual(at('2026-12-04T03:00:00Z'));
  });

  test('a backfilled day ten days ago runs as of its start, never replayed stale', () => {
    expect(defaultAsOf(at('2026-11-24T03:00:00Z'), at('2026-12-04T10:15:00Z'))).toEqual(at('2026-12-04T10:15:00Z'));
  });

  test('a late catch-up (a tick for 23:30 fired after midnight) runs as of its start, the next day', () => {
    expect(defaultAsOf(at('2026-12-03T23:30:00Z'), at('2026-12-04T00:20:00Z'))).toEqual(at('2026-12-04T00:20:00Z'));
  });

  test('a run no schedule started computes as of its start', () => {
    expect(defaultAsOf(undefined, at('2026-12-04T08:00:00Z'))).toEqual(at('2026-12-04T08:00:00Z'));
  });
});

describe('the liveness metric', () => {
  const result = (asOf: string): CycleResult => ({
    status: 'completed',
    jobRunId: 'x',
    asOf,
    thresholdsDays: [30, 7, 1, 0],
    pruned: 0,
    durationMs: 1,
    runs: 1,
    ...ZERO_COUNTS,
  });
  const now = Date.parse('2026-12-04T12:00:00Z');
  const lastSuccess = async (m: ReturnType<typeof createWorkerMetrics>) => (await m.lastSuccess.get()).values[0]?.value;

  test('a completed run as of today sets the last-success time', async () => {
    const m = createWorkerMetrics([30, 7, 1, 0], new client.Registry());
    recordCycleEnded(m, result('2026-12-04T03:00:00.000Z'), now);
    expect(await lastSuccess(m)).toBe(now / 1000);
  });

  test('a completed manual run as of last year leaves it alone, so NoSuccessfulCycle still fires while the schedule is paused', async () => {
    const m = createWorkerMetrics([30, 7, 1, 0], new client.Registry());
    recordCycleEnded(m, result('2025-12-04T00:00:00.000Z'), now);
    expect(await lastSuccess(m)).toBe(0);
    expect(coversToday('2026-12-03T23:59:59.999Z', now)).toBe(false);
  });
});
