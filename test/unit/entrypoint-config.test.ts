import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { EXIT_CODES } from '../../src/run-main';

const repoRoot = path.resolve(__dirname, '../..');
const WORKER_URL = 'postgres://expiry_reminder_worker:pw@127.0.0.1:1/none';

/** Runs an entry point under tsx with the test's environment minus any configuration it inherited. */
function run(entryPoint: string, vars: Record<string, string>) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(DATABASE_URL|MIGRATION_DATABASE_URL|RELAY_DATABASE_URL|REMINDER_|TEMPORAL_)/.test(key)) delete env[key];
  }
  return spawnSync(process.execPath, [require.resolve('tsx/cli'), entryPoint], {
    cwd: repoRoot,
    env: { ...env, ...vars },
    encoding: 'utf8',
    timeout: 55_000,
  });
}

describe('entry points with bad configuration', () => {
  jest.setTimeout(60_000);

  it('stops the worker with exit code 78 when the thresholds are not sorted', () => {
    const result = run('src/worker.ts', { DATABASE_URL: WORKER_URL, REMINDER_THRESHOLDS_DAYS: '7,30' });
    expect(result.status).toBe(EXIT_CODES.config);
    expect(result.stderr).toContain('Invalid configuration');
    expect(result.stderr).toContain('REMINDER_THRESHOLDS_DAYS="7,30": thresholds must be sorted in descending order');
    expect(result.stdout).toBe('');
  });

  it('stops migrate with exit code 78 when the batch size is 0', () => {
    const result = run('src/migrate.ts', { DATABASE_URL: WORKER_URL, REMINDER_BATCH_SIZE: '0' });
    expect(result.status).toBe(EXIT_CODES.config);
    expect(result.stderr).toContain('REMINDER_BATCH_SIZE="0": expected a whole number from 1 to 10000');
    expect(result.stdout).toBe('');
  });

  it('stops the worker with exit code 78 when DATABASE_URL is unset', () => {
    const result = run('src/worker.ts', {});
    expect(result.status).toBe(EXIT_CODES.config);
    expect(result.stderr).toContain('DATABASE_URL=(unset)');
    expect(result.stdout).toBe('');
  });

  it('stops the relay with exit code 78 naming its own variable when no URL is set', () => {
    const result = run('src/relay.ts', {});
    expect(result.status).toBe(EXIT_CODES.config);
    expect(result.stderr).toContain('RELAY_DATABASE_URL (or DATABASE_URL)=(unset): expected the relay connection');
    expect(result.stdout).toBe('');
  });

  it('does not show the database password on stderr', () => {
    const result = run('src/worker.ts', { DATABASE_URL: 'postgres://u:s3cret@h:99999/db' });
    expect(result.status).toBe(EXIT_CODES.config);
    expect(result.stderr).toContain('DATABASE_URL="postgres://u:***@h:99999/db"');
    expect(result.stderr).not.toContain('s3cret');
  });
});
