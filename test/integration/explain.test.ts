/**
 * `explain` (issue 30, item 1) on the real stack: the seed's world, a cycle run through Temporal and the
 * relay, then one investor explained — each verdict, the markers with the cycle that wrote them, what the
 * next cycle would send, and the outbox rows.
 */
import crypto from 'node:crypto';
import { explainCommand, explanationText, type Explanation } from '../../src/operations/explain';
import { addDays } from '../../src/domain/dates';
import { insertDocuments } from '../support/data';
import { testConfig } from '../support/stack';
import { useIntegration } from '../support/harness';
import { stackBrokers, testRelay } from '../support/relay';
import { waitFor } from '../support/wait';

const AS_OF_DATE = '2026-09-02';
const stack = useIntegration('explain', { worker: 'file', relayPoolSize: 2 });

const explain = (target: { ownerUserId: string } | { documentId: string }, asOfDate = AS_OF_DATE) =>
  explainCommand(testConfig({ DATABASE_URL: stack.db.workerUrl, RELAY_DATABASE_URL: stack.db.relayUrl }), target, {
    asOfDate,
  });

const verdicts = (e: Explanation) => Object.fromEntries(e.documents.map((d) => [d.numberMask, [d.verdict, d.why]]));

test('one investor explained: every verdict, the cycle that reminded, the next cycle and the outbox', async () => {
  const owner = crypto.randomUUID();
  await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owner, numberMask: 'due-7', daysLeft: 5 },
    { ownerUserId: owner, numberMask: 'far', daysLeft: 45 },
    { ownerUserId: owner, numberMask: 'archived', daysLeft: 3, status: 'Archived' },
    { ownerUserId: owner, numberMask: 'deleted', daysLeft: 3, isDeleted: true },
    { ownerUserId: owner, numberMask: 'never', daysLeft: null },
    { ownerUserId: owner, numberMask: 'long-expired', daysLeft: -400 },
  ]);
  const before = await explain({ ownerUserId: owner });
  expect(before.documents.find((d) => d.numberMask === 'due-7')).toMatchObject({
    verdict: 'due',
    daysLeft: 5,
    currentThreshold: 7,
    thresholdsCrossed: [30, 7],
    why: 'due: the next cycle as of 2026-09-02 reminds it at 7 days (5 days left)',
  });
  expect(before.nextCycle).toEqual([expect.objectContaining({ thresholdDays: 7, daysLeft: 5 })]);

  const result = await stack.cycle({ asOf: AS_OF_DATE });
  expect(result.remindersSent).toBe(1);

  const after = await explain({ ownerUserId: owner });
  const reminded = after.documents.find((d) => d.numberMask === 'due-7')!;
  expect(reminded.verdict).toBe('reminded');
  expect(reminded.why).toMatch(
    /^reminded at 7 days on 2026-09-02 by run [0-9a-f-]{36}; the next reminder is at 1 day$/,
  );
  expect(reminded.markers.map((m) => m.thresholdDays)).toEqual([30, 7]);
  expect(reminded.remindedBy).toEqual([{ workflowId: expect.any(String), eventId: expect.any(String) }]);
  expect(verdicts(after)).toMatchObject({
    far: ['not-due', 'not due: expires in 45 days, and the first threshold is 30 days'],
    archived: ['inactive', 'inactive (Archived): only active documents are reminded'],
    deleted: ['deleted', 'deleted: a deleted document is never reminded'],
    never: ['no-expiry', 'no expiry date: never reminded'],
    'long-expired': [
      'past-retention',
      'expired 400 days before 2026-09-02, more than the retention of 90 days: no longer reminded',
    ],
  });
  expect(after.nextCycle).toEqual([]);
  expect(after.events).toEqual([
    expect.objectContaining({
      eventId: reminded.remindedBy![0].eventId,
      correlationId: reminded.remindedBy![0].workflowId,
      publishedAt: null,
      documents: [{ documentId: reminded.documentId, thresholdDays: 7 }],
    }),
  ]);
  const text = explanationText(after);
  expect(text).toContain(`Owner ${owner}, as of 2026-09-02`);
  expect(text).toContain('The next cycle as of this day sends this owner nothing.');
  expect(text).toContain('waiting to be published');

  // Once the relay published it, the event says where: the partition and offset a consumer finds it at.
  const relay = testRelay({ pool: stack.relayPool, url: stack.db.relayUrl, brokers: stackBrokers() });
  await relay.start();
  let published: Explanation;
  try {
    await waitFor(async () => {
      published = await explain({ ownerUserId: owner });
      return Array.isArray(published.events) && published.events[0]?.publishedAt !== null;
    }, 30_000);
  } finally {
    await relay.stop();
  }
  expect(published!.events).toEqual([
    expect.objectContaining({ kafka: { partition: expect.any(Number), offset: expect.stringMatching(/^\d+$/) } }),
  ]);
  expect(explanationText(published!)).toMatch(/published \S+ to partition \d+ at offset \d+/);

  // Two days later the document crossed 1 day: due again, at 1.
  const later = await explain({ documentId: reminded.documentId }, addDays(AS_OF_DATE, 4));
  expect(later.documents.map((d) => [d.numberMask, d.verdict, d.currentThreshold])).toEqual([['due-7', 'due', 1]]);
});

test('an owner past the prune cutoff is not reminded again, and explain says why', async () => {
  const owner = crypto.randomUUID();
  const [doc] = await insertDocuments(stack.db.admin, AS_OF_DATE, [
    { ownerUserId: owner, numberMask: 'old', daysLeft: -20 },
  ]);
  await stack.db.admin.query(
    `insert into profile.document_expiry_reminder_prune_cutoff (singleton, cutoff) values (true, $1::date)`,
    [addDays(AS_OF_DATE, -10)],
  );
  const e = await explain({ documentId: doc.id });
  expect(e.documents).toEqual([
    expect.objectContaining({
      verdict: 'pruned',
      why: 'expired before the prune cutoff 2026-08-23: its markers may be pruned, and no cycle, of any day, reads below the cutoff, so it is not reminded again',
    }),
  ]);
  expect(e.nextCycle).toEqual([]);
});

test('an unknown owner has no documents; an unknown document says so', async () => {
  const nobody = await explain({ ownerUserId: crypto.randomUUID() });
  expect(nobody.documents).toEqual([]);
  expect(explanationText(nobody)).toContain('No documents found for this owner.');
  const none = await explain({ documentId: crypto.randomUUID() });
  expect(none.ownerUserId).toBeNull();
  expect(explanationText(none)).toBe('No such document.\n');
});
