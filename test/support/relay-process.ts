/**
 * A relay in a process of its own, for tests that kill it. With CRASH_AFTER_SEND=1 it kills itself
 * with SIGKILL after Kafka acknowledged its first batch and before the batch is marked published:
 * the moment at-least-once delivery is about.
 */
import { loadConfig, requireDatabaseUrl } from '../../src/config';
import { createPool } from '../../src/db/pool';
import { createKafka } from '../../src/relay/kafka';
import { createLogger } from '../../src/observability/logger';
import { OutboxRelay } from '../../src/relay/outbox-relay';

async function main(): Promise<void> {
  const config = loadConfig();
  const url = requireDatabaseUrl(config, 'relay');
  const logger = createLogger('warn');
  const pool = createPool({ connectionString: url, max: 2 });
  const relay = new OutboxRelay({
    pool,
    listenUrl: url,
    kafka: createKafka(config, logger),
    config,
    logger,
    onSent: process.env.CRASH_AFTER_SEND === '1' ? () => void process.kill(process.pid, 'SIGKILL') : undefined,
  });
  // Listen before announcing the start, so a SIGTERM right after the announcement is never missed.
  process.once('SIGTERM', () => {
    void relay
      .stop()
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
  await relay.start();
  process.stdout.write('RELAY_STARTED\n');
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
