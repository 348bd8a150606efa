/**
 * The relay's workload (issue 12): N outbox rows shaped like the cycle's events, published
 *   kafkajs     by a bare kafkajs producer with the relay's guarantees (idempotent, acks=-1, one request in
 *               flight), 1,000 messages per send: the ceiling of this broker on this machine;
 *   relay       by a running `npm run relay` process (compiled, as deployed), woken by the rows' commit,
 *               timed from the commit to the last row marked published;
 *   relay-cold  by a relay process started with the rows already there, timed from its start;
 *   relay-lanes by a relay process as `relay`, the rows written to the insert-only outbox (migration 025,
 *               issue 48) instead: one cursor update and a delivery row a batch, no row version per message;
 *   lean-*      issue 48's publish paths in a lean loop of this process (./prototypes.ts), not by default.
 * Each path gets fresh rows in an empty outbox; `--rows` sets N (default 30,000).
 */
import crypto from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { loadConfig } from '../../../src/config';
import { OUTBOX_MESSAGE_COLUMNS, type OutboxMessage } from '../../../src/db/outbox';
import { TOPIC } from '../../../src/domain/names';
import { createKafka, ensureTopic, toKafkaMessage } from '../../../src/relay/kafka';
import { cpuDelta, cpuSnapshot, measurement, sampleRss, type Measurement } from '../../harness/measure';
import type { Bench, Workload, WorkloadResult } from '../../workload';
import { buildEntryCommand } from '../../harness/worker';
import { relayEnv, startRelayProcess } from './process';
import { LEAN_LABELS, LEAN_PATHS, leanPath } from './prototypes';
import { seedOutbox, unpublishedCount } from './seed';

const DEFAULT_ROWS = 30_000;
/** Messages per send of the bare producer: what a relay batch could be at most. */
const BARE_BATCH = 1_000;
/** Partitions of the topic, as the relay creates it by default (KAFKA_TOPIC_PARTITIONS). */
const PARTITIONS = 3;

export const relayWorkload: Workload = {
  name: 'relay',
  paths: ['kafkajs', 'relay', 'relay-cold', 'relay-lanes', ...LEAN_PATHS],
  defaultPaths: ['kafkajs', 'relay', 'relay-cold'],
  needs: () => ({ worker: false, kafka: true }),
  run: runRelayWorkload,
};

async function runRelayWorkload(bench: Bench): Promise<WorkloadResult> {
  const { options: o, paths, say, env } = bench;
  const rows = o.rows ?? DEFAULT_ROWS;
  if (!env.KAFKA_BROKERS) throw new Error('the relay workload needs a Kafka broker (KAFKA_BROKERS)');
  // The relay's own client settings (TLS, SASL) from the variables the relay process gets, so the bare
  // producer pays for the same connection and its ratio is like for like.
  const config = loadConfig({ ...process.env, ...env, KAFKA_CLIENT_ID: 'bench-relay' });
  const kafka = createKafka(config);
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  await ensureTopic(kafkaAdmin, TOPIC, PARTITIONS, 1);
  await kafkaAdmin.disconnect();
  say(
    `workload relay: ${rows} rows, topic ${TOPIC} (${PARTITIONS} partitions), relay from ${o.worker}, ` +
      `Kafka ${config.kafka.sasl ? `SASL_SSL (${config.kafka.sasl.mechanism})` : config.kafka.ssl ? 'SSL' : 'plaintext'}`,
  );

  // The first relay start would build `dist` (`--worker dist`); that must not land inside a timed path.
  buildEntryCommand(o.worker, 'relay');
  const results: Measurement[] = [];
  const record = (m: Measurement) => {
    results.push(m);
    say(`${m.path}: ${JSON.stringify(m)}`);
  };
  if (paths.has('kafkajs')) record(await bareProducer(bench, kafka, rows));
  if (paths.has('relay')) record(await relayPath(bench, rows, 'warm'));
  if (paths.has('relay-cold')) record(await relayPath(bench, rows, 'cold'));
  if (paths.has('relay-lanes')) record(await relayPath(bench, rows, 'lanes'));
  for (const lean of LEAN_PATHS) {
    if (!paths.has(lean)) continue;
    const loops = config.relay.concurrency;
    record(await leanPath(bench, kafka, lean, { rows, batch: config.relay.batchSize, loops, partitions: PARTITIONS }));
  }

  const rate = (p: string) => results.find((r) => r.path.startsWith(p))?.ownersPerSecond;
  const ratio = (p: string) => {
    const bare = rate('bare kafkajs');
    const r = rate(p);
    return bare && r ? Number((r / bare).toFixed(3)) : undefined;
  };
  const comparisons: Record<string, number | undefined> = {
    relayVsBare: ratio('relay, woken'),
    relayColdVsBare: ratio('relay, cold'),
    relayLanesVsBare: ratio('relay, insert-only'),
    ...Object.fromEntries(LEAN_PATHS.map((p) => [`${p}VsBare`, ratio(LEAN_LABELS[p])])),
  };
  return {
    data: { rows },
    settings: { partitions: PARTITIONS, bareBatch: BARE_BATCH, relayBatch: process.env.RELAY_BATCH_SIZE ?? 'default' },
    results,
    comparisons,
    headline:
      `relay / bare kafkajs: woken ${comparisons.relayVsBare ?? '-'}, cold ${comparisons.relayColdVsBare ?? '-'}` +
      `, insert-only ${comparisons.relayLanesVsBare ?? '-'}` +
      LEAN_PATHS.filter((p) => paths.has(p))
        .map((p) => `, ${p} ${comparisons[`${p}VsBare`] ?? '-'}`)
        .join(''),
    table: {
      header: [
        'path',
        'wall s',
        'rows',
        'rows/s',
        'process CPU',
        'PostgreSQL CPU',
        'PostgreSQL µs/row',
        'Kafka broker CPU',
        'peak RSS MB',
      ],
      rows: results.map((m) => {
        const x = m.extra as { cpu: Record<string, string>; relayPeakRssMb?: number; postgresMicrosPerRow?: number };
        const own = m.path.startsWith('relay') ? x.cpu.worker : x.cpu.benchDriver;
        const pgSeconds = Number.parseFloat(x.cpu.postgres);
        return [
          m.path,
          m.seconds,
          m.owners,
          m.ownersPerSecond,
          own,
          x.cpu.postgres,
          x.postgresMicrosPerRow ?? Math.round((pgSeconds * 1e6) / m.owners),
          x.cpu.kafka,
          x.relayPeakRssMb ?? '',
        ];
      }),
    },
  };
}

/** Empties the outbox and vacuums it, so each path starts from the same table. */
async function reset(admin: pg.Pool): Promise<void> {
  await admin.query(
    `truncate profile.outbox_messages, profile.outbox_events, profile.outbox_deliveries, profile.outbox_held;
     update profile.outbox_lanes set xid = '0', id = '00000000-0000-0000-0000-000000000000', moved_at = null`,
  );
  await admin.query('vacuum analyze profile.outbox_messages, profile.outbox_events, profile.outbox_lanes');
}

/** The bare producer: the same messages the relay would send (read first, not timed), sent in order. */
async function bareProducer(bench: Bench, kafka: Kafka, rows: number): Promise<Measurement> {
  await reset(bench.admin);
  await seedOutbox(bench.admin, rows, `bench-relay-${crypto.randomBytes(3).toString('hex')}`);
  const { rows: stored } = await bench.admin.query<OutboxMessage>(
    `select ${OUTBOX_MESSAGE_COLUMNS} from profile.outbox_messages order by created_at, id`,
  );
  const messages = stored.map((r) => toKafkaMessage(r));
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const cpu0 = cpuSnapshot();
  const t0 = performance.now();
  for (let i = 0; i < messages.length; i += BARE_BATCH) {
    await producer.send({ topic: TOPIC, acks: -1, messages: messages.slice(i, i + BARE_BATCH) });
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuDelta(cpu0, cpuSnapshot(), seconds);
  await producer.disconnect();
  return measurement('bare kafkajs producer', seconds, messages.length, messages.length, messages.length, 0, {
    rowsPerSecond: Math.round(messages.length / seconds),
    cpu,
  });
}

/**
 * A relay process: `warm` starts it on an empty outbox and times from the rows' commit; `cold` seeds first
 * and times from the process start; `lanes` is `warm` on the insert-only outbox. Ends when no row is left
 * unpublished.
 */
async function relayPath(bench: Bench, rows: number, mode: 'warm' | 'cold' | 'lanes'): Promise<Measurement> {
  const { admin, database, env, options } = bench;
  await reset(admin);
  const correlationId = `bench-relay-${crypto.randomBytes(3).toString('hex')}`;
  if (mode === 'cold') await seedOutbox(admin, rows, correlationId);
  const t0cold = performance.now();
  const relay = await startRelayProcess(options.worker, relayEnv(env, database.relayUrl));
  try {
    const pid = relay.child.pid!;
    const rss = sampleRss(pid);
    // Woken: the clock starts at the commit (the insert's own seconds are not the relay's), as does the CPU.
    if (mode !== 'cold') {
      await seedOutbox(admin, rows, correlationId, mode === 'lanes' ? 'outbox_events' : 'outbox_messages');
    }
    const cpu0 = cpuSnapshot(pid);
    const t0 = mode === 'cold' ? t0cold : performance.now();
    await relay.waitForPublished(rows, 30 * 60_000);
    const seconds = (performance.now() - t0) / 1000;
    const left = await unpublishedCount(admin);
    if (left > 0) throw new Error(`the relay logged ${relay.published()} rows published, but ${left} are not`);
    const cpu = cpuDelta(cpu0, cpuSnapshot(pid), seconds);
    const label = {
      warm: 'relay, woken by the commit',
      cold: 'relay, cold start',
      lanes: 'relay, insert-only outbox, woken',
    }[mode];
    return measurement(label, seconds, rows, rows, rows, 0, {
      rowsPerSecond: Math.round(rows / seconds),
      relayPeakRssMb: Math.round(rss.stop() / 1024),
      cpu,
    });
  } finally {
    await relay.stop();
  }
}
