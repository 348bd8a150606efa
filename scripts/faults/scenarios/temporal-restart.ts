/** s3: the Temporal dev server restarted while a cycle runs; its SQLite file keeps the cycle. */
import { FAULT_CYCLE } from '../harness';
import { endedAs, firstEvents } from '../invariants';
import { cycleScenario } from '../runner';

export const temporalRestart = cycleScenario(
  { id: 's3', name: 'Temporal dev server restarted mid-cycle (SQLite file, 2 s down)' },
  async (run) => {
    const handle = await run.startCycle(FAULT_CYCLE);
    await firstEvents(run.db);
    await run.h.stack.restartTemporal(2_000);
    const result = await handle.result();
    return { detail: `${result.remindersSent} reminders`, problems: endedAs('cycle', result, 'completed') };
  },
);
