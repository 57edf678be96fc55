// Response bodies the benches serve: the same bytes for a given size in every process (origin,
// plain baseline, clients checking what they got), with no repeating short pattern.
import { createHash } from 'node:crypto';

/** `bytes` bytes of a fixed pseudo-random sequence (xorshift32, seed 1). */
export function bodyFor(bytes) {
  const b = Buffer.allocUnsafe(bytes);
  let x = 1;
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

/** Lowercase hex SHA-256 of a buffer. */
export function sha256(buf) {
  return createHash('sha256').update(buf).digest('hex');
}
