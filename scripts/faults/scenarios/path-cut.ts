/**
 * s9: the worker's TCP path to PostgreSQL cut mid-group: PostgreSQL, not the worker, must end the
 * transactions left open, and the owners they locked must be reminded once the path is back.
 */
import { FAULT_CYCLE, sleep, toxicBothWays, waitFor, type FaultDb } from '../harness';
import { endedAs, firstEvents, orphans } from '../invariants';
import { toxiproxyScenario } from '../runner';

/** Worker statements inserting markers right now (in the trigger's sleep). */
async function claimsRunning(db: FaultDb): Promise<number> {
  const { rows } = await db.admin.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = $1 and application_name = 'expiry-reminder-worker' and state = 'active'
        and wait_event = 'PgSleep'`,
    [db.name],
  );
  return rows[0].n;
}

export const pathCut = toxiproxyScenario(
  {
    id: 's9',
    name: "the worker's TCP path to PostgreSQL cut mid-group (Toxiproxy), the backend left holding its transaction; path back after 8 s",
  },
  async (run) => {
    const { db } = run;
    const handle = await run.startCycle(FAULT_CYCLE);
    await firstEvents(db);
    // Cut while a group's statement runs, so its backend is surely left in its transaction: on a loaded
    // machine a cut at a random moment could find every worker session between transactions. Each
    // ledger insert takes 0.3 s for now.
    await db.admin.query(`
      create function profile.fault_slow_claim() returns trigger language plpgsql as $$
      begin perform pg_sleep(0.3); return null; end $$;
      create trigger fault_slow_claim after insert on profile.document_expiry_reminders
        for each statement execute function profile.fault_slow_claim();`);
    await waitFor('a group statement running', async () => (await claimsRunning(db)) > 0, 30_000, 20);
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
    await db.admin.query(`
      drop trigger fault_slow_claim on profile.document_expiry_reminders;
      drop function profile.fault_slow_claim();`);
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
