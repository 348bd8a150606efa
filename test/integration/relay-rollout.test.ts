/**
 * The relay's rolling deploy (issue 48, item 3), against the real broker: the previous release's relay (`79d0027`,
 * exported from git: it knows the old outbox only) and this release's run at once while the previous release's
 * workers still write `outbox_messages`, rows arriving as both publish. Every row reaches Kafka, each owner's in
 * the order they were written (first deliveries; a re-send may follow, at least once), and both relays took part.
 * Then the rollout ends, the old relay stops and the workers write events: this release's relay sends each
 * owner's events after its old rows.
 */
import crypto from 'node:crypto';
import { prepareRevision, resolveRevisions } from '../../bench/compare/revisions';
import { TOPIC } from '../../src/domain/names';
import { consumeUntil, type ConsumedMessage } from '../../scripts/stack/consume';
import { useIntegration } from '../support/harness';
import { revisionMissing, startEntryProcess, type EntryProcess } from '../support/processes';
import { stackKafka, testRelay } from '../support/relay';
import { sleep } from '../support/wait';

/**
 * The last release before the relay read the insert-only outbox (the parent of `0b8d8af`, which added migration
 * 025 and the relay's lanes): what runs in production when this release's relays roll out. Fixed, not
 * `bench/compare-base`, which moves with every landing.
 */
const PREVIOUS_RELAY = '79d0027302bfbbd32f1300fb3077538d6236f33d';

/** Owners, and rows each writes while both relays run: one row of every owner a round, as a cycle's commits come. */
const OWNERS = 12;
const ROUNDS = 8;

const stack = useIntegration('relay-rollout', { relayPoolSize: 6 });

const missing = revisionMissing(PREVIOUS_RELAY, 'the previous release');
if (missing) process.stderr.write(`relay-rollout: skipped: ${missing}\n`);

/** One row of the old outbox for each of `owners`, in one transaction, as a worker of the previous release writes. */
async function oldRows(owners: readonly string[], run: string, round: number): Promise<string[]> {
  const { rows } = await stack.db.admin.query<{ id: string }>(
    `insert into profile.outbox_messages (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id)
     select gen_random_uuid(), 'Profile', o::uuid, $2, o, 'E', 1, jsonb_build_object('round', $4::int), $3
       from unnest($1::text[]) with ordinality as u(o, n)
      order by n
     returning id`,
    [owners, TOPIC, run, round],
  );
  return rows.map((r) => r.id);
}

/** One event for each of `owners`, in one transaction, as this release's worker writes. */
async function newEvents(owners: readonly string[], run: string): Promise<string[]> {
  const { rows } = await stack.db.admin.query<{ id: string }>(
    `insert into profile.outbox_events (id, aggregate_type, aggregate_id, topic, message_key, event_type,
            contract_version, payload, correlation_id)
     select gen_random_uuid(), 'Profile', o::uuid, $2, o, 'E', 1, '{"table":"new"}', $3
       from unnest($1::text[]) as u(o)
     returning id`,
    [owners, TOPIC, run],
  );
  return rows.map((r) => r.id);
}

/** Each owner's message ids in the order Kafka first delivered them (a re-send later does not move one). */
function firstDeliveries(messages: readonly ConsumedMessage[]): Map<string, string[]> {
  const seen = new Set<string>();
  const byOwner = new Map<string, string[]>();
  for (const m of messages) {
    const id = m.headers.messageId;
    if (seen.has(id)) continue;
    seen.add(id);
    byOwner.set(m.key, [...(byOwner.get(m.key) ?? []), id]);
  }
  return byOwner;
}

const ofRun = (run: string) => (ms: ConsumedMessage[]) => ms.filter((m) => m.headers.correlationId === run);
const distinct = (ms: readonly ConsumedMessage[]) => new Set(ms.map((m) => m.headers.messageId)).size;

(missing ? test.skip : test)(
  'the previous release’s relay and this one publish the old outbox together: every row once at least, each owner’s in write order; then events follow the old rows',
  async () => {
    const [previous] = resolveRevisions([PREVIOUS_RELAY]);
    prepareRevision(previous, () => {});
    const run = `rollout-${crypto.randomUUID()}`;
    const owners = Array.from({ length: OWNERS }, () => crypto.randomUUID());
    const written = new Map<string, string[]>(owners.map((o) => [o, []]));
    // Small batches and a short poll, so that both relays claim many times while rows keep coming.
    const relayEnv = { RELAY_BATCH_SIZE: '5', RELAY_POLL_INTERVAL: '100ms', RELAY_LINGER: '0ms' };
    let old: EntryProcess | undefined = await startEntryProcess({
      root: previous.dir,
      entry: 'relay',
      env: {
        DATABASE_URL: stack.db.relayUrl,
        RELAY_DATABASE_URL: stack.db.relayUrl,
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        ...relayEnv,
      },
      ready: 'relay started',
    });
    const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, env: relayEnv });
    await relay.start();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const ids = await oldRows(owners, run, round);
        owners.forEach((o, i) => written.get(o)!.push(ids[i]));
        await sleep(150);
      }
      const total = OWNERS * ROUNDS;
      const first = ofRun(run)(await consumeUntil(stackKafka(), (ms) => distinct(ofRun(run)(ms)) >= total, 90_000));
      expect(distinct(first)).toBe(total);
      expect(Object.fromEntries(firstDeliveries(first))).toEqual(Object.fromEntries(written));
      const { rows } = await stack.db.admin.query<{ n: number }>(
        `select count(*)::int as n from profile.outbox_messages where correlation_id = $1 and published_at is null`,
        [run],
      );
      expect(rows[0].n).toBe(0);
      // Both took part: the old relay logged batches, and this one did.
      expect(old.output.join('')).toMatch(/"msg":"published"/);
      expect(relay.logs.lines.some((l) => l.msg === 'published')).toBe(true);

      // The rollout ends; the workers of this release write events, after every owner's old rows.
      expect(await old.stop()).toBe(0);
      old = undefined;
      const events = await newEvents(owners, run);
      owners.forEach((o, i) => written.get(o)!.push(events[i]));
      const all = ofRun(run)(
        await consumeUntil(stackKafka(), (ms) => distinct(ofRun(run)(ms)) >= total + OWNERS, 90_000),
      );
      expect(Object.fromEntries(firstDeliveries(all))).toEqual(Object.fromEntries(written));
    } finally {
      await old?.stop();
      await relay.stop();
    }
  },
  240_000,
);
