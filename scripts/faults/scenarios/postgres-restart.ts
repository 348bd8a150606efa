/** s2: the PostgreSQL server restarted while a cycle writes. */
import { createPool } from '../../../src/db/pool';
import { FAULT_CYCLE } from '../harness';
import { endedAs, firstEvents } from '../invariants';
import { cycleScenario } from '../runner';

export const postgresRestart = cycleScenario(
  { id: 's2', name: 'PostgreSQL restarted mid-cycle (3 s down)' },
  async (run) => {
    const { db } = run;
    const handle = await run.startCycle(FAULT_CYCLE);
    await firstEvents(db);
    await db.admin.end();
    await run.h.stack.postgres.restart(3_000);
    db.admin = createPool({ connectionString: db.ownerUrl, max: 4 });
    const result = await handle.result();
    // Owners whose retries ran out while the server was down are left for the next cycle.
    const rest = result.failedOwners > 0 ? await run.cycle() : undefined;
    return {
      detail: `${result.remindersSent} reminders, ${result.failedOwners} failed owners${rest ? `; next cycle reminded ${rest.remindersSent}` : ''}`,
      problems: endedAs('cycle', result, 'completed'),
    };
  },
);
