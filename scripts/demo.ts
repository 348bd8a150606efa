/**
 * `npm run demo [-- --keep]`: the whole job end to end on a laptop. Starts the local stack, migrates a
 * fresh database, seeds a handful of investors, applies the schedule, triggers one cycle through it
 * with a real worker, and prints who is reminded of what. `--keep` leaves everything up to look around.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { addDays, utcDate } from '../src/domain/dates';
import { createPool } from '../src/db/pool';
import { createLogger } from '../src/observability/logger';
import { SCHEDULE_ID, TOPIC } from '../src/domain/names';
import { createKafka } from '../src/relay/kafka';
import { dropKafkajsNegativeTimeoutWarning } from '../src/relay/kafkajs-workarounds';
import { OutboxRelay } from '../src/relay/outbox-relay';
import { consumeUntil } from './stack/consume';
import { applySchedule } from '../src/operations/schedule';
import { triggerSchedule } from '../src/operations/schedule-runs';
import { startStack } from './stack';
import { createMigratedDatabase } from './stack/database';
import { createWorker } from '../src/temporal/worker';
import type { CycleWorkflow } from '../src/workflows';

const keep = process.argv.includes('--keep');
const say = (line: string) => process.stdout.write(`${line}\n`);
const step = (line: string) => process.stderr.write(`» ${line}\n`);

/** The investors of the demo; names exist only here, to make the table readable. */
const INVESTORS: { name: string; docs: { type: string; mask: string; daysLeft: number | null; status?: string }[] }[] =
  [
    {
      name: 'Anna',
      docs: [
        { type: 'ForeignPassport', mask: '**** 481516', daysLeft: 30 },
        { type: 'DriverLicense', mask: '**** 2342', daysLeft: 7 },
      ],
    },
    { name: 'Boris', docs: [{ type: 'ResidencePermit', mask: '**** 771208', daysLeft: -3 }] },
    { name: 'Vera', docs: [{ type: 'ForeignPassport', mask: '**** 650019', daysLeft: 5 }] },
    {
      name: 'Gleb',
      docs: [
        { type: 'Passport', mask: '**** 110044', daysLeft: null },
        { type: 'Inn', mask: '******** 7712', daysLeft: null },
      ],
    },
    {
      name: 'Dina',
      docs: [
        { type: 'DriverLicense', mask: '**** 9031', daysLeft: 1 },
        { type: 'ForeignPassport', mask: '**** 300300', daysLeft: 2, status: 'Archived' },
      ],
    },
    { name: 'Egor', docs: [{ type: 'ForeignPassport', mask: '**** 515151', daysLeft: 200 }] },
  ];

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // The stack's broker check is this process's first kafkajs client, before createKafka installs it.
  dropKafkajsNegativeTimeoutWarning();
  step('starting the local stack (PostgreSQL + Temporal dev server with Web UI)');
  const stack = await startStack({ log: step });
  const cleanups: (() => Promise<void>)[] = [() => stack.stop()];
  try {
    const { ownerUrl, workerUrl, relayUrl, supportUrl, applied } = await createMigratedDatabase(
      stack.postgres.adminUrl,
      {
        name: 'expiry_reminder_demo',
        recreate: true,
      },
    );
    step(`migrated database expiry_reminder_demo (${applied.length} migrations)`);
    const config = loadConfig({
      ...process.env,
      DATABASE_URL: workerUrl,
      TEMPORAL_ADDRESS: stack.temporal.address,
      TEMPORAL_NAMESPACE: 'default',
    });

    const admin = createPool({ connectionString: ownerUrl, max: 2 });
    cleanups.unshift(() => admin.end());
    const today = utcDate(new Date());
    const names = new Map<string, string>();
    for (const investor of INVESTORS) {
      const owner = crypto.randomUUID();
      names.set(owner, investor.name);
      for (const d of investor.docs) {
        await admin.query(
          `insert into profile.person_documents (id, owner_user_id, person_id, type, number_mask, expires_at, status, payload_cipher)
           values (gen_random_uuid(), $1, gen_random_uuid(), $2, $3, $4, $5, '\\x00')`,
          [owner, d.type, d.mask, d.daysLeft === null ? null : addDays(today, d.daysLeft), d.status ?? 'Active'],
        );
      }
    }
    step(`seeded ${INVESTORS.length} investors as of ${today}`);

    const pool = createPool({ connectionString: workerUrl, max: config.databasePoolSize });
    const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
    const nativeConnection = await NativeConnection.connect({ address: stack.temporal.address });
    const worker = await createWorker({ config, connection: nativeConnection, pool, logger });
    const running = worker.run();
    cleanups.unshift(async () => {
      worker.shutdown();
      await running;
      await nativeConnection.close();
      await pool.end();
    });

    const connection = await Connection.connect({ address: stack.temporal.address });
    cleanups.unshift(() => connection.close());
    const client = new Client({ connection });
    step(`schedule ${SCHEDULE_ID}: ${await applySchedule(client, config)}; triggering one cycle`);
    await triggerSchedule(client);
    const workflowId = await startedBySchedule(client);
    const result = await client.workflow.getHandle<CycleWorkflow>(workflowId).result();

    say('');
    say(
      `Cycle ${workflowId}: ${result.status}, ${result.remindersSent} reminders to ${result.ownersNotified} investors in ${result.durationMs} ms`,
    );
    const { rows: docs } = await admin.query(
      `select d.owner_user_id, d.type, d.expires_at, d.status, d.expires_at - $1::date as days_left,
              (select string_agg(r.threshold_days::text, ',' order by r.threshold_days desc)
                 from profile.document_expiry_reminders r where r.document_id = d.id) as markers,
              (select (x->>'thresholdDays')::int from profile.outbox_events o,
                      jsonb_array_elements(o.payload->'documents') x
                where x->>'documentId' = d.id::text) as reminded_at_threshold
         from profile.person_documents d order by d.owner_user_id, d.expires_at nulls last`,
      [today],
    );
    say('\nWho is reminded of what:');
    const byInvestor = (a: { investor?: string }, b: { investor?: string }) =>
      (a.investor ?? '').localeCompare(b.investor ?? '');
    console.table(
      docs
        .map((d) => ({
          investor: names.get(d.owner_user_id),
          document: d.type,
          expires: d.expires_at ?? 'never',
          'days left': d.days_left ?? '',
          status: d.status,
          'reminded at threshold': d.reminded_at_threshold ?? '—',
          'ledger markers': d.markers ?? '',
        }))
        .sort(byInvestor),
    );
    const { rows: events } = await admin.query(
      `select id, aggregate_id, topic, correlation_id, payload from profile.outbox_events order by xid, id`,
    );
    say('Outbox rows (one per investor, waiting for the relay):');
    console.table(
      events
        .map((e) => ({
          investor: names.get(e.aggregate_id),
          'event id': e.id,
          topic: e.topic,
          documents: e.payload.documents
            .map((x: { type: string; thresholdDays: number }) => `${x.type}@${x.thresholdDays}`)
            .join(' '),
        }))
        .sort(byInvestor),
    );
    const relayConfig = loadConfig({ ...process.env, DATABASE_URL: relayUrl, KAFKA_BROKERS: stack.kafkaBrokers });
    const relayPool = createPool({ connectionString: relayUrl, max: 2 });
    const relay = new OutboxRelay({
      pool: relayPool,
      listenUrl: relayUrl,
      kafka: createKafka(relayConfig),
      config: relayConfig,
      logger,
    });
    await relay.start();
    cleanups.unshift(async () => {
      await relay.stop();
      await relayPool.end();
    });
    const ids = new Set(events.map((e) => e.id as string));
    // The relay creates the topic with its first send; read it back once everything is published.
    for (let i = 0; i < 300; i++) {
      const { rowCount } = await admin.query('select 1 from profile.outbox_events_pending');
      if (rowCount === 0) break;
      await sleep(100);
    }
    const received = await consumeUntil(
      stack.kafkaBrokers,
      (ms) => ms.filter((m) => ids.has(m.headers.messageId)).length >= ids.size,
    );
    say(`Received from Kafka topic ${TOPIC} (published by the relay):`);
    console.table(
      received.map((m) => ({
        investor: names.get(m.key),
        partition: m.partition,
        offset: m.offset,
        messageId: m.headers.messageId,
        value: m.value.length > 90 ? `${m.value.slice(0, 87)}...` : m.value,
      })),
    );
    if (stack.temporal.uiUrl) {
      say(`Web UI: ${stack.temporal.uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
      say(`Schedule: ${stack.temporal.uiUrl}/namespaces/default/schedules/${SCHEDULE_ID}`);
    }
    if (keep) {
      say('\nThe stack stays up (Ctrl-C stops it). To use it from another shell:');
      // Each command's own role: the worker's for the worker, the relay's for `outbox …`, the support
      // role's for `explain` and `cycle preview` (issue 38: without it, explain could not read the outbox).
      say(
        `  export TEMPORAL_ADDRESS=${stack.temporal.address} DATABASE_URL='${workerUrl}' KAFKA_BROKERS=${stack.kafkaBrokers}`,
      );
      say(
        `  export RELAY_DATABASE_URL='${relayUrl}' SUPPORT_DATABASE_URL='${supportUrl}'` +
          (stack.temporal.uiUrl ? ` TEMPORAL_UI_URL=${stack.temporal.uiUrl}` : ''),
      );
      say(`  npm run client -- schedule trigger`);
      const [firstOwner, firstName] = [...names][0];
      say(`  npm run client -- explain --owner ${firstOwner}   # ${firstName}, as the read-only support role`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    }
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((err: Error) => step(`cleanup: ${err.message}`));
  }
}

/** The id of the cycle the schedule just started. */
async function startedBySchedule(client: Client): Promise<string> {
  const handle = client.schedule.getHandle(SCHEDULE_ID);
  for (let i = 0; i < 100; i++) {
    const { info } = await handle.describe();
    const action = info.runningActions[0] ?? info.recentActions[info.recentActions.length - 1];
    if (action) return action.workflow.workflowId;
    await sleep(100);
  }
  throw new Error('the schedule did not start a cycle within 10 s');
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`demo failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
