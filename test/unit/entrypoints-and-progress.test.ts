/** The pure parts of the entry points' endings and of the progress line. */
import { ConfigError } from '../../src/config';
import { ZERO_COUNTS } from '../../src/domain/cycle';
import { formatProgress, type CycleProgress } from '../../src/domain/progress';
import { EXIT_CODES, exitFor, UnavailableError } from '../../src/run-main';

describe('exitFor', () => {
  test('bad configuration exits 78 with the list of problems and no stack', () => {
    const { code, message } = exitFor('worker', new ConfigError(['REMINDER_BATCH_SIZE=0: expected 1 or more']));
    expect(code).toBe(EXIT_CODES.config);
    expect(message).toBe('Invalid configuration:\n  - REMINDER_BATCH_SIZE=0: expected 1 or more');
  });

  test('a dependency not ready exits 69 with its message only', () => {
    expect(exitFor('worker', new UnavailableError('run npm run migrate'))).toEqual({
      code: EXIT_CODES.unavailable,
      message: 'run npm run migrate',
    });
  });

  test('anything else exits 1 with the stack, and a connection string in it loses its password', () => {
    const { code, message } = exitFor(
      'relay',
      new Error('connect postgres://outbox_relay:s3cret@db:5432/profile failed'),
    );
    expect(code).toBe(EXIT_CODES.failure);
    expect(message).toMatch(/^relay failed: Error: connect postgres:\/\/outbox_relay:/);
    expect(message).not.toContain('s3cret');
  });

  test('a thrown non-error still exits 1 with what was thrown', () => {
    expect(exitFor('migrate', 'boom')).toEqual({
      code: 1,
      message: expect.stringContaining('migrate failed: Error: boom'),
    });
  });
});

describe('formatProgress', () => {
  const base: CycleProgress = { ...ZERO_COUNTS, asOf: '2026-12-03T03:00:00.000Z', runs: 1 };

  test('a cycle that has just started', () => {
    expect(formatProgress(base, 400)).toBe(
      'cycle as of 2026-12-03 · page 0 · owners 0 done, 0 failed · 0 reminders · 0 s',
    );
  });

  test('busy owners and later runs are shown only when there are any', () => {
    const p = {
      ...base,
      pages: 12,
      ownersProcessed: 4_800,
      failedOwners: 2,
      ownersBusy: 3,
      remindersSent: 4_700,
      runs: 2,
    };
    expect(formatProgress(p, 61_600)).toBe(
      'cycle as of 2026-12-03 · page 12 · owners 4800 done, 2 failed, 3 busy · 4700 reminders · 62 s · run 2',
    );
  });
});
