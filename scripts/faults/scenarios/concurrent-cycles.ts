/** s4: two cycles over the same owners at once, on three workers: every reminder goes out once. */
import { FAULT_CYCLE } from '../harness';
import { eventDocumentCount } from '../invariants';
import { cycleScenario } from '../runner';

export const concurrentCycles = cycleScenario(
  { id: 's4', name: 'three workers, two cycles started at once over the same data (allow-all)', workers: 3 },
  async (run) => {
    const [a, b] = await Promise.all([run.startCycle(FAULT_CYCLE), run.startCycle(FAULT_CYCLE)]);
    const results = await Promise.all([a.result(), b.result()]);
    const inOutbox = await eventDocumentCount(run.db);
    const sent = results[0].remindersSent + results[1].remindersSent;
    return {
      detail: `${results[0].remindersSent} + ${results[1].remindersSent} reminders, ${results[0].skippedAlreadyMarked + results[1].skippedAlreadyMarked} lost races`,
      problems: sent === inOutbox ? [] : [`results say ${sent} reminders, the outbox holds ${inOutbox}`],
    };
  },
);
