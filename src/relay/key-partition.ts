/**
 * The partition of a keyed message as Kafka's Java client and kafkajs's default partitioner choose it:
 * murmur2 of the key's UTF-8 bytes, made positive, modulo the topic's partition count. kafkajs computes
 * murmur2 with a 64-bit integer class and a fresh buffer per key, which was 1.4 s of the relay's CPU for
 * 300,000 rows (bench/REPORT.md, the relay); only the low 32 bits of its result are used, and `Math.imul`
 * gives exactly those. `test/unit/key-partition.test.ts` checks it against kafkajs's for random keys.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** A reused buffer for keys' UTF-8 bytes: an outbox key (255 characters at most) fits in it. */
const scratch = Buffer.allocUnsafe(1024);

/** murmur2 (Kafka's 32-bit variant) of `data`'s first `length` bytes, as a signed 32-bit integer. */
export function murmur2(data: Uint8Array, length = data.length): number {
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The Java original's fall-through switch on the trailing 1–3 bytes.
  const rest = length & 3;
  if (rest === 3) h ^= data[whole + 2] << 16;
  if (rest >= 2) h ^= data[whole + 1] << 8;
  if (rest >= 1) h = Math.imul(h ^ data[whole], M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * The partition, of `partitionCount`, that a message with this key goes to: the same one as kafkajs's
 * `Partitioners.DefaultPartitioner` and the Java client's default give it.
 */
export function partitionOfKey(key: string, partitionCount: number): number {
  // A write stops before a character that does not fit: 4 bytes to spare mean the whole key was written.
  const written = scratch.write(key, 0, 'utf8');
  const hash = written <= scratch.length - 4 ? murmur2(scratch, written) : murmur2(Buffer.from(key, 'utf8'));
  return (hash & 0x7fffffff) % partitionCount;
}
