/**
 * `explain`'s verdict for one document (issue 30, item 1): one case per verdict, the order they apply in,
 * and a due document read against the day's cycles.
 */
import {
  explainAfterCycles,
  explainDocument,
  type CycleOfDay,
  type DayHistory,
  type ExplainedDocumentInput,
  type ExplainWindow,
} from '../../src/domain/explain';
import { addDays } from '../../src/domain/dates';
import { mulberry32 } from '../../scripts/faults/model';

const WINDOW: ExplainWindow = {
  asOfDate: '2026-09-02',
  thresholdsDays: [30, 7, 1, 0],
  retentionDays: 90,
  pruneCutoff: null,
};
const doc = (over: Partial<ExplainedDocumentInput> = {}): ExplainedDocumentInput => ({
  documentId: 'd1',
  type: 'ForeignPassport',
  numberMask: '**** 1234',
  status: 'Active',
  isDeleted: false,
  expiresAt: '2026-09-07',
  ...over,
});
const marker = (thresholdDays: number) => ({ thresholdDays, remindedAt: '2026-09-01T03:00:00Z', queuedBy: 'run-1/7' });

describe('explainDocument', () => {
  it('due: the current threshold, days left and the thresholds crossed', () => {
    expect(explainDocument(doc(), [], WINDOW)).toMatchObject({
      verdict: 'due',
      daysLeft: 5,
      currentThreshold: 7,
      thresholdsCrossed: [30, 7],
      why: 'due: the next cycle as of 2026-09-02 reminds it at 7 days (5 days left)',
    });
    expect(explainDocument(doc({ expiresAt: '2026-08-30' }), [], WINDOW).why).toBe(
      'due: the next cycle as of 2026-09-02 reminds it at 0 days (expired 3 days ago)',
    );
  });

  it('reminded: by the most urgent marker at or below the current threshold, naming the run and the next one', () => {
    expect(explainDocument(doc(), [marker(30), marker(7)], WINDOW).why).toBe(
      'reminded at 7 days on 2026-09-01 by run run-1; the next reminder is at 1 day',
    );
    expect(explainDocument(doc({ expiresAt: '2026-09-01' }), [marker(0)], WINDOW).why).toBe(
      'reminded at 0 days on 2026-09-01 by run run-1; no threshold is left below it',
    );
    // A marker only above the current threshold (a "30" when 7 is due) does not count: due at 7.
    expect(explainDocument(doc(), [marker(30)], WINDOW).verdict).toBe('due');
  });

  it('not due, past retention, below the prune cutoff, without expiry, inactive, deleted', () => {
    expect(explainDocument(doc({ expiresAt: '2026-10-17' }), [], WINDOW).why).toBe(
      'not due: expires in 45 days, and the first threshold is 30 days',
    );
    expect(explainDocument(doc({ expiresAt: '2026-05-01' }), [], WINDOW).verdict).toBe('past-retention');
    expect(
      explainDocument(doc({ expiresAt: '2026-08-01' }), [], { ...WINDOW, pruneCutoff: '2026-08-10' }).verdict,
    ).toBe('pruned');
    expect(explainDocument(doc({ expiresAt: null }), [], WINDOW).verdict).toBe('no-expiry');
    expect(explainDocument(doc({ status: 'Archived' }), [], WINDOW).why).toBe(
      'inactive (Archived): only active documents are reminded',
    );
    // Deleted wins over everything else, then inactive.
    expect(explainDocument(doc({ isDeleted: true, status: 'Archived', expiresAt: null }), [], WINDOW).verdict).toBe(
      'deleted',
    );
  });
});

describe('explainAfterCycles', () => {
  const cycle = (status = 'COMPLETED'): CycleOfDay => ({
    workflowId: 'cycle-1',
    runId: 'run-1',
    status,
    webUi: '/namespaces/default/workflows/cycle-1/run-1/history',
  });
  const seenIn = { ...cycle(), activityType: 'claimPage', activityId: '3' };
  const due = explainDocument(doc(), [], WINDOW);
  const dueWhy = 'due: the next cycle as of 2026-09-02 reminds it at 7 days (5 days left)';

  it('waiting: a cycle of the day met the owner busy', () => {
    const met = { cycle: cycle(), outcome: 'busy' as const, seenIn };
    expect(explainAfterCycles(due, { cycles: [cycle()], met }, WINDOW.asOfDate)).toMatchObject({
      verdict: 'waiting',
      why: 'waiting: the owner was busy in cycle cycle-1, run run-1 (another transaction held it); the next cycle retries',
      metInCycle: met,
    });
    const running = { ...met, cycle: cycle('RUNNING') };
    expect(explainAfterCycles(due, { cycles: [running.cycle], met: running }, WINDOW.asOfDate).why).toBe(
      'waiting: the owner was busy in cycle cycle-1, run run-1 (another transaction held it); that cycle retries it before it ends, else the next cycle does',
    );
  });

  it("failed: a cycle of the day's claim of the owner failed for good, with its error", () => {
    const met = { cycle: cycle(), outcome: 'failed' as const, error: 'DataError: bad value', seenIn };
    expect(explainAfterCycles(due, { cycles: [cycle()], met }, WINDOW.asOfDate)).toMatchObject({
      verdict: 'failed',
      why: 'failed in cycle cycle-1, run run-1: DataError: bad value; the next cycle retries',
    });
  });

  it('due, with what the newest cycle of the day was doing when it did not meet the owner', () => {
    const whyAfter = (status: string) => explainAfterCycles(due, { cycles: [cycle(status)] }, WINDOW.asOfDate).why;
    expect(whyAfter('COMPLETED')).toBe(
      `${dueWhy}; cycle cycle-1, run run-1, completed without leaving its owner busy or failed: the document became due, or was added, after that cycle read it`,
    );
    expect(whyAfter('RUNNING')).toBe(
      `${dueWhy}; cycle cycle-1, run run-1, is still running and may not have reached it yet`,
    );
    expect(whyAfter('TERMINATED')).toBe(
      `${dueWhy}; cycle cycle-1, run run-1, ended TERMINATED and may not have reached it`,
    );
  });

  it('due as it was without a cycle of the day; with the history unread, says why', () => {
    expect(explainAfterCycles(due, { cycles: [] }, WINDOW.asOfDate)).toEqual(due);
    expect(explainAfterCycles(due, { unavailable: 'connection refused' }, WINDOW.asOfDate)).toMatchObject({
      verdict: 'due',
      why: `${dueWhy}; whether a cycle as of 2026-09-02 already met its owner busy or failing is in Temporal's history, not read: connection refused`,
    });
  });

  it("only a due document changes: every other verdict is the database's alone, whatever the cycles say (seeded)", () => {
    const random = mulberry32(30);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
    for (let i = 0; i < 500; i += 1) {
      const over: Partial<ExplainedDocumentInput> = {
        status: pick(['Active', 'Active', 'Archived']),
        isDeleted: random() < 0.2,
        expiresAt: random() < 0.1 ? null : addDays(WINDOW.asOfDate, Math.floor(random() * 260) - 200),
      };
      const markers = [30, 7, 1, 0].filter(() => random() < 0.3).map(marker);
      const met = pick([undefined, 'busy' as const, 'failed' as const]);
      const day: DayHistory =
        random() < 0.2
          ? { unavailable: 'down' }
          : {
              cycles: [cycle(pick(['COMPLETED', 'RUNNING', 'FAILED']))],
              ...(met ? { met: { cycle: cycle(), outcome: met, seenIn } } : {}),
            };
      const before = explainDocument(doc(over), markers, WINDOW);
      const after = explainAfterCycles(before, day, WINDOW.asOfDate);
      if (before.verdict !== 'due') expect(after).toBe(before);
      else if (met && !('unavailable' in day)) expect(after.verdict).toBe(met === 'busy' ? 'waiting' : 'failed');
      else expect(after.verdict).toBe('due');
    }
  });
});
