/**
 * The relay's delivery rules (src/relay/deliver.ts) with a scripted Kafka: which rows are published,
 * rejected, failed or held, in which requests. The real broker's side is in test/integration/relay-poison.test.ts.
 */
import { KafkaJSNonRetriableError, KafkaJSProtocolError, type Kafka, type ProducerConfig } from 'kafkajs';
import { ConfigError, loadConfig } from '../../src/config';
import type { OutboxMessage } from '../../src/db/outbox';
import { contentRefusal, Deadline, deliver, SendTimeoutError, type SendGroups } from '../../src/relay/deliver';
import { TopicRefusedError } from '../../src/relay/refusals';
import { TOPIC } from '../../src/domain/names';
import { mulberry32 } from '../../scripts/faults/model';
import { LeaderMovedError, RelayProducer } from '../../src/relay/producer';
import type { LeaderGroup, PartitionGroup } from '../../src/relay/partitions';

function row(id: string, key = id): OutboxMessage {
  return {
    id,
    aggregate_type: 'Profile',
    aggregate_id: key,
    topic: 't',
    message_key: key,
    event_type: 'E',
    contract_version: 1,
    payload: '{}',
    correlation_id: 'c',
    attempts: 0,
    trace_context: null,
  };
}

/** What kafkajs throws for Kafka's error code 10 (its typings take only a message; the code passes more). */
const tooLarge = () =>
  new KafkaJSProtocolError({
    type: 'MESSAGE_TOO_LARGE',
    code: 10,
    retriable: false,
    message: 'The request included a message larger than the max message size the server will accept',
  } as unknown as Error);

/**
 * A single-broker Kafka as the protocol has it: a request is answered per partition; a partition holding
 * one of `poison` is refused whole, the others are appended, and a partition batch identical to the last
 * one appended (the idempotent producer's re-send) is acknowledged without being appended again.
 * `fail` can fail a request without a verdict instead.
 */
function scriptedKafka(poison: string[], fail?: (request: string[][]) => Error | undefined) {
  const requests: string[][][] = [];
  const log = new Map<number, string[]>();
  const lastBatch = new Map<number, string>();
  const send: SendGroups = async (groups) => {
    const request = groups.map((g) => g.rows.map((r) => r.id));
    requests.push(request);
    const error = fail?.(request);
    if (error) throw error;
    let refused = false;
    for (const group of groups) {
      const ids = group.rows.map((r) => r.id);
      if (ids.some((id) => poison.includes(id))) {
        refused = true;
        continue;
      }
      if (lastBatch.get(group.partition) === ids.join()) continue;
      lastBatch.set(group.partition, ids.join());
      log.set(group.partition, [...(log.get(group.partition) ?? []), ...ids]);
    }
    if (refused) throw tooLarge();
  };
  return { send, requests, appended: () => [...log.values()].flat() };
}

const group = (partition: number, rows: OutboxMessage[]): PartitionGroup => ({ topic: 't', partition, rows });
const broker = (...groups: PartitionGroup[]): LeaderGroup[] => [{ leader: 1, groups }];
const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
let deadline: Deadline;
beforeEach(() => (deadline = new Deadline(60_000, () => {})));
afterEach(() => deadline.clear());

test('one request per broker; all acknowledged, all published', async () => {
  const kafka = scriptedKafka([]);
  const out = await deliver(broker(group(0, [row('a'), row('b')]), group(1, [row('c')])), kafka.send, deadline);
  expect(ids(out.published).sort()).toEqual(['a', 'b', 'c']);
  expect(kafka.requests).toEqual([[['a', 'b'], ['c']]]);
  expect(out).toMatchObject({ rejected: [], failed: [] });
});

test.each([
  ['a small offset', '41', ['41', '42']],
  ['the last offsets exact as numbers', String(2 ** 53 - 2), [String(2 ** 53 - 2), String(2 ** 53 - 1)]],
  ['offsets past 2^53, exact only as BigInt', '9007199254740993', ['9007199254740993', '9007199254740994']],
])(
  'each published row is placed at its partition’s base offset plus its place in the request: %s',
  async (_, base, offsets) => {
    const send: SendGroups = async (groups) =>
      groups.map((g) => ({ topicName: g.topic, partition: g.partition, baseOffset: base }));
    const out = await deliver(broker(group(2, [row('a'), row('b')])), send, deadline);
    expect(Object.fromEntries(out.placements)).toEqual({
      a: { partition: 2, offset: offsets[0] },
      b: { partition: 2, offset: offsets[1] },
    });
  },
);

test('a refused request is sent again per partition, unchanged, and the refused partition is halved until the row is alone; nothing is appended twice', async () => {
  const kafka = scriptedKafka(['c']);
  const rows = ['a', 'b', 'c', 'd', 'e'].map((id) => row(id));
  const out = await deliver(broker(group(0, rows), group(1, [row('x'), row('y')])), kafka.send, deadline);
  expect(ids(out.published).sort()).toEqual(['a', 'b', 'd', 'e', 'x', 'y']);
  expect(out.rejected).toEqual([{ row: rows[2], error: expect.stringContaining('larger than the max message size') }]);
  expect(out.failed).toEqual([]);
  expect(kafka.requests).toEqual([
    [
      ['a', 'b', 'c', 'd', 'e'],
      ['x', 'y'],
    ],
    [['a', 'b', 'c', 'd', 'e']],
    [['x', 'y']],
    [['a', 'b', 'c']],
    [['a', 'b']],
    [['c']],
    [['d', 'e']],
  ]);
  expect(kafka.appended().sort()).toEqual(['a', 'b', 'd', 'e', 'x', 'y']);
});

test('a request of one partition, refused, is halved at once', async () => {
  const kafka = scriptedKafka(['b']);
  const out = await deliver(broker(group(0, [row('a'), row('b')])), kafka.send, deadline);
  expect(kafka.requests).toEqual([[['a', 'b']], [['a']], [['b']]]);
  expect(ids(out.published)).toEqual(['a']);
  expect(ids(out.rejected.map((r) => r.row))).toEqual(['b']);
});

test('the later rows of a refused row’s key are held: not sent again, nor rejected, nor failed', async () => {
  const kafka = scriptedKafka(['k1']);
  const rows = [row('k1', 'k'), row('o1', 'o'), row('k2', 'k'), row('o2', 'o')];
  const out = await deliver(broker(group(0, rows)), kafka.send, deadline);
  expect(ids(out.published)).toEqual(['o1', 'o2']);
  expect(ids(out.rejected.map((r) => r.row))).toEqual(['k1']);
  expect(out.failed).toEqual([]);
  // k2 was only in the first request, which Kafka refused whole.
  expect(kafka.requests).toEqual([[['k1', 'o1', 'k2', 'o2']], [['k1', 'o1']], [['k1']], [['o1']], [['o2']]]);
});

test('a failure without a verdict fails what is left of its request only, and never counts as a refusal', async () => {
  const unreachable = new KafkaJSNonRetriableError('Connection error: ECONNREFUSED');
  const kafka = scriptedKafka(['b'], (request) =>
    request.length === 1 && request[0][0] === 'a' ? unreachable : undefined,
  );
  const out = await deliver(
    [
      { leader: 1, groups: [group(0, [row('a'), row('b'), row('c')])] },
      { leader: 2, groups: [group(1, [row('x')])] },
    ],
    kafka.send,
    deadline,
  );
  expect(ids(out.published)).toEqual(['x']);
  expect(out.rejected).toEqual([]);
  expect(ids(out.failed)).toEqual(['a', 'b', 'c']);
  expect(out.error).toBe(unreachable);
});

test('a refusal when a partition had moved to another broker has no verdict: the request fails whole', async () => {
  const moved = new LeaderMovedError(tooLarge());
  const kafka = scriptedKafka([], () => moved);
  const out = await deliver(broker(group(0, [row('a')]), group(1, [row('b')])), kafka.send, deadline);
  expect(ids(out.failed)).toEqual(['a', 'b']);
  expect(out.error).toBe(moved);
  expect(kafka.requests).toHaveLength(1);
});

/** What kafkajs throws when Kafka refuses the producer's principal a topic (error code 29). */
const topicRefused = () =>
  new KafkaJSProtocolError({
    type: 'TOPIC_AUTHORIZATION_FAILED',
    code: 29,
    retriable: false,
    message: 'Not authorized to access topics: [Topic authorization failed]',
  } as unknown as Error);

/** A broker whose ACLs refuse the relay `refusedTopics`: a partition of one is refused, the others appended. */
function aclKafka(refusedTopics: string[]) {
  const requests: string[][][] = [];
  const send: SendGroups = async (groups) => {
    requests.push(groups.map((g) => g.rows.map((r) => r.id)));
    if (groups.some((g) => refusedTopics.includes(g.topic))) throw topicRefused();
  };
  return { send, requests };
}

test('a topic outside the relay’s ACLs refuses all its rows at once, without halving; the other partitions are published', async () => {
  const kafka = aclKafka(['other']);
  const other = [row('x'), row('y'), row('z')].map((r) => ({ ...r, topic: 'other' }));
  const out = await deliver(
    broker(group(0, [row('a'), row('b')]), { topic: 'other', partition: 0, rows: other }),
    kafka.send,
    deadline,
  );
  expect(ids(out.published)).toEqual(['a', 'b']);
  expect(out.rejected.map((r) => r.row.id)).toEqual(['x', 'y', 'z']);
  expect(out.rejected[0].error).toMatch(/Kafka refused topic other to the relay's user .*ACL/);
  expect(out.failed).toEqual([]);
  expect(kafka.requests).toEqual([
    [
      ['a', 'b'],
      ['x', 'y', 'z'],
    ],
    [['a', 'b']],
    [['x', 'y', 'z']],
  ]);
});

test('the job’s own topic refused by the ACLs is a failure, never a row’s fault: nothing is rejected', async () => {
  const kafka = aclKafka([TOPIC]);
  const rows = [row('a'), row('b')].map((r) => ({ ...r, topic: TOPIC }));
  const out = await deliver(broker({ topic: TOPIC, partition: 0, rows }), kafka.send, deadline);
  expect(out.rejected).toEqual([]);
  expect(ids(out.failed)).toEqual(['a', 'b']);
  expect(out.error).toBeInstanceOf(TopicRefusedError);
  expect(out.error?.message).toMatch(
    /grant the relay's user CREATE, DESCRIBE and WRITE on it \(ops\/kafka\/acls\.sh\)/,
  );
});

test('the deadline abandons first, then fails every send still waiting', async () => {
  const events: string[] = [];
  const short = new Deadline(50, () => events.push('abandoned'));
  const hanging: SendGroups = () => new Promise(() => {});
  const out = await deliver(
    [
      { leader: 1, groups: [group(0, [row('a')])] },
      { leader: 2, groups: [group(1, [row('b')])] },
    ],
    hanging,
    short,
  );
  events.push('returned');
  expect(events).toEqual(['abandoned', 'returned']);
  expect(ids(out.failed).sort()).toEqual(['a', 'b']);
  expect(out.error).toBeInstanceOf(SendTimeoutError);
});

test('only refusals for a request’s content count as a row’s fault', () => {
  const refusal = tooLarge();
  expect(contentRefusal(refusal)).toBe(refusal);
  // kafkajs's retrier wraps what it gives up on: new KafkaJSNonRetriableError(e, { cause: e }).
  const Wrapper = KafkaJSNonRetriableError as unknown as new (e: Error, m: { cause: Error }) => Error;
  expect(contentRefusal(new Wrapper(refusal, { cause: refusal }))).toBe(refusal);
  expect(contentRefusal(Object.assign(new Error('x'), { type: 'INVALID_RECORD' }))).toBeDefined();
  expect(contentRefusal(new LeaderMovedError(refusal))).toBeUndefined();
  for (const type of ['TOPIC_AUTHORIZATION_FAILED', 'NOT_LEADER_FOR_PARTITION', 'INVALID_TIMESTAMP', undefined]) {
    expect(contentRefusal(Object.assign(new Error('x'), { type }))).toBeUndefined();
  }
});

describe.each([
  ['RELAY_MAX_ATTEMPTS', 'maxAttempts', 10, 1000],
  ['RELAY_CONCURRENCY', 'concurrency', 3, 8],
] as const)('%s', (name, field, byDefault, max) => {
  test(`defaults to ${byDefault} and reads a whole number`, () => {
    expect(loadConfig({}).relay[field]).toBe(byDefault);
    expect(loadConfig({ [name]: '3' }).relay[field]).toBe(3);
  });

  test.each(['0', '-1', '2.5', 'ten', String(max + 1)])('refuses %s, naming the variable', (value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(`${name}="${value}": expected a whole number from 1 to ${max}`);
  });
});

// kafkajs' idempotent producer can lose messages when more sends are in flight at once than there are
// partitions (tulios/kafkajs#1005): two sends carrying one partition race for its sequence numbers. A
// lane's producer sends only what `deliver` hands it, so this runs random batches (partitions over one to
// three brokers, random keys, poison rows, slow answers) and watches every send in flight.
test('no partition is ever in two sends in flight at once, whatever the refusals: kafkajs#1005 cannot happen', async () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rand = mulberry32(seed);
    const partitions = 1 + Math.floor(rand() * 6);
    const brokers = 1 + Math.floor(rand() * Math.min(3, partitions));
    const rows = Array.from({ length: 1 + Math.floor(rand() * 40) }, (_, i) =>
      row(`r${i}`, `k${Math.floor(rand() * 8)}`),
    );
    const poison = rows.filter(() => rand() < 0.1).map((r) => r.id);
    const byPartition = new Map<number, OutboxMessage[]>();
    for (const r of rows) {
      const p = Number(r.message_key.slice(1)) % partitions;
      byPartition.set(p, [...(byPartition.get(p) ?? []), r]);
    }
    const leaders = new Map<number, PartitionGroup[]>();
    for (const [p, rs] of byPartition) leaders.set(p % brokers, [...(leaders.get(p % brokers) ?? []), group(p, rs)]);

    const inFlight = new Map<number, number>();
    let most = 0;
    const kafka = scriptedKafka(poison);
    const send: SendGroups = async (groups, leader) => {
      for (const g of groups) {
        const n = (inFlight.get(g.partition) ?? 0) + 1;
        inFlight.set(g.partition, n);
        if (n > 1) throw new Error(`seed ${seed}: partition ${g.partition} in two sends at once (leader ${leader})`);
      }
      most = Math.max(
        most,
        [...inFlight.values()].reduce((a, b) => a + b, 0),
      );
      try {
        await new Promise((resolve) => setTimeout(resolve, Math.floor(rand() * 3)));
        return await kafka.send(groups, leader);
      } finally {
        for (const g of groups) inFlight.set(g.partition, inFlight.get(g.partition)! - 1);
      }
    };
    const out = await deliver(
      [...leaders].map(([leader, groups]) => ({ leader, groups })),
      send,
      deadline,
    );
    expect(out.failed).toEqual([]);
    expect(most).toBeLessThanOrEqual(partitions);
    // Every row is published, rejected, or waits behind its key's rejected row; no row twice on the topic.
    const settled = new Set([...ids(out.published), ...out.rejected.map((r) => r.row.id)]);
    const heldKeys = new Set(out.rejected.map((r) => r.row.message_key));
    for (const r of rows) expect(settled.has(r.id) || heldKeys.has(r.message_key)).toBe(true);
    expect(new Set(kafka.appended()).size).toBe(kafka.appended().length);
  }
});

test("the relay's producer is idempotent with one request in flight per broker, so a partition's sends go one at a time", () => {
  let config: ProducerConfig | undefined;
  const client = {
    producer: (c: ProducerConfig) => {
      config = c;
      return {};
    },
  } as unknown as Kafka;
  new RelayProducer(() => client);
  expect(config).toEqual(expect.objectContaining({ idempotent: true, maxInFlightRequests: 1 }));
});

describe("the relay's producer sends each part's messages as built, naming their partition", () => {
  const fakeClient = (sendBatch: jest.Mock) =>
    ({ producer: () => ({ connect: async () => {}, sendBatch }) }) as unknown as Kafka;

  test('a message naming its part’s partition goes to kafkajs as it is, not a copy', async () => {
    const sendBatch = jest.fn(async () => []);
    const message = { key: 'k', value: 'v', partition: 1 };
    await new RelayProducer(() => fakeClient(sendBatch)).send([{ topic: 't', partition: 1, messages: [message] }], 0);
    expect(sendBatch).toHaveBeenCalledTimes(1);
    const [{ topicMessages }] = sendBatch.mock.calls[0] as unknown as [{ topicMessages: { messages: unknown[] }[] }];
    expect(topicMessages[0].messages[0]).toBe(message);
  });

  test('the mirror: a message naming another partition is refused before anything is sent', async () => {
    const sendBatch = jest.fn(async () => []);
    const producer = new RelayProducer(() => fakeClient(sendBatch));
    await expect(
      producer.send([{ topic: 't', partition: 1, messages: [{ key: 'k', value: 'v', partition: 2 }] }], 0),
    ).rejects.toThrow('a message of partition 1 names partition 2');
    expect(sendBatch).not.toHaveBeenCalled();
  });
});
