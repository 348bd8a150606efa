/**
 * The stranded-cycles gauge's bookkeeping (the server's side runs in test/integration/stranded-cycles.test.ts):
 * a version without pollers and with open cycles is exported by build id, a version whose workers poll again
 * leaves the gauge, and a read the server refuses keeps the last values and counts an error.
 */
import { createWorkerMetrics } from '../../src/observability/metrics';
import type { WorkflowServiceHolder } from '../../src/temporal/deployment-versions';
import { strandedCyclesRefresher } from '../../src/temporal/stranded-cycles';

const target = {
  temporal: { namespace: 'default', taskQueue: 'q', deploymentName: 'd' },
} as Parameters<typeof strandedCyclesRefresher>[1];

/** What the server answers: the deployment's versions, who polls, and the open cycles per version query. */
interface Server {
  versions: string[];
  polling: string[];
  open: Record<string, number>;
  refuse?: boolean;
}

function fakeService(server: Server): WorkflowServiceHolder {
  const refused = () => Object.assign(new Error('Request unauthorized.'), { code: 7 });
  const workflowService = {
    describeWorkerDeployment: async () => {
      if (server.refuse) throw refused();
      return {
        workerDeploymentInfo: {
          versionSummaries: server.versions.map((buildId) => ({ deploymentVersion: { buildId } })),
        },
      };
    },
    describeTaskQueue: async () => ({
      pollers: server.polling.map((buildId) => ({
        identity: `w-${buildId}`,
        lastAccessTime: { seconds: Math.floor(Date.now() / 1000) },
        deploymentOptions: { deploymentName: 'd', buildId },
      })),
    }),
    countWorkflowExecutions: async ({ query }: { query: string }) => ({
      count: server.open[/"d:([^"]+)"/.exec(query)?.[1] ?? ''] ?? 0,
    }),
  };
  return { workflowService } as unknown as WorkflowServiceHolder;
}

const values = async (metrics: ReturnType<typeof createWorkerMetrics>) =>
  (await metrics.strandedCycles.get()).values.map((v) => [v.labels.build_id, v.value]);
const errors = async (metrics: ReturnType<typeof createWorkerMetrics>) =>
  (await metrics.strandedRefreshErrors.get()).values[0]?.value ?? 0;

test('a version with open cycles and no pollers is exported; one that polls, or holds none, is not', async () => {
  const server: Server = { versions: ['a', 'b', 'c'], polling: ['a'], open: { a: 3, b: 2, c: 0 } };
  const metrics = createWorkerMetrics([0]);
  const gauge = strandedCyclesRefresher(() => fakeService(server), target, metrics, { intervalMs: 0 });
  await gauge.now();
  expect(await values(metrics)).toEqual([['b', 2]]);

  // b's workers come back: it leaves the gauge, and a has lost its workers.
  server.polling = ['b'];
  await gauge.now();
  expect(await values(metrics)).toEqual([['a', 3]]);
  expect(await errors(metrics)).toBe(0);
});

test('a refused read keeps the last values and counts an error; the next read replaces them', async () => {
  const server: Server = { versions: ['a'], polling: [], open: { a: 1 } };
  const metrics = createWorkerMetrics([0]);
  const gauge = strandedCyclesRefresher(() => fakeService(server), target, metrics, { intervalMs: 0 });
  await gauge.now();
  server.refuse = true;
  await gauge.now();
  expect(await values(metrics)).toEqual([['a', 1]]);
  expect(await errors(metrics)).toBe(1);
  server.refuse = false;
  server.open = { a: 0 };
  await gauge.now();
  expect(await values(metrics)).toEqual([]);
});

test('before the worker connects nothing is read and nothing is exported', async () => {
  const metrics = createWorkerMetrics([0]);
  await strandedCyclesRefresher(() => undefined, target, metrics, { intervalMs: 0 }).now();
  expect(await values(metrics)).toEqual([]);
  expect(await errors(metrics)).toBe(0);
});
