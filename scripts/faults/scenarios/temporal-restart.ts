/**
 * s3: the Temporal server restarted while a cycle runs: the dev server, whose SQLite file keeps the cycle, or
 * (`--production`) the Temporal server, whose stores are in PostgreSQL.
 */
import { FAULT_CYCLE } from '../harness';
import { endedAs, firstEvents } from '../invariants';
import { cycleScenario } from '../runner';

export const temporalRestart = cycleScenario(
  { id: 's3', name: 'Temporal server restarted mid-cycle (2 s down; its state in a SQLite file, or PostgreSQL)' },
  async (run) => {
    const handle = await run.startCycle(FAULT_CYCLE);
    await firstEvents(run.db);
    await run.h.stack.restartTemporal(2_000);
    const result = await handle.result();
    return { detail: `${result.remindersSent} reminders`, problems: endedAs('cycle', result, 'completed') };
  },
);
