import { headSha, resolveRevisions } from '../../bench/compare/revisions';
import {
  formatTable,
  parseRevisionList,
  passThroughArgs,
  pathKey,
  roundOrder,
  spread,
  summarise,
  type RunRecord,
} from '../../bench/compare/summary';

describe('parseRevisionList', () => {
  it('keeps the named revisions in order, each once, and adds the working tree at the end', () => {
    expect(parseRevisionList('838aadf, 82d4a3f,838aadf')).toEqual(['838aadf', '82d4a3f', 'this']);
  });

  it('leaves the working tree where it is named, so it can be the base', () => {
    expect(parseRevisionList('this,main')).toEqual(['this', 'main']);
  });

  it('refuses an empty name', () => {
    expect(() => parseRevisionList('main,,x')).toThrow('an empty revision');
    expect(() => parseRevisionList('')).toThrow('an empty revision');
  });
});

describe('roundOrder', () => {
  it('rotates by the round, so each revision runs first once in as many rounds as there are revisions', () => {
    const revs = ['a', 'b', 'c'];
    expect([0, 1, 2, 3].map((r) => roundOrder(revs, r))).toEqual([
      ['a', 'b', 'c'],
      ['b', 'c', 'a'],
      ['c', 'a', 'b'],
      ['a', 'b', 'c'],
    ]);
  });

  it('runs every revision exactly once in every round (random cases)', () => {
    for (let i = 0; i < 200; i++) {
      const n = 1 + Math.floor(Math.random() * 6);
      const revs = Array.from({ length: n }, (_, k) => `r${k}`);
      const round = Math.floor(Math.random() * 20);
      expect([...roundOrder(revs, round)].sort()).toEqual([...revs].sort());
      expect(roundOrder(revs, round)[0]).toBe(revs[round % n]);
    }
  });
});

describe('passThroughArgs', () => {
  it('passes every flag on except --compare and --rounds, in both spellings', () => {
    expect(
      passThroughArgs([
        '--workload',
        'smoke',
        '--compare',
        'main',
        '--only',
        'temporal,b',
        '--rounds=2',
        '--compare=x',
      ]),
    ).toEqual(['--workload', 'smoke', '--only', 'temporal,b']);
  });
});

describe('spread', () => {
  it('is the middle value of an odd count, with min and max', () => {
    expect(spread([42.8, 57.6, 58.5].reverse())).toEqual({ median: 57.6, min: 42.8, max: 58.5, n: 3 });
  });

  it('is the mean of the middle two of an even count', () => {
    expect(spread([4, 1, 3, 2])).toEqual({ median: 2.5, min: 1, max: 4, n: 4 });
  });

  it('holds min ≤ median ≤ max for any values (random cases)', () => {
    for (let i = 0; i < 200; i++) {
      const values = Array.from({ length: 1 + Math.floor(Math.random() * 9) }, () => Math.random() * 100);
      const s = spread(values);
      expect(s.min).toBe(Math.min(...values));
      expect(s.max).toBe(Math.max(...values));
      expect(s.median).toBeGreaterThanOrEqual(s.min);
      expect(s.median).toBeLessThanOrEqual(s.max);
      expect(values.filter((v) => v < s.median).length).toBeLessThanOrEqual(values.length / 2);
      expect(values.filter((v) => v > s.median).length).toBeLessThanOrEqual(values.length / 2);
    }
  });
});

describe('pathKey', () => {
  it('names the cycle workload paths by their --only names, and keeps any other label', () => {
    expect(pathKey('Temporal: full cycle')).toBe('temporal');
    expect(pathKey('Temporal: first cycle of a just-started worker')).toBe('temporal first');
    expect(pathKey('Temporal: repeat cycle (nothing due)')).toBe('repeat');
    expect(pathKey('Temporal: repeat cycle after vacuum (nothing due)')).toBe('repeat after vacuum');
    expect(pathKey('A: node loop, per-owner tx')).toBe('a');
    expect(pathKey('B: one SQL statement per page')).toBe('b');
    expect(pathKey('B∥: one SQL statement per page in 8 sessions')).toBe('bpar');
    expect(pathKey('End to end: cycle + relay to Kafka')).toBe('e2e');
    expect(pathKey("Parts: a page's statements one by one, 40 pages × 3, one session")).toBe('parts');
    expect(pathKey('bare kafkajs producer')).toBe('bare kafkajs producer');
  });
});

describe('summarise and formatTable', () => {
  // The backlog figures: 838aadf against 82d4a3f, three rounds of the cycle, A and B.
  const runs: RunRecord[] = [
    { round: 1, revision: '838aadf', seconds: { temporal: 36.2, a: 112.2, b: 30.6 } },
    { round: 1, revision: '82d4a3f', seconds: { temporal: 57.6, a: 122.3, b: 30.6 } },
    { round: 2, revision: '82d4a3f', seconds: { temporal: 42.8, a: 122.3, b: 30.6 } },
    { round: 2, revision: '838aadf', seconds: { temporal: 37.8, a: 112.2, b: 30.6 } },
    { round: 3, revision: '838aadf', seconds: { temporal: 42.8, a: 112.2, b: 30.6 } },
    { round: 3, revision: '82d4a3f', seconds: { temporal: 58.5, a: 122.3, b: 30.6 } },
  ];

  it('gives each path median, range and the ratio to the first revision, and the cycle against A and B', () => {
    const s = summarise(runs, ['838aadf', '82d4a3f'], '838aadf');
    const temporal = s.paths.find((p) => p.path === 'temporal')!;
    expect(temporal.cells['838aadf']).toMatchObject({ median: 37.8, min: 36.2, max: 42.8, n: 3, ratioToBase: 1 });
    expect(temporal.cells['82d4a3f']).toMatchObject({ median: 57.6, min: 42.8, max: 58.5 });
    expect(temporal.cells['82d4a3f'].ratioToBase).toBeCloseTo(57.6 / 37.8);
    // Throughput: A's (or B's) seconds ÷ the cycle's, median over the rounds.
    expect(s.cycleVsB['838aadf']).toBeCloseTo(30.6 / 37.8);
    expect(s.cycleVsB['82d4a3f']).toBeCloseTo(30.6 / 57.6);
    expect(s.cycleVsA['82d4a3f']).toBeCloseTo(122.3 / 57.6);
  });

  it('prints a row per path and the cycle against A and B, the base without a ratio', () => {
    const lines = formatTable(summarise(runs, ['838aadf', '82d4a3f'], '838aadf'), 3);
    expect(lines.slice(0, 7)).toEqual([
      '| path | 838aadf | 82d4a3f |',
      '|---|---|---|',
      '| temporal | 37.8 s (36.2–42.8) | 57.6 s (42.8–58.5) ×1.52 |',
      '| a | 112 s (112–112) | 122 s (122–122) ×1.09 |',
      '| b | 30.6 s (30.6–30.6) | 30.6 s (30.6–30.6) ×1.00 |',
      '| cycle ÷ A (throughput) | 2.97 | 2.12 |',
      '| cycle ÷ B (throughput) | 0.81 | 0.53 |',
    ]);
    expect(lines[7]).toContain('of 3 interleaved rounds');
  });

  it('shows a path a revision did not measure (an older one) as -, and leaves the ratios out without a cycle', () => {
    const lines = formatTable(
      summarise(
        [
          { round: 1, revision: 'old', seconds: { b: 2 } },
          { round: 1, revision: 'this', seconds: { b: 1, e2e: 5 } },
        ],
        ['old', 'this'],
        'old',
      ),
      1,
    );
    expect(lines).toContain('| b | 2.00 s | 1.00 s ×0.50 |');
    expect(lines).toContain('| e2e | - | 5.00 s |');
    expect(lines.some((l) => l.startsWith('| cycle'))).toBe(false);
  });
});

describe('resolveRevisions', () => {
  it('refuses a name that is no commit, by its name, before anything starts', () => {
    expect(() => resolveRevisions(['no-such-revision-xyz', 'this'])).toThrow(
      '--compare: "no-such-revision-xyz" is no commit of this clone',
    );
  });

  it('resolves a name to its full sha and a folder under the cache, and runs two names of one commit once', () => {
    const sha = headSha();
    const revisions = resolveRevisions(['HEAD', sha, 'this']);
    expect(revisions.map((r) => r.label)).toEqual([sha.slice(0, 7), 'this']);
    expect(revisions[0].sha).toBe(sha);
    expect(revisions[0].dir).toMatch(new RegExp(`expiry-reminder/bench-compare/${sha}$`));
    expect(revisions[1].sha).toBeUndefined();
  });
});
