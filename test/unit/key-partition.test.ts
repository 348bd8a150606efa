/**
 * The relay's own key partitioner (src/relay/key-partition.ts) must put every key where kafkajs's default
 * partitioner, and so the Java client, puts it: a consumer's per-key order depends on it.
 */
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { murmur2, partitionOfKey } from '../../src/relay/key-partition';
import { mulberry32 } from '../../scripts/faults/model';

function metadata(count: number): PartitionMetadata[] {
  return Array.from({ length: count }, (_, partitionId) => ({
    partitionErrorCode: 0,
    partitionId,
    leader: partitionId % 3,
    replicas: [0],
    isr: [0],
  }));
}

const kafkajs = Partitioners.DefaultPartitioner();
const kafkajsPartition = (key: string, count: number) =>
  kafkajs({ topic: 't', partitionMetadata: metadata(count), message: { key, value: null } });

/** Characters of every UTF-8 length: ASCII, two-byte, three-byte and astral (a surrogate pair). */
const ALPHABET = ['a', 'Z', '0', '-', ' ', 'é', 'ж', '€', '中', '😀', '\u0000', '\u007f', '\u0080', '\uffff'];

function randomKey(next: () => number): string {
  const length = Math.floor(next() * 300);
  let key = '';
  for (let i = 0; i < length; i += 1) key += ALPHABET[Math.floor(next() * ALPHABET.length)];
  return key;
}

describe('partitionOfKey', () => {
  it("gives the outbox's keys (owner ids) kafkajs's partition for every partition count up to 64", () => {
    for (const key of [
      '00000000-0000-0000-0000-000000000000',
      'b6f1d8e2-4c1a-4f0e-9a57-0d2f3c9e8a11',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
    ]) {
      for (let count = 1; count <= 64; count += 1)
        expect(partitionOfKey(key, count)).toBe(kafkajsPartition(key, count));
    }
  });

  it('gives random keys of every length and UTF-8 width kafkajs partition (property, seeded)', () => {
    const next = mulberry32(41);
    for (let i = 0; i < 3_000; i += 1) {
      const key = randomKey(next);
      const count = 1 + Math.floor(next() * 100);
      expect([key, partitionOfKey(key, count)]).toEqual([key, kafkajsPartition(key, count)]);
    }
  });

  it('hashes a key longer than its buffer the same way, and an empty key as kafkajs does', () => {
    const long = '中'.repeat(400);
    expect(partitionOfKey(long, 7)).toBe(kafkajsPartition(long, 7));
    expect(partitionOfKey('', 5)).toBe(kafkajsPartition('', 5));
  });
});

describe('murmur2', () => {
  it("matches the Java client's published values", () => {
    // Kafka's UtilsTest.testMurmur2: these inputs and their hashes come from the Java implementation.
    const cases: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ];
    for (const [input, hash] of cases) expect(murmur2(Buffer.from(input, 'utf8'))).toBe(hash);
  });
});
