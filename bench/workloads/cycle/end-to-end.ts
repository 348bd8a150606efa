/**
 * The cycle end to end: the same cycle as the Temporal path, with one relay process running beside the
 * worker, timed from the cycle's start to the last event acknowledged by Kafka (no outbox row left
 * unpublished), so the relay's lag behind the cycle is part of the figure.
 */
import { measurement, type Measurement } from '../../harness/measure';
import type { BenchWorker } from '../../harness/worker';
import type { Bench } from '../../workload';
import { relayEnv, startRelayProcess } from '../relay/process';
import { unpublishedCount } from '../relay/seed';
import type { CycleSettings } from './settings';
import { temporalCycle } from './temporal';

/** One cycle with a relay beside it; `extra` has the cycle's own time and the relay's lag after it. */
export async function endToEndCycle(
  label: string,
  bench: Bench,
  workers: readonly BenchWorker[],
  taskQueue: string,
  s: CycleSettings,
): Promise<Measurement> {
  const { admin, env, database, options, client } = bench;
  const relay = await startRelayProcess(options.worker, relayEnv(env, database.relayUrl));
  try {
    const t0 = performance.now();
    const cycle = await temporalCycle(label, client, workers, taskQueue, s);
    // The relay's own count of published rows, not a count over the outbox, which would compete with it.
    const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from profile.outbox_events');
    await relay.waitForPublished(rows[0].n, 30 * 60_000);
    const seconds = (performance.now() - t0) / 1000;
    const left = await unpublishedCount(admin);
    if (left > 0) throw new Error(`the relay logged ${relay.published()} events published, but ${left} are not`);
    return measurement(label, seconds, cycle.owners, cycle.documents, cycle.reminders, cycle.pages, {
      ...cycle.extra,
      cycleSeconds: cycle.seconds,
      relayLagSeconds: Number((seconds - cycle.seconds).toFixed(3)),
    });
  } finally {
    await relay.stop();
  }
}
