/** s6: the broker down while a cycle fills the outbox, and the relay killed: every event still arrives. */
import { FAULT_CYCLE, sleep, waitFor } from '../harness';
import { outboxCount } from '../invariants';
import { cycleScenario } from '../runner';

export const kafkaOutage = cycleScenario(
  {
    id: 's6',
    name: 'Kafka stopped during a cycle and the relay killed once with SIGKILL',
    owners: (requested) => Math.min(requested, 1_000),
    kafka: true,
  },
  async (run) => {
    const broker = run.h.stack.kafka;
    if (!broker) throw new Error("needs the stack's own broker (unset KAFKA_BROKERS)");
    const relay = run.startRelay();
    await broker.stop();
    const result = await run.cycle(FAULT_CYCLE);
    await sleep(1_000);
    await relay.kill('SIGKILL');
    run.startRelay();
    await sleep(2_000);
    await broker.start();
    await waitFor('the outbox to drain', async () => (await outboxCount(run.db, true)) === 0);
    const events = await outboxCount(run.db);
    return { detail: `${result.remindersSent} reminders in ${events} events, all on the topic` };
  },
);
