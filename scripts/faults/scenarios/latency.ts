/** s10: a slow network between the worker and PostgreSQL for a whole cycle: slower, never wrong. */
import { FAULT_CYCLE, toxicBothWays } from '../harness';
import { endedAs } from '../invariants';
import { toxiproxyScenario } from '../runner';

export const latency = toxiproxyScenario(
  { id: 's10', name: '200 ms of latency on every packet between the worker and PostgreSQL, for the whole cycle' },
  async (run) => {
    await toxicBothWays(run.proxy, 'slow', 'latency', { latency: 200, jitter: 0 });
    const started = Date.now();
    const result = await run.cycle(FAULT_CYCLE);
    const seconds = Math.round((Date.now() - started) / 1000);
    return {
      detail: `${result.remindersSent} reminders in ${seconds} s, ${result.failedOwners} failed owners`,
      problems: [
        ...endedAs('cycle', result, 'completed'),
        ...(result.failedOwners > 0 ? [`${result.failedOwners} failed owners`] : []),
      ],
    };
  },
);
