/**
 * METRICS_HOST: the address `/metrics` and `/healthz` listen on. Loopback unless a deployment opens it (a
 * scrape runs database counts and the page has no login), an IP address or a refusal that says what to write.
 */
import http from 'node:http';
import { ConfigError, loadConfig } from '../../src/config';
import { createRelayMetrics, startMetricsServer } from '../../src/observability/metrics';

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('METRICS_HOST', () => {
  it('is loopback when unset or empty', () => {
    expect(loadConfig({}).metricsHost).toBe('127.0.0.1');
    expect(loadConfig({ METRICS_HOST: '' }).metricsHost).toBe('127.0.0.1');
  });

  it.each(['0.0.0.0', '127.0.0.1', '10.1.2.3', '::', '::1'])('takes the IP address %s', (host) => {
    expect(loadConfig({ METRICS_HOST: host }).metricsHost).toBe(host);
  });

  it.each(['localhost', '0.0.0.0:9464', '*', 'http://0.0.0.0', '256.1.1.1'])(
    'refuses %s, naming the variable and what to write instead',
    (host) => {
      const problems = problemsOf({ METRICS_HOST: host });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^METRICS_HOST=/);
      expect(problems[0]).toContain('expected the IP address to listen on: 127.0.0.1');
      expect(problems[0]).toContain('0.0.0.0');
    },
  );

  it('is where the metrics server listens, and nowhere else', async () => {
    const server = await startMetricsServer({
      registry: createRelayMetrics().registry,
      port: 0,
      host: loadConfig({}).metricsHost,
    });
    try {
      const address = server.address();
      expect(address).toMatchObject({ address: '127.0.0.1' });
      const port = (address as { port: number }).port;
      const status = await new Promise<number>((resolve, reject) =>
        http.get(`http://127.0.0.1:${port}/healthz`, (res) => resolve(res.statusCode ?? 0)).on('error', reject),
      );
      expect(status).toBe(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('/healthz', () => {
  it('answers 503 with what the process waits for until it serves (the worker: until it polls), then 200', async () => {
    let waiting: string | undefined = 'starting: not polling the task queue yet';
    const server = await startMetricsServer({
      registry: createRelayMetrics().registry,
      port: 0,
      host: '127.0.0.1',
      notReady: () => waiting,
    });
    try {
      const port = (server.address() as { port: number }).port;
      const health = async () => {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        return [res.status, (await res.text()).trim()];
      };
      expect(await health()).toEqual([503, 'starting: not polling the task queue yet']);
      waiting = undefined;
      expect(await health()).toEqual([200, 'ok']);
      // The mirror: shutting down (draining) is not serving.
      waiting = 'stopping';
      expect(await health()).toEqual([503, 'stopping']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
