/**
 * What `explain` reads in a cycle's history (issue 30, item 1): the activities a run ended, with input and
 * result (or the failure that ended their retries), and what each says of one owner.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ownerOutcome, resultStatusInHistory, settingsInHistory } from '../../src/operations/explain-history';
import { endedActivities } from '../../src/temporal/histories';
import { readFixture } from '../../scripts/record-histories/fixtures';

const OWNER = '0190f3a2-0000-7000-8000-000000000001';
const OTHER = '0190f3a2-0000-7000-8000-000000000002';
const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
const claimResult = (over: { busyOwnerIds?: string[]; failed?: { ownerUserId: string; error: string }[] }) => ({
  ownersProcessed: 1,
  ownersNotified: 1,
  remindersSent: 1,
  markersInserted: 1,
  skippedAlreadyMarked: 0,
  busyOwnerIds: [],
  failed: [],
  ...over,
});

describe('endedActivities', () => {
  it('pairs each end with its schedule, in the order they ended, completed and failed alike', () => {
    // fromObject, as a history read from the server: event ids are Longs there.
    const history = temporal.api.history.v1.History.fromObject({
      events: [
        {
          eventId: 5,
          activityTaskScheduledEventAttributes: {
            activityType: { name: 'remindOwners' },
            activityId: '1',
            input: payloads({ ownerUserIds: [OWNER] }),
          },
        },
        {
          eventId: 6,
          activityTaskScheduledEventAttributes: {
            activityType: { name: 'claimPage' },
            activityId: '2',
            input: payloads({ page: 1 }),
          },
        },
        {
          eventId: 8,
          activityTaskCompletedEventAttributes: { scheduledEventId: 6, result: payloads(claimResult({})) },
        },
        {
          eventId: 9,
          activityTaskTimedOutEventAttributes: {
            scheduledEventId: 5,
            failure: { message: 'activity StartToClose timeout' },
          },
        },
      ],
    });
    expect(endedActivities(history)).toEqual([
      { activityType: 'claimPage', activityId: '2', input: { page: 1 }, result: claimResult({}) },
      {
        activityType: 'remindOwners',
        activityId: '1',
        input: { ownerUserIds: [OWNER] },
        failure: 'activity StartToClose timeout',
      },
    ]);
  });
});

describe('ownerOutcome', () => {
  it('busy or failed as the result reports it, whatever the input', () => {
    expect(ownerOutcome({ input: { page: 3 }, result: claimResult({ busyOwnerIds: [OTHER, OWNER] }) }, OWNER)).toEqual({
      outcome: 'busy',
    });
    expect(
      ownerOutcome(
        {
          input: { ownerUserIds: [OWNER] },
          result: claimResult({ failed: [{ ownerUserId: OWNER, error: 'DataError: x' }] }),
        },
        OWNER,
      ),
    ).toEqual({ outcome: 'failed', error: 'DataError: x' });
  });

  it('claimed when the input names the owner and the result does not; nothing when neither does', () => {
    expect(ownerOutcome({ input: { ownerUserIds: [OWNER] }, result: claimResult({}) }, OWNER)).toEqual({
      outcome: 'claimed',
    });
    expect(ownerOutcome({ input: { page: 3 }, result: claimResult({ busyOwnerIds: [OTHER] }) }, OWNER)).toBeUndefined();
    // An activity of another kind (a page read, the prune) says nothing of owners.
    expect(ownerOutcome({ input: { ownerUserIds: [OWNER] }, result: { ownerIds: [OWNER] } }, OWNER)).toBeUndefined();
  });

  it('failed when a whole group failed with the owner in it; a failed page (no owner ids) says nothing', () => {
    expect(
      ownerOutcome({ input: { ownerUserIds: [OTHER, OWNER] }, failure: 'ApplicationFailure: boom' }, OWNER),
    ).toEqual({
      outcome: 'failed',
      error: 'ApplicationFailure: boom',
    });
    expect(ownerOutcome({ input: { page: 3 }, failure: 'ApplicationFailure: boom' }, OWNER)).toBeUndefined();
  });
});

describe("the day's cycle's own record (issue 38)", () => {
  const settings = {
    asOf: '2026-09-02T00:00:00.000Z',
    asOfDate: '2026-09-02',
    thresholdsDays: [14, 3],
    retentionDays: 30,
  };
  const run = (events: unknown[]) => temporal.api.history.v1.History.fromObject({ events });
  const resolved = (eventId: number, result: unknown) => [
    {
      eventId,
      activityTaskScheduledEventAttributes: {
        activityType: { name: 'resolveCycleSettings' },
        activityId: '1',
        input: payloads({ input: {}, jobRunId: 'cycle-1' }),
      },
    },
    {
      eventId: eventId + 2,
      activityTaskCompletedEventAttributes: { scheduledEventId: eventId, result: payloads(result) },
    },
  ];

  it("the thresholds and retention of its resolveCycleSettings result, not the reader's", () => {
    expect(settingsInHistory(run(resolved(5, settings)))).toEqual({ thresholdsDays: [14, 3], retentionDays: 30 });
  });

  it('nothing from a run that has no such result, or one of another shape (tolerant of older histories)', () => {
    expect(settingsInHistory(run([]))).toBeUndefined();
    expect(settingsInHistory(run(resolved(5, { thresholdsDays: [], retentionDays: 30 })))).toBeUndefined();
    expect(settingsInHistory(run(resolved(5, { thresholdsDays: [7] })))).toBeUndefined();
    expect(settingsInHistory(run(resolved(5, null)))).toBeUndefined();
  });

  it("the status of the result it ended with: a cycle stopped at its time limit is COMPLETED in Temporal's list", () => {
    const ended = (result: unknown) =>
      run([{ eventId: 9, workflowExecutionCompletedEventAttributes: { result: payloads(result) } }]);
    expect(resultStatusInHistory(ended({ status: 'time-limit', remindersSent: 3 }))).toBe('time-limit');
    expect(resultStatusInHistory(ended({ status: 'cancelled' }))).toBe('cancelled');
    expect(resultStatusInHistory(ended({ remindersSent: 3 }))).toBeUndefined();
    expect(resultStatusInHistory(run(resolved(5, settings)))).toBeUndefined();
  });
});

describe('the recorded histories of real cycles (test/fixtures/histories): what explain reads of them', () => {
  const fixture = (name: string) => readFixture(name).history;

  it('a cycle stopped at its time limit, or cancelled, ended with a result that says so', () => {
    expect(resultStatusInHistory(fixture('time-limit.json'))).toBe('time-limit');
    expect(resultStatusInHistory(fixture('cancelled.json'))).toBe('cancelled');
    expect(resultStatusInHistory(fixture('normal.json'))).toBe('completed');
    // A run that continued as new has no result; the last run has the cycle's.
    expect(resultStatusInHistory(fixture('continued-as-new-run1.json'))).toBeUndefined();
  });

  it('every run of a cycle recorded its settings, a continued one too; a refused input none', () => {
    for (const name of ['normal.json', 'continued-as-new-run2.json', 'partitioned.json']) {
      expect(settingsInHistory(fixture(name))).toEqual({
        thresholdsDays: expect.arrayContaining([7]),
        retentionDays: expect.any(Number),
      });
    }
    expect(settingsInHistory(fixture('failed-invalid-input.json'))).toBeUndefined();
  });
});
