import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import {
  decodeHolder,
  encodeHolder,
  MAX_HOLDER_RECORD_BYTES,
  type HolderRecord,
} from '../../src/adapters/holder-codec.js';

const id = 'ab'.repeat(20);
const full: HolderRecord = {
  nodeId: id,
  ip: '2001:db8::1234:5678:9abc',
  httpPort: 8090,
  state: 'complete',
  at: 1_790_000_000_123,
  size: 123_456_789,
  sha256: 'cd'.repeat(32),
};
const packr = new Packr({ useRecords: false });

describe('holder codec', () => {
  it('round-trips every state, with and without size and digest, well under 512 bytes', () => {
    const cases: HolderRecord[] = [
      full,
      { nodeId: id, ip: '127.0.0.11', httpPort: 1, state: 'fetching', at: 0 },
      { nodeId: id, ip: '127.0.0.11', httpPort: 65535, state: 'withdrawn', at: 5 },
      { nodeId: id, ip: '10.1.2.3', httpPort: 80, state: 'complete', at: 7, size: 0 },
    ];
    for (const c of cases) {
      const bytes = encodeHolder(c);
      expect(bytes.length).toBeLessThan(128);
      expect(bytes.length).toBeLessThan(MAX_HOLDER_RECORD_BYTES);
      expect(decodeHolder(bytes)).toEqual(c);
    }
  });

  it('matches a fixed vector', () => {
    const bytes = encodeHolder({
      nodeId: id,
      ip: '127.0.0.1',
      httpPort: 8090,
      state: 'fetching',
      at: 1,
    });
    expect(Buffer.from(bytes).toString('hex')).toBe(
      '9601c414' + 'ab'.repeat(20) + 'a93132372e302e302e31cd1f9a0001',
    );
  });

  it('rejects wrongly typed, out-of-range, truncated and random values with a stable code', () => {
    const bad: unknown[] = [
      [2, Buffer.alloc(20), '127.0.0.1', 80, 0, 1],
      [1, Buffer.alloc(19), '127.0.0.1', 80, 0, 1],
      [1, Buffer.alloc(20), 'localhost', 80, 0, 1],
      [1, Buffer.alloc(20), '127.0.0.1', 0, 0, 1],
      [1, Buffer.alloc(20), '127.0.0.1', 70000, 0, 1],
      [1, Buffer.alloc(20), '127.0.0.1', 80, 3, 1],
      [1, Buffer.alloc(20), '127.0.0.1', 80, 0, -1],
      [1, Buffer.alloc(20), '127.0.0.1', 80, 1, 1, 'big'],
      [1, Buffer.alloc(20), '127.0.0.1', 80, 1, 1, 5, Buffer.alloc(31)],
      [1, Buffer.alloc(20), '127.0.0.1', 80],
      { nodeId: id },
      'a string',
    ];
    for (const value of bad) {
      expect(() => decodeHolder(packr.pack(value))).toThrow(
        expect.objectContaining({ code: 'CORAL_ERR_HOLDER_INVALID' }),
      );
    }
    const good = encodeHolder(full);
    for (let n = 0; n < good.length; n++) {
      expect(() => decodeHolder(good.subarray(0, n))).toThrow(
        expect.objectContaining({ code: 'CORAL_ERR_HOLDER_INVALID' }),
      );
    }
    const rng = new SeededRandom(7);
    for (let i = 0; i < 2000; i++) {
      const bytes = rng.bytes(new Uint8Array(1 + rng.int(80)));
      try {
        const r = decodeHolder(bytes);
        // A random value that happens to decode must still satisfy every rule.
        expect(r.nodeId).toMatch(/^[0-9a-f]{40}$/);
      } catch (err) {
        expect((err as { code?: string }).code).toBe('CORAL_ERR_HOLDER_INVALID');
      }
    }
    expect(() => decodeHolder(new Uint8Array(600))).toThrow(/600 bytes/);
  });
});
