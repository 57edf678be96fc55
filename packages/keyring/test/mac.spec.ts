import { describe, expect, it } from 'vitest';
import { KeyringError, mac, macKey, verifyMac } from '../src/index.js';

// RFC 4231 test case 1.
const KEY = new Uint8Array(20).fill(0x0b);
const DATA = 'Hi There';
const FULL = 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7';

describe('MAC helpers', () => {
  it('compute HMAC-SHA-256 truncated to the tag length (RFC 4231 vector)', () => {
    expect(Buffer.from(mac(KEY, [DATA], 32)).toString('hex')).toBe(FULL);
    expect(Buffer.from(mac(KEY, [DATA])).toString('hex')).toBe(FULL.slice(0, 32));
    // Parts are concatenated; a KeyObject gives the same tag as raw bytes.
    const enc = new TextEncoder();
    expect(mac(macKey(KEY), [enc.encode('Hi '), 'There'])).toEqual(mac(KEY, [DATA]));
  });

  it('verify accepts the tag and refuses tampering, a wrong key and bad lengths', () => {
    const tag = mac(KEY, [DATA]);
    expect(verifyMac(KEY, [DATA], tag)).toBe(true);
    expect(verifyMac(KEY, ['Hi there'], tag)).toBe(false);
    const flipped = new Uint8Array(tag);
    flipped[15]! ^= 1;
    expect(verifyMac(KEY, [DATA], flipped)).toBe(false);
    expect(verifyMac(new Uint8Array(20).fill(0x0c), [DATA], tag)).toBe(false);
    expect(verifyMac(KEY, [DATA], tag.subarray(0, 15))).toBe(false);
    expect(verifyMac(KEY, [DATA], new Uint8Array(33))).toBe(false);
    expect(() => mac(KEY, [DATA], 8)).toThrow(KeyringError);
  });
});
