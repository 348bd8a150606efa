/** s5: cycles that stop early (cancelled, out of time) leave nothing half done for the next one. */
import { FAULT_CYCLE } from '../harness';
import { endedAs, firstEvents } from '../invariants';
import { cycleScenario } from '../runner';

export const cancelAndTimeLimit = cycleScenario(
  { id: 's5', name: 'cancellation, then the time limit, mid-cycle; then a normal cycle' },
  async (run) => {
    // Small pages, one an activity: a partition stops between pages, and a page in flight finishes first. (An
    // activity of the default 64 pages runs for up to five seconds, and a stop waits for it.)
    const cancelled = await run.startCycle({ ownerConcurrency: 5, batchSize: 20, pagesPerClaim: 1 });
    await firstEvents(run.db);
    await cancelled.cancel();
    const c = await cancelled.result();
    const limited = await run.cycle({ ownerConcurrency: 1, batchSize: 5, maxRunDurationMs: 1_500, pagesPerClaim: 1 });
    const normal = await run.cycle(FAULT_CYCLE);
    return {
      detail: `${c.remindersSent} + ${limited.remindersSent} + ${normal.remindersSent} reminders`,
      problems: [
        ...endedAs('first cycle', c, 'cancelled'),
        ...endedAs('second cycle', limited, 'time-limit'),
        ...endedAs('third cycle', normal, 'completed'),
      ],
    };
  },
);
