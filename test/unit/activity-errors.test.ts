import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { activityFailures } from '../../src/activities/interceptor';
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

  it.each([
    ['a socket closed under pg', new Error('Connection terminated unexpectedly')],
    ['a client ended mid-query', new Error('Connection terminated')],
    [
      'a client unusable after its connection failed',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
    ['a new connection that did not open in time', new Error('Connection terminated due to connection timeout')],
    ['no reply within query_timeout', new Error('Query read timeout')],
    [
      "pg-pool's timeout around the socket's error",
      new Error('Connection terminated due to connection timeout', { cause: pgError('ECONNRESET') }),
    ],
    ['a host name that does not resolve', pgError('ENOTFOUND')],
    ['a reset socket', pgError('ECONNRESET')],
    ['a connect that timed out', pgError('ETIMEDOUT')],
    ['a write to a closed socket', pgError('EPIPE')],
    ['a server that cannot accept connections now', pgError('57P03')],
  ])('takes %s for a lost connection, to retry', (_what, err) => {
    expect(isConnectionError(err)).toBe(true);
    expect(isPermanentDatabaseError(err)).toBe(false);
  });

  it.each([
    ['a TypeError from a bug', new TypeError("Cannot read properties of undefined (reading 'won')")],
    ['a plain error without a code', new Error('something else went wrong')],
    ['a RangeError', new RangeError('Invalid time value')],
    ['a thrown string', 'boom'],
    ['a statement timeout', pgError('57014')],
    ['a serialization failure', pgError('40001')],
    ['an undefined column', pgError('42703')],
    ['an unknown system error', pgError('EACCES')],
    [
      'a full pool with no client free in time (its connections busy, the database may be fine)',
      new Error('timeout exceeded when trying to connect'),
    ],
  ])('does not take %s for an unreachable database: the rest of the group is still tried', (_what, err) => {
    expect(isConnectionError(err)).toBe(false);
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

  it('keeps an ApplicationFailure as its thrower decided it: a permanent one stays non-retryable, with its type', () => {
    const missing = ApplicationFailure.nonRetryable('no scan position for page 2', 'ScanPositionMissing');
    expect(toActivityFailure(missing)).toBe(missing);
    const transient = ApplicationFailure.retryable('try again', 'Busy');
    expect(toActivityFailure(transient)).toBe(transient);
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

describe("the worker's activity interceptor (every activity's errors, converted in one place)", () => {
  const run = (fn: () => Promise<unknown>) =>
    new MockActivityEnvironment({}, { interceptors: [activityFailures], logger: new DefaultLogger('ERROR') })
      .run(fn)
      .catch((e: unknown) => e);

  it('turns a permanent database error into a non-retryable failure named by its SQLSTATE, a transient one into a retryable one', async () => {
    expect(await run(() => Promise.reject(pgError('22023', 'bad data')))).toEqual(
      expect.objectContaining({ nonRetryable: true, type: 'PostgresError:22023', message: 'bad data' }),
    );
    expect(await run(() => Promise.reject(pgError('40001')))).toEqual(
      expect.objectContaining({ nonRetryable: false, type: 'PostgresError:40001' }),
    );
  });

  it("turns a later attempt's hold (XR001) into AttemptOver, and keeps what is decided already: an ApplicationFailure, a cancellation", async () => {
    expect(await run(() => Promise.reject(pgError('XR001')))).toEqual(
      expect.objectContaining({ nonRetryable: true, type: 'AttemptOver' }),
    );
    const decided = ApplicationFailure.nonRetryable('no scan position', 'ScanPositionMissing');
    expect(await run(() => Promise.reject(decided))).toBe(decided);
    const cancelled = new CancelledFailure('TIMED_OUT');
    expect(await run(() => Promise.reject(cancelled))).toBe(cancelled);
  });

  it('the mirror: a value an activity returns goes through untouched', async () => {
    expect(await run(() => Promise.resolve({ pages: 3 }))).toEqual({ pages: 3 });
  });
});
