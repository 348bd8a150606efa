/** `explain`'s verdict for one document (issue 30, item 1): one case per verdict, and the order they apply in. */
import { explainDocument, type ExplainedDocumentInput, type ExplainWindow } from '../../src/domain/explain';

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
