import { BENCH_USAGE, parseBenchOptions } from '../../bench/options';

test('the benchmark runs the smoke workload with the documented defaults and no statement statistics', () => {
  expect(parseBenchOptions([])).toMatchObject({
    workload: 'smoke',
    batchSize: 500,
    ownerConcurrency: 500,
    ownerGroupSize: 100,
    poolSize: 20,
    workers: 1,
    rounds: 3,
    statements: false,
    help: false,
  });
});

test('--statements asks for statement statistics, and is refused beside --compare, whose older revisions do not know it', () => {
  expect(parseBenchOptions(['--workload', 'backlog', '--statements'])).toMatchObject({
    workload: 'backlog',
    statements: true,
  });
  expect(() => parseBenchOptions(['--statements', '--compare', 'HEAD~1'])).toThrow(
    /^--statements does not go with --compare/,
  );
});

test('--help is a flag of its own, and its text names every flag the parser takes', () => {
  expect(parseBenchOptions(['--help']).help).toBe(true);
  const flags = [
    'workload',
    'only',
    'profile',
    'documents',
    'owners',
    'due',
    'due-owners',
    'rows',
    'batch-size',
    'owner-concurrency',
    'owner-group-size',
    'partitions',
    'max-run-minutes',
    'pool-size',
    'workers',
    'warm',
    'worker',
    'as-of',
    'keep-db',
    'statements',
    'compare',
    'rounds',
    'help',
  ];
  for (const flag of flags) expect(BENCH_USAGE).toContain(`--${flag} `.trimEnd());
  // Each listed flag is one the parser accepts: a typo in the text would be refused here.
  for (const flag of BENCH_USAGE.match(/--[a-z-]+/g)!) {
    const value = ['--warm', '--keep-db', '--statements', '--help'].includes(flag) ? [] : ['1'];
    if (flag === '--workers') value[0] = '2';
    if (flag === '--profile') value[0] = 'dev';
    expect(() => parseBenchOptions([flag, ...value])).not.toThrow();
  }
});

test('an unknown flag or a worker count out of range is refused with what was given', () => {
  expect(() => parseBenchOptions(['--statment'])).toThrow(
    expect.objectContaining({ code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' }),
  );
  expect(() => parseBenchOptions(['--workers', '9'])).toThrow('--workers must be a whole number from 1 to 8, got 9');
  expect(() => parseBenchOptions(['--profile', 'prod'])).toThrow('--profile must be dev or production, got prod');
});

test('--max-run-minutes gives the cycle a longer time limit; a limit of nothing is refused', () => {
  expect(parseBenchOptions(['--max-run-minutes', '30']).maxRunMinutes).toBe(30);
  expect(parseBenchOptions([]).maxRunMinutes).toBeUndefined();
  for (const bad of ['0', '-5', 'half'])
    expect(() => parseBenchOptions([`--max-run-minutes=${bad}`])).toThrow(
      `--max-run-minutes must be a number of minutes above 0, got ${bad}`,
    );
});
