import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import {
  addressKey,
  addressString,
  commonPrefixLength,
  compareDistance,
  fromHex,
  keyFromName,
  logDistance,
  isIdOf,
  nodeIdFor,
  randomIdInBucket,
  toHex,
  xor,
} from '../../src/id/id.js';

const id = (hex: string): Uint8Array => fromHex(hex.padEnd(40, '0'));

describe('ids', () => {
  it('node id is SHA-1 of ip:port and keys are SHA-1 of names (fixed vectors)', () => {
    expect(toHex(keyFromName('abc'))).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(toHex(nodeIdFor('127.0.0.1', 8091))).toBe(toHex(keyFromName('127.0.0.1:8091')));
    expect(toHex(nodeIdFor('::1', 8091))).toBe(toHex(keyFromName('[::1]:8091')));
  });

  it('xor distance and comparison are big-endian unsigned', () => {
    const t = id('00');
    expect(compareDistance(id('01'), id('80'), t)).toBeLessThan(0);
    expect(compareDistance(id('80'), id('7f'), t)).toBeGreaterThan(0);
    expect(compareDistance(id('42'), id('42'), t)).toBe(0);
    expect(toHex(xor(id('ff'), id('0f')))).toBe('f0'.padEnd(40, '0'));
  });

  it('common prefix length and log distance', () => {
    expect(commonPrefixLength(id('00'), id('80'))).toBe(0);
    expect(commonPrefixLength(id('00'), id('01'))).toBe(7);
    expect(commonPrefixLength(id('ab'), id('ab'))).toBe(160);
    expect(logDistance(id('00'), id('80'))).toBeCloseTo(159, 5);
    expect(logDistance(id('00'), id('c0'))).toBeCloseTo(159 + Math.log2(1.5), 5);
    expect(logDistance(id('00'), id('00'))).toBe(-Infinity);
  });

  it('randomIdInBucket lands in the asked bucket', () => {
    const rng = new SeededRandom(3);
    const self = keyFromName('self');
    for (const b of [0, 1, 7, 8, 30, 159]) {
      expect(commonPrefixLength(self, randomIdInBucket(self, b, rng))).toBe(b);
    }
  });

  it('rejects malformed hex', () => {
    expect(() => fromHex('xyz')).toThrow(
      expect.objectContaining({ code: 'DSHT_ERR_INVALID_ARGUMENT' }),
    );
  });
});

describe('addressKey', () => {
  it('is addressString, for addresses verified before or not', () => {
    for (const [ip, port] of [
      ['10.77.0.1', 4000],
      ['2001:db8::77', 4001],
    ] as const) {
      expect(addressKey(ip, port)).toBe(addressString(ip, port));
      expect(isIdOf(nodeIdFor(ip, port), ip, port)).toBe(true);
      expect(addressKey(ip, port)).toBe(addressString(ip, port));
      expect(addressKey(ip, port + 1)).toBe(addressString(ip, port + 1));
    }
  });
});
