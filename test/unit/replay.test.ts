/**
 * Safe deploys (docs/SAFE-DEPLOYS.md): the histories of real cycles in test/fixtures/histories, recorded
 * by scripts/record-histories/, replayed against the current workflow code. A change to the workflow
 * that would break cycles already running when it ships fails here, before it ships. No server needed:
 * replay runs the workflow bundle on the recorded events only.
 */
import path from 'node:path';
import { DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { fixtureRunName, listFixtures, readFixture } from '../../scripts/record-histories/fixtures';
import { createTracing } from '../../src/observability/tracing';
import { WORKFLOWS_PATH, workflowSideOptions } from '../../src/temporal/worker';
import { errorOf } from '../../src/domain/failures';

// Bundling the workflow code takes a few seconds per bundle.
jest.setTimeout(120_000);

try {
  // ERROR: the SDK core logs the expected failure below at WARN; a real one fails its test anyway.
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
} catch {
  // Already installed for this module registry.
}

/** The workflow bundle with one deliberately non-deterministic change (an extra timer first). */
const NONDETERMINISTIC_WORKFLOWS_PATH = path.resolve(
  __dirname,
  '..',
  'fixtures',
  'nondeterministic-workflow',
  'index.ts',
);

/**
 * Paths that must stay covered (in at least one set: `<scenario>.json` or a tagged `<tag>.<scenario>.json`),
 * so deleting a fixture is not a way to make this test pass.
 */
const REQUIRED_SCENARIOS = [
  'normal',
  'continued-as-new-run1',
  'continued-as-new-run2',
  'cancelled',
  'failed-invalid-input',
  'partitioned',
  'partitioned-partition1-run1',
  'partitioned-partition1-run2',
  'partitioned-partition2',
];

const FIXTURES = listFixtures();

/** The workflow side of the production worker (`workflowSideOptions`, also used by `createWorker`). */
function replayOptions(workflowsPath: string): ReplayWorkerOptions {
  const { workflowModules, sinks } = workflowSideOptions(
    createTracing({ serviceName: 'expiry-reminder-replay-test' }),
    undefined,
    false,
  );
  return { workflowsPath, interceptors: { workflowModules }, sinks, replayName: 'expiry-reminder-replay-test' };
}

describe('replay of recorded histories', () => {
  /** Fixture file → the replay's error (undefined: replayed cleanly). */
  const outcomes = new Map<string, Error | undefined>();

  beforeAll(async () => {
    // One replay worker, one bundle, every fixture in turn; results come back in the same order. Each
    // replays under its recorded workflow id: the cycle puts workflowInfo().workflowId into activity inputs.
    const inputs = FIXTURES.map((file) => readFixture(file));
    let i = 0;
    for await (const result of Worker.runReplayHistories(replayOptions(WORKFLOWS_PATH), inputs)) {
      expect(result.workflowId).toBe(inputs[i].workflowId);
      outcomes.set(FIXTURES[i++], result.error);
    }
  });

  test('the fixtures cover a normal cycle, continue-as-new, cancellation, a failed cycle and partitions', () => {
    expect(FIXTURES.map(fixtureRunName)).toEqual(expect.arrayContaining(REQUIRED_SCENARIOS));
  });

  test.each(FIXTURES)('%s replays against the current workflow code', (file) => {
    expect(outcomes.has(file)).toBe(true);
    const error = outcomes.get(file);
    if (error) throw error;
  });
});

test('a non-deterministic change to the workflow fails the replay', async () => {
  const { history, workflowId } = readFixture('normal.json');

  const error = await Worker.runReplayHistory(replayOptions(NONDETERMINISTIC_WORKFLOWS_PATH), history, workflowId).then(
    () => undefined,
    (err: unknown) => errorOf(err),
  );

  // By name, not instanceof: Jest's module registry gives this file its own copy of the error classes.
  expect(error?.name).toBe('DeterminismViolationError');
  // Where: the timer command met the history's first command event, resolveCycleSettings' scheduling.
  expect(error?.message).toMatch(
    /\[TMPRL1100\] Nondeterminism error: Timer machine does not handle this event: .*ActivityTaskScheduled/,
  );
});
