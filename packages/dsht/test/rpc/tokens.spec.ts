import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { TOKEN_BYTES } from '../../src/constants.js';
import { PeerTokens, WriteTokens } from '../../src/rpc/tokens.js';

describe('write tokens', () => {
  it('are bound to the exact ip:port and valid for one to two rotation periods', async () => {
    const clock = new ManualClock(0);
    const t = new WriteTokens({ clock }, { rotateMs: 1000 });
    const a = t.issue('10.0.0.1:4000');
    expect(a).toHaveLength(TOKEN_BYTES);
    expect(t.check('10.0.0.1:4000', a)).toBe(true);
    expect(t.check('10.0.0.1:4001', a)).toBe(false);
    expect(t.check('10.0.0.2:4000', a)).toBe(false);
    expect(t.check('10.0.0.1:4000', a.subarray(0, 4))).toBe(false);
    const flipped = a.slice();
    flipped[0]! ^= 1;
    expect(t.check('10.0.0.1:4000', flipped)).toBe(false);
    await clock.advance(1000); // next period: the previous secret still verifies
    expect(t.check('10.0.0.1:4000', a)).toBe(true);
    expect(t.issue('10.0.0.1:4000')).not.toEqual(a);
    await clock.advance(1000); // two periods on: gone
    expect(t.check('10.0.0.1:4000', a)).toBe(false);
    // Another node's secret is unrelated.
    const other = new WriteTokens({ clock }, { rotateMs: 1000 });
    expect(other.check('10.0.0.1:4000', t.issue('10.0.0.1:4000'))).toBe(false);
  });

  it('a peer token is relied on only while young, and remembers whether a request used it', async () => {
    const clock = new ManualClock(0);
    const p = new PeerTokens({ clock }, { maxAgeMs: 1000 });
    const tok = new Uint8Array(8).fill(1);
    p.set('10.0.0.1:4000', tok);
    expect(p.used('10.0.0.1:4000')).toBe(false);
    expect(p.take('10.0.0.1:4000')).toEqual(tok);
    expect(p.used('10.0.0.1:4000')).toBe(true);
    await clock.advance(1000);
    expect(p.get('10.0.0.1:4000')).toBeUndefined();
  });

  it('peer tokens are bounded: the peer whose token came first is forgotten; a new token replaces the old', () => {
    const clock = new ManualClock(0);
    const p = new PeerTokens({ clock }, { maxAgeMs: 60_000, maxEntries: 100 });
    for (let i = 0; i < 250; i++)
      p.set(`10.0.${i >> 8}.${i & 255}:4000`, new Uint8Array(8).fill(i));
    expect(p.size).toBe(100);
    expect(p.has('10.0.0.149:4000')).toBe(false);
    expect(p.get('10.0.0.150:4000')).toEqual(new Uint8Array(8).fill(150));
    expect(p.get('10.0.0.249:4000')).toEqual(new Uint8Array(8).fill(249));
    // A peer that renews its token keeps its slot; a different token (even another length) replaces it.
    p.take('10.0.0.200:4000');
    p.set('10.0.0.200:4000', new Uint8Array([9, 9, 9]));
    expect(p.used('10.0.0.200:4000')).toBe(false);
    expect(p.get('10.0.0.200:4000')).toEqual(new Uint8Array([9, 9, 9]));
    // What it returns is a copy: changing it changes nothing held.
    p.get('10.0.0.201:4000')!.fill(0);
    expect(p.get('10.0.0.201:4000')).toEqual(new Uint8Array(8).fill(201));
    // Empty or oversized tokens are not kept.
    p.set('10.0.9.9:4000', new Uint8Array(0));
    p.set('10.0.9.9:4000', new Uint8Array(17));
    expect(p.has('10.0.9.9:4000')).toBe(false);
    expect(p.size).toBe(100);
  });
});
