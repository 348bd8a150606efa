/** The stranded-cycles gauge: cycles pinned to a version of the deployment that no worker polls. */
import type { WorkerMetrics } from '../observability/metrics';
import { gaugeRefresh, type GaugeRefresh } from '../observability/refresh';
import { strandedVersions, type DeploymentTarget, type WorkflowServiceHolder } from './deployment-versions';

/**
 * Keeps `profile_document_expiry_reminder_stranded_cycles` fresh on scrape, at most every `intervalMs`, through
 * the worker's own connection (`service()`: undefined until it connects, and nothing is read). A version that
 * polls again, or whose cycles ended, leaves the gauge; a failed read keeps the last values and counts an error.
 * `goneAfterMs`: how long unseen a poller counts as stopped (default two minutes).
 */
export function strandedCyclesRefresher(
  service: () => WorkflowServiceHolder | undefined,
  target: DeploymentTarget,
  metrics: WorkerMetrics,
  options: { intervalMs: number; goneAfterMs?: number },
): GaugeRefresh {
  return gaugeRefresh({
    intervalMs: options.intervalMs,
    refresh: async () => {
      const connection = service();
      if (!connection) return;
      const stranded = await strandedVersions(connection, target, options.goneAfterMs);
      metrics.strandedCycles.reset();
      for (const v of stranded) metrics.strandedCycles.set({ build_id: v.buildId }, v.openCycles);
    },
    onError: () => metrics.strandedRefreshErrors.inc(),
  });
}
