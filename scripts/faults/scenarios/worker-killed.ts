/** s1: the worker SIGKILLed three times during one cycle and started again each time. */
import { FAULT_CYCLE, waitFor } from '../harness';
import { dueCount, endedAs, markerCount } from '../invariants';
import { cycleScenario } from '../runner';

export const workerKilled = cycleScenario(
  { id: 's1', name: 'worker killed with SIGKILL 3 times at random points of the cycle, restarted each time' },
  async (run) => {
    const due = await dueCount(run.db);
    let [worker] = run.workers;
    const handle = await run.startCycle(FAULT_CYCLE);
    // Killed at random points of the cycle's progress (markers written), not of the clock, so the
    // kills land mid-cycle however fast the cycle is.
    for (const share of [0.1, 0.4, 0.7].map((s) => s + Math.random() * 0.2)) {
      await waitFor(
        `${Math.round(share * 100)} % of the markers`,
        async () => (await markerCount(run.db)) >= share * due,
        180_000,
        20,
      );
      await worker.kill('SIGKILL');
      worker = run.startWorker();
    }
    const result = await handle.result();
    return {
      detail: `${result.remindersSent} reminders, ${result.failedOwners} failed owners`,
      problems: endedAs('cycle', result, 'completed'),
    };
  },
);
