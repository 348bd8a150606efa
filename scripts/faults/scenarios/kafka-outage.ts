/**
 * s6: the broker down while a cycle fills the outbox, the relay killed, and a poison row (above the broker's
 * message.max.bytes) first in the queue: every event still arrives; the poison row is parked after its
 * refusals while every other key flows, the row of its key waits behind it, and both go out in order once
 * the payload is fixed and the row retried.
 */
import crypto from 'node:crypto';
import { loadConfig } from '../../../src/config';
import { AGGREGATE_TYPE, CONTRACT_VERSION, EVENT_TYPE, TOPIC } from '../../../src/domain/names';
import { retryParkedCommand } from '../../../src/operations/outbox';
import { consumeUntil } from '../../stack/consume';
import { FAULT_CYCLE, sleep, waitFor, type FaultDb } from '../harness';
import { outboxCount } from '../invariants';
import { cycleScenario } from '../runner';

const POISON_CORRELATION = 's6-poison';
/** Refusals before a row is parked: the relays run with this RELAY_MAX_ATTEMPTS. */
const MAX_ATTEMPTS = 3;

export const kafkaOutage = cycleScenario(
  {
    id: 's6',
    name: 'Kafka stopped during a cycle, the relay killed once with SIGKILL, and a poison row first in the queue',
    owners: (requested) => Math.min(requested, 1_000),
    kafka: true,
    ownChecks: 'I5',
  },
  async (run) => {
    const broker = run.h.stack.kafka;
    if (!broker) throw new Error("needs the stack's own broker (unset KAFKA_BROKERS)");
    const [poison, behind] = await insertPoisonPair(run.db);
    const relayEnv = { RELAY_MAX_ATTEMPTS: String(MAX_ATTEMPTS) };
    const relay = run.startRelay(relayEnv);
    await broker.stop();
    const result = await run.cycle(FAULT_CYCLE);
    await sleep(1_000);
    await relay.kill('SIGKILL');
    run.startRelay(relayEnv);
    await sleep(2_000);
    await broker.start();
    await waitFor('every row but the poison pair published, the poison row parked', async () => {
      const { rows } = await run.db.admin.query<{ waiting: number; parked: boolean }>(
        `select (select count(*) from profile.outbox_events_pending where correlation_id <> $1)::int as waiting,
                exists (select 1 from profile.outbox_held where id = $2 and parked_at is not null) as parked`,
        [POISON_CORRELATION, poison],
      );
      return rows[0].waiting === 0 && rows[0].parked === true;
    });
    const problems = await checkParked(run.db, poison, behind);

    // The cause fixed (a small payload) and the row retried: both rows of the key go out, in order.
    await run.db.admin.query(`update profile.outbox_events set payload = '{}' where id = $1`, [poison]);
    await retryParkedCommand(loadConfig({ DATABASE_URL: run.db.relayUrl }), { id: poison });
    await waitFor('the outbox to drain', async () => (await outboxCount(run.db, true)) === 0);
    const onTopic = await consumeUntil(
      run.h.topicReader,
      (ms) => ms.filter((m) => m.headers.correlationId === POISON_CORRELATION).length >= 2,
      60_000,
    );
    const order = onTopic.filter((m) => m.headers.correlationId === POISON_CORRELATION).map((m) => m.headers.messageId);
    if (order.join() !== [poison, behind].join()) {
      problems.push(
        `I5: the poison key arrived as ${JSON.stringify(order)}, expected the retried row first, once each`,
      );
    }
    const events = await outboxCount(run.db);
    return {
      detail:
        `${result.remindersSent} reminders in ${events - 2} events, all on the topic; 1 poison row parked after ` +
        `${MAX_ATTEMPTS} refusals, 1 row waited behind it, both out in order after outbox retry`,
      problems,
    };
  },
);

/**
 * Two events of one fresh key, each in a transaction of its own (so in this order in the key's lane), before
 * the cycle's: a poison event above the broker's 1 MB limit, and an ordinary one after it.
 * @returns their ids, poison first.
 */
async function insertPoisonPair(db: FaultDb): Promise<[string, string]> {
  const key = crypto.randomUUID();
  const ids: string[] = [];
  for (const payload of [{ pad: 'x'.repeat(2_000_000) }, {}]) {
    const { rows } = await db.admin.query<{ id: string }>(
      `insert into profile.outbox_events
              (id, aggregate_type, aggregate_id, topic, message_key, event_type, contract_version, payload,
               correlation_id)
       values (profile.time_ordered_uuid(), $2, $6::uuid, $3, $6::text, $4, $5, $7::jsonb, $1)
       returning id`,
      [POISON_CORRELATION, AGGREGATE_TYPE, TOPIC, EVENT_TYPE, CONTRACT_VERSION, key, JSON.stringify(payload)],
    );
    ids.push(rows[0].id);
  }
  return [ids[0], ids[1]];
}

/**
 * I5: the poison event's key parked at it after its refusals (the outage's failed tries are attempts, not
 * refusals), and the event behind it unpublished, waiting with its key.
 */
async function checkParked(db: FaultDb, poison: string, behind: string): Promise<string[]> {
  const { rows } = await db.admin.query<{
    id: string;
    attempts: number;
    rejections: number;
    last_error: string | null;
    parked: boolean;
  }>(
    `select id, attempts, rejections, last_error, parked_at is not null as parked
       from profile.outbox_held where id = $1`,
    [poison],
  );
  const { rows: waiting } = await db.admin.query<{ held_event: boolean }>(
    'select held_event from profile.outbox_events_pending where id = $1',
    [behind],
  );
  const p = rows[0];
  const problems: string[] = [];
  if (
    !p ||
    !p.parked ||
    p.rejections !== MAX_ATTEMPTS ||
    p.attempts < MAX_ATTEMPTS ||
    !/too large|max message size/i.test(p.last_error ?? '')
  ) {
    problems.push(`I5: poison event ${JSON.stringify(p)}: expected parked after ${MAX_ATTEMPTS} refusals as too large`);
  }
  // Held back with its key since the poison event's refusal, never refused itself.
  if (waiting.length !== 1 || waiting[0].held_event) {
    problems.push(
      `I5: the event behind the poison event ${JSON.stringify(waiting)}: expected unpublished, not held at`,
    );
  }
  return problems;
}
