/** A Worker Deployment of a test's own: its task queue (torn down with the file), its name, N and N+1. */
import crypto from 'node:crypto';
import type { Config, WorkerVersion } from '../../src/config';
import type { Integration } from './harness';

/**
 * A new task queue and deployment name for one test, the queue tracked by `stack` so its cycles end with the
 * file; `target` is what the deployment commands take, `n` and `next` two versions of it.
 */
export function testDeployment(stack: Pick<Integration, 'config' | 'trackTaskQueue'>) {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const deploymentName = `test-${crypto.randomUUID().slice(0, 8)}`;
  stack.trackTaskQueue(taskQueue);
  const target: Pick<Config, 'temporal'> = { temporal: { ...stack.config.temporal, taskQueue, deploymentName } };
  const n: WorkerVersion = { deploymentName, buildId: 'n' };
  const next: WorkerVersion = { deploymentName, buildId: 'n-plus-1' };
  return { taskQueue, deploymentName, target, n, next };
}
