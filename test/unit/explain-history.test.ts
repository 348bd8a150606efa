/**
 * What `explain` reads in a cycle's history (issue 30, item 1): the activities a run ended, with input and
 * result (or the failure that ended their retries), and what each says of one owner.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ownerOutcome } from '../../src/operations/explain-history';
import { endedActivities } from '../../src/temporal/histories';

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
