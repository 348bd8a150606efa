/**
 * `explain`'s verdict for one document (issue 30, item 1): one case per verdict, the order they apply in,
 * and a due document read against the day's cycles. And one vocabulary (issue 38, item 4): the verdict
 * words of docs/OPERATIONS.md's support section are the words `explain` prints and the JSON values
 * (`VERDICTS`); every exit code of the entry points is in README's exit-code table.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  VERDICTS,
  explainAfterCycles,
  explainDocument,
  type CycleOfDay,
  type DayHistory,
  type PartitionOfDay,
  type DocumentExplanation,
  type ExplainedDocumentInput,
  type ExplainWindow,
} from '../../src/domain/explain';
import { explanationText, type Explanation } from '../../src/operations/explain';
import { EXIT_CODES } from '../../src/run-main';
import { buildProgram } from '../../src/client';
import type { Command, CommanderError } from 'commander';

const OWNER = '0190f3a2-7c1e-7abc-8000-00000000000a';
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
      'reminded: at 7 days on 2026-09-01 by run run-1; the next reminder is at 1 day',
    );
    expect(
      explainDocument(doc(), [{ ...marker(7), queuedBy: 'run-2/4', workflowId: 'cycle-2/partition-1-of-2' }], WINDOW)
        .why,
    ).toBe(
      'reminded: at 7 days on 2026-09-01 by run run-2 of workflow cycle-2/partition-1-of-2; the next reminder is at 1 day',
    );
    expect(explainDocument(doc({ expiresAt: '2026-09-01' }), [marker(0)], WINDOW).why).toBe(
      'reminded: at 0 days on 2026-09-01 by run run-1; no threshold is left below it',
    );
    // A marker only above the current threshold (a "30" when 7 is due) does not count: due at 7.
    expect(explainDocument(doc(), [marker(30)], WINDOW).verdict).toBe('due');
  });

  it('a document that changed owner is judged by its markers, whoever they were written for (issue 38)', () => {
    const earlier = { ...marker(7), previousOwnerUserId: 'owner-0' };
    expect(explainDocument(doc(), [earlier], WINDOW)).toMatchObject({
      verdict: 'reminded',
      why: 'reminded: at 7 days on 2026-09-01 to its previous owner owner-0 by run run-1; the next reminder is at 1 day',
    });
  });

  it('not due, past retention, below the prune cutoff, without expiry, inactive, deleted', () => {
    expect(explainDocument(doc({ expiresAt: '2026-10-17' }), [], WINDOW).why).toBe(
      'not-due: expires in 45 days, and the first threshold is 30 days',
    );
    expect(explainDocument(doc({ expiresAt: '2026-05-01' }), [], WINDOW).verdict).toBe('past-retention');
    expect(
      explainDocument(doc({ expiresAt: '2026-08-01' }), [], { ...WINDOW, pruneCutoff: '2026-08-10' }).verdict,
    ).toBe('pruned');
    expect(explainDocument(doc({ expiresAt: null }), [], WINDOW).verdict).toBe('no-expiry');
    expect(explainDocument(doc({ status: 'Archived' }), [], WINDOW).why).toBe(
      'inactive: its status is Archived, and only active documents are reminded',
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
  const seenIn = { ...cycle(), activityType: 'claimPage', activityId: '3', running: true };
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

  it('waiting in a running cycle whose partition that met the owner has ended: the next cycle retries, not that one (issue 47)', () => {
    const partitionId = 'cycle-1/partition-1-of-2';
    const met = {
      cycle: cycle('RUNNING'),
      outcome: 'busy' as const,
      seenIn: { ...seenIn, workflowId: partitionId, running: false },
    };
    expect(explainAfterCycles(due, { cycles: [met.cycle], met }, WINDOW.asOfDate).why).toBe(
      `waiting: the owner was busy in cycle cycle-1, run run-1 (another transaction held it); ${partitionId}, the partition that reads it, has ended and counted it busy: the next cycle retries`,
    );
    // Its mirror: the partition still runs, so it retries the owner before it ends.
    const open = { ...met, seenIn: { ...met.seenIn, running: true } };
    expect(explainAfterCycles(due, { cycles: [met.cycle], met: open }, WINDOW.asOfDate).why).toContain(
      'that cycle retries it before it ends',
    );
  });

  it("due, by the document's own partition: its cycle's outcome is its worst partition's (issue 47)", () => {
    const stoppedCycle = { ...cycle('COMPLETED'), outcome: 'time-limit' };
    const ranges = { low: ['00000000', 'e0000000'] as const, high: ['e0000000', null] as const };
    const partition = (range: readonly [string, string | null], over: Partial<PartitionOfDay>): PartitionOfDay => ({
      workflowId: `cycle-1/partition-${range === ranges.low ? 0 : 1}-of-2`,
      runId: 'run-p',
      range,
      running: false,
      ...over,
    });
    // The document (id d1) is in the low range; the high partition stopped, the low one read every page.
    const whyWith = (partitions: PartitionOfDay[]) =>
      explainAfterCycles(due, { cycles: [stoppedCycle], partitions }, WINDOW.asOfDate).why;
    expect(
      whyWith([partition(ranges.low, { outcome: 'completed' }), partition(ranges.high, { outcome: 'time-limit' })]),
    ).toBe(
      `${dueWhy}; partition cycle-1/partition-0-of-2, run run-p, of cycle cycle-1, read every page of its range without leaving its owner busy or failed: the document became due, or was added, after that partition read it`,
    );
    expect(whyWith([partition(ranges.low, { outcome: 'time-limit' })])).toBe(
      `${dueWhy}; partition cycle-1/partition-0-of-2, run run-p, of cycle cycle-1, stopped before it reached this document (outcome time-limit: it ran out of its maximum run duration); the next cycle reminds it`,
    );
    expect(whyWith([partition(ranges.low, { running: true })])).toBe(
      `${dueWhy}; partition cycle-1/partition-0-of-2, run run-p, of cycle cycle-1, is still running and may not have reached it yet`,
    );
    // A partition of another range says nothing of this document: the cycle's outcome speaks.
    expect(whyWith([partition(ranges.high, { outcome: 'completed' })])).toContain(
      'cycle cycle-1, run run-1, stopped before it reached this document',
    );
  });

  it("failed: a cycle of the day's claim of the owner failed for good, with its error", () => {
    const met = { cycle: cycle(), outcome: 'failed' as const, error: 'DataError: bad value', seenIn };
    expect(explainAfterCycles(due, { cycles: [cycle()], met }, WINDOW.asOfDate)).toMatchObject({
      verdict: 'failed',
      why: 'failed: in cycle cycle-1, run run-1: DataError: bad value; the next cycle retries',
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
    const stopped = (outcome: string) =>
      explainAfterCycles(due, { cycles: [{ ...cycle('COMPLETED'), outcome }] }, WINDOW.asOfDate).why;
    // Issue 38: a cycle that stopped returns a result, so Temporal lists it COMPLETED; its outcome says it stopped.
    expect(stopped('time-limit')).toBe(
      `${dueWhy}; cycle cycle-1, run run-1, stopped before it reached this document (outcome time-limit: it ran out of its maximum run duration); the next cycle reminds it`,
    );
    expect(stopped('cancelled')).toBe(
      `${dueWhy}; cycle cycle-1, run run-1, stopped before it reached this document (outcome cancelled: it was cancelled); the next cycle reminds it`,
    );
    expect(stopped('completed')).toBe(whyAfter('COMPLETED'));
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

const read = (file: string) => fs.readFileSync(path.resolve(__dirname, '../..', file), 'utf8');

/** The text of `heading`'s section of a Markdown file, up to the next heading of its level. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(heading);
  if (start < 0) throw new Error(`no section ${heading}`);
  const level = /^#+/.exec(heading)![0];
  const next = markdown.indexOf(`\n${level} `, start + heading.length);
  return markdown.slice(start, next < 0 ? undefined : next);
}

/** The first column's code spans of the Markdown table that follows `marker` in `text`. */
function tableWords(text: string, marker: string): string[] {
  const rows = text.slice(text.indexOf(marker)).split('\n').slice(1);
  const table = rows.slice(rows.findIndex((l) => l.startsWith('|')));
  const body = table
    .slice(
      0,
      table.findIndex((l) => !l.startsWith('|')),
    )
    .slice(2);
  return body.map((l) => /^\| `?([^`|]+?)`? \|/.exec(l)![1]);
}

const VOCABULARY_WINDOW: ExplainWindow = { ...WINDOW, pruneCutoff: '2026-06-01' };
const dayCycle: CycleOfDay = { workflowId: 'cycle-1', runId: 'run-1', status: 'COMPLETED', webUi: '/w' };
const daySeenIn = { ...dayCycle, activityType: 'claimPage', activityId: '3', running: false };

/** One document of each verdict, through the functions `explain` runs. */
const EXAMPLES: Record<(typeof VERDICTS)[number], DocumentExplanation> = {
  deleted: explainDocument(doc({ isDeleted: true }), [], VOCABULARY_WINDOW),
  inactive: explainDocument(doc({ status: 'Archived' }), [], VOCABULARY_WINDOW),
  'no-expiry': explainDocument(doc({ expiresAt: null }), [], VOCABULARY_WINDOW),
  'past-retention': explainDocument(doc({ expiresAt: '2026-01-01' }), [], VOCABULARY_WINDOW),
  pruned: explainDocument(doc({ expiresAt: '2026-05-01' }), [], { ...VOCABULARY_WINDOW, retentionDays: 365 }),
  'not-due': explainDocument(doc({ expiresAt: '2026-12-01' }), [], VOCABULARY_WINDOW),
  reminded: explainDocument(
    doc({}),
    [{ thresholdDays: 7, remindedAt: '2026-09-01T03:00:00Z', queuedBy: 'r/1' }],
    WINDOW,
  ),
  due: explainDocument(doc({}), [], VOCABULARY_WINDOW),
  waiting: explainAfterCycles(
    explainDocument(doc({}), [], VOCABULARY_WINDOW),
    { cycles: [dayCycle], met: { cycle: dayCycle, outcome: 'busy', seenIn: daySeenIn } },
    VOCABULARY_WINDOW.asOfDate,
  ),
  failed: explainAfterCycles(
    explainDocument(doc({}), [], VOCABULARY_WINDOW),
    { cycles: [dayCycle], met: { cycle: dayCycle, outcome: 'failed', error: 'boom', seenIn: daySeenIn } },
    VOCABULARY_WINDOW.asOfDate,
  ),
};

describe('the verdicts', () => {
  const support = section(read('docs/OPERATIONS.md'), '## Support: why (not)? for one investor');

  it("OPERATIONS' verdict table lists exactly the code's verdicts, in its words", () => {
    expect(tableWords(support, '**The verdicts.**')).toEqual([...VERDICTS]);
  });

  it('each verdict is the JSON value, and the line explain prints starts with it', () => {
    for (const verdict of VERDICTS) {
      const d = EXAMPLES[verdict];
      expect([verdict, d.verdict]).toEqual([verdict, verdict]);
      const printed = explanationText({
        asOfDate: VOCABULARY_WINDOW.asOfDate,
        thresholdsDays: WINDOW.thresholdsDays,
        retentionDays: WINDOW.retentionDays,
        ownerUserId: 'o1',
        settingsFrom: { client: 'no cycle as of this day was found' },
        pruneCutoff: null,
        documents: [d],
        cyclesOfDay: { cycles: [] },
        nextCycle: [],
        events: [],
      } satisfies Explanation);
      expect(printed.split('\n')).toContain(`  ${d.why}`);
      expect(d.why.startsWith(`${verdict}: `)).toBe(true);
    }
  });

  it("OPERATIONS uses none of the old words for them (a verdict is named only by the code's word)", () => {
    for (const old of ['`not due`', '`no expiry date`', '`past the retention`', '`below the prune cutoff`']) {
      expect(support).not.toContain(old);
    }
  });
});

describe('exit codes', () => {
  const readme = read('README.md');

  it("README's exit-code table lists every code of EXIT_CODES, and only those", () => {
    const listed = tableWords(section(readme, '### Exit codes'), '### Exit codes').map(Number);
    expect(listed).toEqual([...new Set(Object.values(EXIT_CODES))].sort((a, b) => a - b));
  });

  it('the client exits with no code of its own: each comes from EXIT_CODES', () => {
    expect(read('src/client.ts')).not.toMatch(/exitCode:\s*\d/);
  });

  it.each([
    ['explain', []],
    ['explain', ['--owner', OWNER, '--document', OWNER]],
    ['outbox retry', []],
    ['outbox retry', [OWNER, '--all']],
  ])('%s with neither or both of its alternatives (%j) exits 64, as README says', async (command, args) => {
    const program = buildProgram(() => {
      throw new Error('parsed only: no configuration is read');
    });
    const quiet = (c: Command): void => {
      c.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
      c.commands.forEach(quiet);
    };
    quiet(program);
    let code: number | undefined;
    try {
      await program.parseAsync([...command.split(' '), ...args], { from: 'user' });
    } catch (err) {
      code = (err as CommanderError).exitCode;
    }
    expect(code).toBe(EXIT_CODES.usage);
  });
});
