/**
 * s9: the worker's TCP path to PostgreSQL cut mid-group: PostgreSQL, not the worker, must end the
 * transactions left open, and the owners they locked must be reminded once the path is back.
 */
import { FAULT_CYCLE, sleep, toxicBothWays, waitFor } from '../harness';
import { endedAs, firstEvents, orphans } from '../invariants';
import { toxiproxyScenario } from '../runner';

export const pathCut = toxiproxyScenario(
  {
    id: 's9',
    name: "the worker's TCP path to PostgreSQL cut mid-group (Toxiproxy), the backend left holding its transaction; path back after 8 s",
  },
  async (run) => {
    const { db } = run;
    const handle = await run.startCycle(FAULT_CYCLE);
    await firstEvents(db);
    // Data stops both ways and the connections stay open: the backend of a group in flight keeps
    // its transaction and its owners' locks, and the worker hears nothing.
    const cutAt = Date.now();
    const reconnect = await toxicBothWays(run.proxy, 'cut', 'timeout', { timeout: 0 });
    await waitFor('a worker backend idle in its transaction', async () => (await orphans(db)) > 0, 30_000);
    // PostgreSQL ends the orphans (idle-in-transaction timeout) while the path is still cut.
    let heldMs: number | undefined;
    while (Date.now() - cutAt < 8_000) {
      if (heldMs === undefined && (await orphans(db)) === 0) heldMs = Date.now() - cutAt;
      await sleep(100);
    }
    await reconnect();
    await waitFor('the orphaned transactions to end', async () => (await orphans(db)) === 0, 120_000);
    heldMs ??= Date.now() - cutAt;
    const result = await handle.result();
    // Owners whose retries ran out while the path was cut are left for the next cycle, as in s2.
    const rest = result.failedOwners > 0 ? await run.cycle() : undefined;
    return {
      detail:
        `${result.remindersSent} reminders, ${result.ownersBusy} owners busy and retried, ${result.failedOwners} failed owners` +
        `${rest ? `; next cycle reminded ${rest.remindersSent}` : ''}; orphaned transactions ended ${(heldMs / 1000).toFixed(1)} s after the cut`,
      problems: endedAs('cycle', result, 'completed'),
    };
  },
);
