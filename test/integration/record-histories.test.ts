/**
 * The recorder of the replay fixtures (scripts/record-histories/) keeps working as the workflow
 * evolves: every scenario still takes the path it is named for, and what it records from the current
 * code replays against the current code. The committed fixtures are left alone (it writes to a
 * temporary directory); test/unit/replay.test.ts replays those.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { Worker } from '@temporalio/worker';
import { recordHistories } from '../../scripts/record-histories';
import { createTracing } from '../../src/observability/tracing';
import { cycleSinks } from '../../src/temporal/worker';
import { historyFromFixtureJSON } from '../../scripts/record-histories/fixtures';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with npm test (the global setup starts the stack)`);
  return value;
}

let outDir: string;
beforeAll(() => {
  outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'recorded-histories-'));
});
afterAll(() => {
  fs.rmSync(outDir, { recursive: true, force: true });
});

test('every scenario records, and the recorded histories replay against the current code', async () => {
  // The global setup's bundle is the worker's: the workflow code plus its workflow interceptor modules.
  const workflowBundle = { codePath: required('WORKFLOW_BUNDLE_PATH') };

  const files = await recordHistories({
    temporalAddress: required('TEMPORAL_ADDRESS'),
    databaseAdminUrl: required('STACK_DATABASE_ADMIN_URL'),
    outDir,
    workflowBundle,
  });

  expect(files.map((f) => path.basename(f.file)).sort()).toEqual([
    'cancelled.json',
    'continued-as-new-run1.json',
    'continued-as-new-run2.json',
    'continued-as-new-run3.json',
    'failed-invalid-input.json',
    'normal.json',
    'partitioned-partition1-run1.json',
    'partitioned-partition1-run2.json',
    'partitioned-partition2.json',
    'partitioned.json',
    'time-limit.json',
  ]);
  const tracing = createTracing({ serviceName: 'expiry-reminder-replay-test' });
  const inputs = files.map((f) => ({
    history: historyFromFixtureJSON(fs.readFileSync(f.file, 'utf8')),
    workflowId: f.workflowId,
  }));
  const replayed: string[] = [];
  for await (const result of Worker.runReplayHistories(
    {
      workflowBundle,
      sinks: { ...cycleSinks(undefined), exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
    },
    inputs,
  )) {
    expect(result.error).toBeUndefined();
    replayed.push(result.runId);
  }
  expect(replayed).toEqual(files.map((f) => f.runId));
});
