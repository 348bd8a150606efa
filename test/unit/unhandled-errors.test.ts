/** An error nothing handled stops an entry point through its orderly shutdown, then exits 1. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { EXIT_CODES } from '../../src/run-main';

const fixture = path.resolve(__dirname, '../fixtures/entry-point/unhandled.ts');

function run(mode: string) {
  const out = spawnSync(process.execPath, [require.resolve('tsx/cli'), fixture, mode], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  const lines = out.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: number; msg: string; kind?: string; reason?: string });
  return { status: out.status, stderr: out.stderr, lines };
}

describe('stopOnUnhandledErrors', () => {
  jest.setTimeout(60_000);

  it.each(['rejection', 'exception'])('an unhandled %s is logged, the process stops in order and exits 1', (mode) => {
    const { status, stderr, lines } = run(mode);
    expect(lines.map((l) => l.msg)).toEqual(['unhandled error, stopping', 'stopped in order']);
    expect(lines[0]).toMatchObject({
      level: 50,
      kind: mode === 'rejection' ? 'unhandledRejection' : 'uncaughtException',
    });
    expect(lines[1]).toMatchObject({ reason: 'unhandled error' });
    expect(status).toBe(EXIT_CODES.failure);
    expect(stderr).toContain('fixture failed: Error: a ');
  });

  it('a run without one stops with exit 0 and no error line', () => {
    const { status, lines } = run('none');
    expect(lines.map((l) => l.msg)).toEqual(['stopped in order']);
    expect(status).toBe(EXIT_CODES.ok);
  });
});
