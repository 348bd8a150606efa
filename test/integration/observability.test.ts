/**
 * What an on-call engineer sees, checked against real processes: the worker and the relay run as
 * `npm run worker` / `npm run relay` would, their logs and `/metrics` are read back, and a traced cycle
 * is checked span by span.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { LOCAL_ROLE_PASSWORDS } from '../../scripts/stack';
import { freePort } from '../../src/observability/ports';
import { createTracing } from '../../src/observability/tracing';
import { insertDocuments, markers, outbox, rejectOwner, unpublishedCount } from '../support/data';
import { historyBytes } from '../support/history';
import { makePollingVersionCurrent } from '../../scripts/stack/versions';
import { startEntryProcess, type EntryProcess } from '../support/processes';
import { waitFor } from '../support/wait';
import { useIntegration } from '../support/harness';
import { testRelay } from '../support/relay';

const root = path.resolve(__dirname, '..', '..');
const stack = useIntegration('observability', { client: true, relayPoolSize: 2 });

/** Starts `src/<entry>.ts` of this clone as its own process, like `npm run <entry>`, and waits for `ready`. */
const startProcess = (entry: string, env: Record<string, string>, ready: string): Promise<EntryProcess> =>
  startEntryProcess({ root, entry, env, ready });

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of one sample, e.g. sample(text, 'profile_document_expiry_reminders_total{threshold_days="7"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * Names with a sample, and names declared by `# TYPE`: a labelled gauge that is empty while all is well (the
 * stranded-cycles gauge has a series only for a stranded version) is still exported, and its alert reads it.
 */
function metricNames(text: string): Set<string> {
  const lines = text.split('\n');
  return new Set([
    ...lines.filter((l) => l && !l.startsWith('#')).map((l) => l.split(/[{ ]/)[0]),
    ...lines.filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]),
  ]);
}

test('worker and relay processes: logs carry the five cycle events and no document value or secret; /metrics matches the ledger and outbox; every alert and dashboard metric exists', async () => {
  const today = new Date().toISOString().slice(0, 10);
  const canary = `CANARY${crypto.randomBytes(4).toString('hex')}`;
  const failing = crypto.randomUUID();
  const docs = await insertDocuments(stack.db.admin, today, [
    { daysLeft: 30, numberMask: `**** ${canary}1` },
    { daysLeft: 7, numberMask: `**** ${canary}2` },
    { daysLeft: 7, numberMask: `**** ${canary}3` },
    { daysLeft: -2, numberMask: `**** ${canary}4` },
    { ownerUserId: failing, daysLeft: 1, numberMask: `**** ${canary}5` },
  ]);
  await stack.db.admin.query(`update profile.person_documents set payload_cipher = convert_to($1, 'UTF8')`, [
    `${canary}-cipher`,
  ]);
  const undoReject = await rejectOwner(stack.db.admin, failing);

  const taskQueue = `obs-${crypto.randomUUID()}`;
  const relayPort = await freePort();
  let workerPort = await freePort();
  while (workerPort === relayPort) workerPort = await freePort();
  // The relay first: its port is bound before the worker looks for a free one for the SDK's exporter.
  const relay = await startProcess(
    'relay',
    {
      DATABASE_URL: stack.db.relayUrl,
      RELAY_DATABASE_URL: stack.db.relayUrl,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS!,
      METRICS_PORT: String(relayPort),
      RELAY_POLL_INTERVAL: '200ms',
      LOG_LEVEL: 'info',
    },
    'relay started',
  );
  const worker = await startProcess(
    'worker',
    {
      DATABASE_URL: stack.db.workerUrl,
      TEMPORAL_TASK_QUEUE: taskQueue,
      // A deployment of this test's own: the version made current below routes no other test's cycles.
      TEMPORAL_DEPLOYMENT_NAME: `obs-${crypto.randomUUID().slice(0, 8)}`,
      METRICS_PORT: String(workerPort),
      LOG_LEVEL: 'info',
    },
    'worker started',
  );
  await makePollingVersionCurrent(stack.client, stack.config.temporal.namespace, taskQueue);
  let workerMetrics: string;
  let relayMetrics: string;
  let handle;
  try {
    handle = await stack.startCycle({}, { taskQueue });
    const result = (await handle.result()) as { remindersSent: number; failedOwners: number };
    expect(result).toEqual(expect.objectContaining({ remindersSent: 4, failedOwners: 1 }));
    await waitFor(async () => (await unpublishedCount(stack.db.admin)) === 0);
    workerMetrics = await scrape(workerPort);
    relayMetrics = await scrape(relayPort);
  } finally {
    expect(await relay.stop()).toBe(0);
    expect(await worker.stop()).toBe(0);
    await undoReject();
  }

  // Metrics agree with what the database says happened.
  const rows = await outbox(stack.db.admin);
  const sent = rows.flatMap((r) => r.payload.documents);
  for (const t of [30, 7, 1, 0]) {
    expect(sample(workerMetrics, `profile_document_expiry_reminders_total{threshold_days="${t}"}`)).toBe(
      sent.filter((d) => d.thresholdDays === t).length,
    );
  }
  const carried = (await markers(stack.db.admin)).filter((m) =>
    sent.some((d) => d.documentId === m.document_id && d.thresholdDays === m.threshold_days),
  );
  expect(sent).toHaveLength(carried.length);
  expect(sample(workerMetrics, 'profile_document_expiry_reminder_owners_notified_total')).toBe(rows.length);
  expect(sample(workerMetrics, 'profile_document_expiry_reminder_cycles_total{status="completed"}')).toBe(1);
  expect(
    sample(workerMetrics, 'profile_document_expiry_reminder_cycle_duration_seconds_count{status="completed"}'),
  ).toBe(1);
  expect(sample(workerMetrics, 'profile_document_expiry_reminder_errors_total{kind="owner"}')).toBe(1);
  expect(sample(workerMetrics, 'profile_document_expiry_reminder_last_success_timestamp_seconds')).toBeGreaterThan(
    Date.now() / 1000 - 300,
  );
  // Only the failing owner's document is still due.
  expect(sample(workerMetrics, 'profile_document_expiry_reminder_backlog')).toBe(1);
  // No version of this worker's deployment is stranded, and reading that did not fail.
  expect(sample(workerMetrics, 'profile_document_expiry_reminder_stranded_refresh_errors_total')).toBe(0);
  expect(workerMetrics).not.toMatch(/^profile_document_expiry_reminder_stranded_cycles\{/m);
  expect([...metricNames(workerMetrics)].some((n) => n.startsWith('temporal_'))).toBe(true);
  expect(
    sample(relayMetrics, 'profile_outbox_relay_published_total{topic="pin.profile.document-expiry-reminders.v1"}'),
  ).toBe(rows.length);
  expect(sample(relayMetrics, 'profile_outbox_backlog_messages')).toBe(0);
  expect(sample(relayMetrics, 'profile_outbox_oldest_unpublished_age_seconds')).toBe(0);

  // Every metric the alerts and the dashboard use exists in a real scrape.
  const scraped = new Set([...metricNames(workerMetrics), ...metricNames(relayMetrics), 'up']);
  const used = new Set<string>();
  for (const file of ['ops/prometheus/alerts.yml', 'ops/grafana/profile-overview.json']) {
    for (const m of fs.readFileSync(path.join(root, file), 'utf8').matchAll(/\b(?:profile|temporal)_[a-z0-9_]+/g))
      used.add(m[0]);
  }
  expect(used.size).toBeGreaterThan(5);
  expect([...used].filter((name) => !scraped.has(name))).toEqual([]);

  // Logs: the five events, and no document value, cipher or password anywhere.
  const logText = [...worker.output, ...relay.output].join('');
  const lines = logText
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  for (const msg of ['cycle started', 'batch selected', 'reminder queued', 'cycle completed', 'owner failed']) {
    expect(lines.filter((l) => l.msg === msg).length).toBeGreaterThan(0);
  }
  expect(lines.find((l) => l.msg === 'cycle started')).toEqual(
    expect.objectContaining({ jobRunId: handle.workflowId, asOf: expect.any(String), thresholdsDays: [30, 7, 1, 0] }),
  );
  expect(lines.find((l) => l.msg === 'owner failed')).toEqual(
    expect.objectContaining({ ownerUserId: failing, error: expect.stringContaining('22023') }),
  );
  expect(lines.find((l) => l.msg === 'cycle completed')).toEqual(
    expect.objectContaining({ remindersSent: 4, prunedCount: 0, durationMs: expect.any(Number) }),
  );
  for (const secret of [canary, LOCAL_ROLE_PASSWORDS.worker, LOCAL_ROLE_PASSWORDS.relay])
    expect(logText).not.toContain(secret);
  const history = await historyBytes(handle);
  expect(history.includes(docs[0].id)).toBe(false);
  expect(history.includes(canary)).toBe(false);
});

test('a traced cycle and relay form the span tree cycle → claim → claimPage → outbox publish, correlated by jobRunId', async () => {
  const exporter = new InMemorySpanExporter();
  const tracing = createTracing({
    serviceName: 'expiry-reminder-test',
    spanProcessor: new SimpleSpanProcessor(exporter),
  });
  const owners = [crypto.randomUUID(), crypto.randomUUID()];
  await insertDocuments(stack.db.admin, '2026-09-02', [
    { ownerUserId: owners[0], daysLeft: 7 },
    { ownerUserId: owners[1], daysLeft: 0 },
  ]);
  const w = await stack.startWorker({ tracing });
  const handle = await stack.startCycle({ asOf: '2026-09-02', batchSize: 10 }, { taskQueue: w.taskQueue });
  await handle.result();
  await w.stop();

  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, deps: { tracer: tracing.tracer } });
  await relay.start();
  try {
    await waitFor(async () => exporter.getFinishedSpans().filter((s) => s.name === 'outbox publish').length === 2);
  } finally {
    await relay.stop();
  }
  await waitFor(async () => exporter.getFinishedSpans().some((s) => s.name.startsWith('RunWorkflow')));

  const spans = exporter.getFinishedSpans();
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const parent = (s: ReadableSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
  const cycle = spans.find((s) => s.name === 'RunWorkflow:documentExpiryReminderCycle')!;
  expect(cycle.attributes).toEqual(expect.objectContaining({ correlationId: handle.workflowId, batchSize: 10 }));
  const claim = spans.find((s) => s.name === 'claim')!;
  expect(parent(claim)).toBe(cycle);
  expect(claim.attributes).toEqual(
    expect.objectContaining({ correlationId: handle.workflowId, page: 1, pages: 1, documentCount: 2, owners: 2 }),
  );

  const publishes = spans.filter((s) => s.name === 'outbox publish');
  expect(publishes.map((s) => s.attributes.ownerUserId).sort()).toEqual([...owners].sort());
  for (const publish of publishes) {
    expect(publish.attributes.correlationId).toBe(handle.workflowId);
    expect(publish.spanContext().traceId).toBe(cycle.spanContext().traceId);
    // outbox publish → RunActivity:claimPage (the claim both owners are in) → StartActivity → claim → RunWorkflow
    const claimRun = parent(publish)!;
    expect(claimRun.name).toBe('RunActivity:claimPage');
    expect(claimRun.attributes).toEqual(expect.objectContaining({ owners: 2, correlationId: handle.workflowId }));
    const scheduled = parent(claimRun)!;
    expect(scheduled.name).toBe('StartActivity:claimPage');
    expect(parent(scheduled)).toBe(claim);
  }
  await tracing.shutdown();
});
