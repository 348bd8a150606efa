/** Gauges read from the database cost at most one count per interval (issue 19, item 5). */
import { setTimeout as sleep } from 'node:timers/promises';
import { outboxBacklog } from '../../src/db/outbox';
import { createRelayMetrics } from '../../src/observability/metrics';
import { gaugeRefresh, withStatementTimeout } from '../../src/observability/refresh';
import { useIntegration } from '../support/harness';

const stack = useIntegration('gauge-refresh', { relayPoolSize: 4 });

/** The relay's backlog gauges as `src/relay.ts` wires them, with the counts it ran. */
function relayGauges(intervalMs: number, statement = outboxBacklog, timeoutMs = 10_000) {
  const metrics = createRelayMetrics();
  let counts = 0;
  const refresh = gaugeRefresh({
    intervalMs,
    refresh: async () => {
      counts += 1;
      const backlog = await withStatementTimeout(stack.relayPool, timeoutMs, statement);
      metrics.backlog.set(backlog.count);
    },
    onError: () => metrics.backlogRefreshErrors.inc(),
  });
  return { metrics, refresh, counts: () => counts };
}

const value = async (m: { get(): Promise<{ values: { value: number }[] }> }) => (await m.get()).values[0]?.value;

test('N concurrent scrapes run one count', async () => {
  const g = relayGauges(30_000);
  await Promise.all(Array.from({ length: 20 }, () => g.refresh.scrape()));
  expect(g.counts()).toBe(1);
  expect(await value(g.metrics.backlog)).toBe(0);
});

test('a scrape inside the interval runs none; one after it, or a refresh after a cycle, runs one', async () => {
  const g = relayGauges(300);
  await g.refresh.scrape();
  await g.refresh.scrape();
  expect(g.counts()).toBe(1);
  await sleep(350);
  await g.refresh.scrape();
  expect(g.counts()).toBe(2);
  await g.refresh.now();
  expect(g.counts()).toBe(3);
});

test('a failing refresh (statement timeout) keeps the last value and counts an error', async () => {
  const g = relayGauges(0);
  g.metrics.backlog.set(42);
  const slow = relayGauges(
    0,
    async (tx) => {
      await tx.query('select pg_sleep(2)');
      return outboxBacklog(tx);
    },
    100,
  );
  slow.metrics.backlog.set(42);
  await slow.refresh.scrape();
  expect(await value(slow.metrics.backlog)).toBe(42);
  expect(await value(slow.metrics.backlogRefreshErrors)).toBe(1);
  await g.refresh.scrape();
  expect(await value(g.metrics.backlogRefreshErrors)).toBe(0);
});
