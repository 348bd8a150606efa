/**
 * `npm run stack -- --production` for a shell, as a user runs it: `eval "$(npm run -s stack -- --production)"`
 * brings up the whole profile in the background and prints its variables; `npm run -s stack -- stop` ends
 * it and leaves nothing behind: no process, no folder of certificates and passwords.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { EXPORT_LINE, runStackCli, useStateDir } from '../support/stack-cli';
import { processAlive } from '../support/wait';

const cacheHome = useStateDir('stack-cli-production-');

function stackCli(...args: string[]) {
  // Its own pid file and logs; the built servers and jars stay in the user's cache.
  const env: NodeJS.ProcessEnv = { ...process.env, STACK_STATE_DIR: cacheHome(), STACK_PID: '' };
  // A shell with the dev stack's variables must not make the production profile adopt its servers.
  for (const name of ['DATABASE_URL', 'MIGRATION_DATABASE_URL', 'KAFKA_BROKERS']) delete env[name];
  return runStackCli(args, env, 600_000);
}

const alive = processAlive;

test('in the background it prints the profile’s variables, they connect over TLS, and stop leaves nothing behind', async () => {
  const started = await stackCli('--production', '--background');
  const lines = started.stdout.trimEnd().split('\n');
  expect(lines.filter((l) => !EXPORT_LINE.test(l))).toEqual([]);
  const env = Object.fromEntries(lines.map((l) => /^export ([A-Z_]+)='(.*)'$/.exec(l)!.slice(1, 3)));
  expect(Object.keys(env)).toEqual(
    expect.arrayContaining([
      'STACK_PID',
      'DATABASE_URL',
      'RELAY_DATABASE_URL',
      'TEMPORAL_ADDRESS',
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      'KAFKA_BROKERS',
      'KAFKA_SSL_CA_PATH',
      'KAFKA_SASL_MECHANISM',
    ]),
  );
  const pid = Number(env.STACK_PID);
  const folder = path.dirname(path.dirname(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH));
  try {
    expect(env.DATABASE_URL).toContain('sslmode=verify-full');
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()');
      expect(rows).toEqual([{ ssl: true }]);
    } finally {
      await client.end();
    }
    expect(fs.existsSync(folder)).toBe(true);

    const stopped = await stackCli('stop');
    expect(stopped.stdout).toMatch(/^unset STACK_PID [A-Z_ ]+\n$/);
    expect(stopped.stdout).toContain(' KAFKA_SASL_PASSWORD');
    expect(alive(pid)).toBe(false);
    expect(fs.existsSync(folder)).toBe(false);
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGTERM');
  }
}, 900_000);
