import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { describeFailure } from '../../src/domain/failures';
import { isConnectionError, isPermanentDatabaseError, toActivityFailure } from '../../src/activities/errors';

const pgError = (code: string, message = 'boom') => Object.assign(new Error(message), { code });

describe('database errors', () => {
  it.each([
    ['22023', true, false],
    ['23502', true, false],
    ['42501', true, false],
    ['40001', false, false],
    ['40P01', false, false],
    ['57014', false, false],
    ['57P01', false, true],
    ['08006', false, true],
    ['ECONNREFUSED', false, true],
  ])('%s: permanent %s, connection %s', (code, permanent, connection) => {
    expect(isPermanentDatabaseError(pgError(code))).toBe(permanent);
    expect(isConnectionError(pgError(code))).toBe(connection);
  });

  it('takes an error without a code (a timeout, a reset socket) as a lost connection, to retry', () => {
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isPermanentDatabaseError(new Error('Connection terminated unexpectedly'))).toBe(false);
  });

  it('makes permanent errors non-retryable, typed with their SQLSTATE, and hides passwords', () => {
    const failure = toActivityFailure(
      pgError('22023', 'bad value for postgres://u:hunter2@db/x'),
    ) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.type).toBe('PostgresError:22023');
    expect(failure.message).not.toContain('hunter2');
    expect((toActivityFailure(pgError('40001')) as ApplicationFailure).nonRetryable).toBe(false);
  });
});

describe('describeFailure: one text for a failure, in the workflow and in the activities', () => {
  it('reads an activity failure by its cause: type and message', () => {
    const cause = ApplicationFailure.nonRetryable('null value in column', 'PostgresError:23502');
    const wrapped = new ActivityFailure(
      'activity failed',
      'remindOwners',
      '3',
      RetryState.NON_RETRYABLE_FAILURE,
      undefined,
      cause,
    );
    expect(describeFailure(wrapped)).toBe('PostgresError:23502: null value in column');
  });

  it('gives the message alone for an untyped failure, a plain error and a thrown string', () => {
    expect(describeFailure(ApplicationFailure.create({ message: 'no type' }))).toBe('no type');
    expect(describeFailure(new Error('plain'))).toBe('plain');
    expect(describeFailure('thrown text')).toBe('thrown text');
  });

  it('describes a database error the activity converted, without its password', () => {
    expect(describeFailure(toActivityFailure(pgError('22023', 'bad postgres://u:hunter2@db/x')))).toEqual(
      expect.stringMatching(/^PostgresError:22023: bad postgres:\/\/u:[^h]*@db\/x$/),
    );
  });
});
