import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { KeyringError, ReplayGuard } from '../src/index.js';

describe('ReplayGuard', () => {
  it('accepts a fresh nonce once, refuses repeats and timestamps outside the window', async () => {
    const clock = new ManualClock(1_000_000);
    const g = new ReplayGuard({ clock }, { windowMs: 60_000 });
    expect(g.check(1_000_000, 'a')).toBe('ok');
    expect(g.check(1_000_000, 'a')).toBe('replayed');
    expect(g.check(1_000_000 - 60_000, 'b')).toBe('ok'); // edge of the window, both sides
    expect(g.check(1_000_000 + 60_000, 'c')).toBe('ok');
    expect(g.check(1_000_000 - 60_001, 'd')).toBe('stale');
    expect(g.check(1_000_000 + 60_001, 'e')).toBe('stale');
    expect(g.check(Number.NaN, 'f')).toBe('stale');
    await clock.advance(61_000);
    // The replayed message is now outside the window: stale, still never accepted.
    expect(g.check(1_000_000, 'a')).toBe('stale');
    expect(g.check(clock.now(), new Uint8Array([1, 2, 3]))).toBe('ok');
    expect(g.check(clock.now(), new Uint8Array([1, 2, 3]))).toBe('replayed');
  });

  it('stays bounded under a flood and raises a floor so a forgotten nonce cannot be replayed', async () => {
    const clock = new ManualClock(5_000_000);
    const g = new ReplayGuard({ clock }, { windowMs: 60_000, maxNonces: 100 });
    const t0 = clock.now() - 30_000;
    expect(g.check(t0, 'first')).toBe('ok');
    const sent: number[] = [];
    for (let i = 0; i < 1000; i++) {
      await clock.advance(1);
      sent.push(clock.now());
      expect(g.check(clock.now(), `n${i}`)).toBe('ok');
    }
    expect(g.size).toBeLessThanOrEqual(100);
    expect(g.floor).toBeGreaterThanOrEqual(t0);
    expect(g.check(t0, 'first')).toBe('stale');
    // Every nonce accepted within the window is still refused on a second try.
    for (let i = 0; i < 1000; i++) expect(g.check(sent[i]!, `n${i}`)).not.toBe('ok');
    // Fresh messages are still accepted.
    expect(g.check(clock.now(), 'fresh')).toBe('ok');
  });

  it('forgets nonces that left the window without raising the floor', async () => {
    const clock = new ManualClock(0);
    const g = new ReplayGuard({ clock }, { windowMs: 1_000 });
    for (let i = 0; i < 100; i++) g.check(0, `x${i}`);
    await clock.advance(5_000);
    // Expired nonces are swept in batches as new ones arrive.
    for (let i = 0; i < 100; i++) g.check(5_000, `y${i}`);
    expect(g.size).toBe(100);
    expect(g.floor).toBe(-Infinity);
  });

  it('holds 8-byte nonces in the ring: replays refused, bounded under a flood, floor raised', async () => {
    const clock = new ManualClock(5_000_000);
    const g = new ReplayGuard({ clock }, { windowMs: 60_000, maxNonces: 100 });
    const nonce = (i: number): Uint8Array => {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setUint32(0, Math.imul(i, 2654435761) >>> 0);
      new DataView(b.buffer).setUint32(4, i);
      return b;
    };
    const t0 = clock.now() - 30_000;
    expect(g.check(t0, nonce(-1))).toBe('ok');
    expect(g.check(t0, nonce(-1))).toBe('replayed');
    const sent: number[] = [];
    for (let i = 0; i < 1000; i++) {
      await clock.advance(1);
      sent.push(clock.now());
      expect(g.check(clock.now(), nonce(i))).toBe('ok');
      expect(g.size).toBeLessThanOrEqual(100);
    }
    expect(g.floor).toBeGreaterThanOrEqual(t0);
    expect(g.check(t0, nonce(-1))).toBe('stale');
    for (let i = 0; i < 1000; i++) expect(g.check(sent[i]!, nonce(i))).not.toBe('ok');
    // The last 100 are still remembered as such (not merely behind the floor).
    for (let i = 900; i < 1000; i++) expect(g.check(clock.now(), nonce(i))).toBe('replayed');
    // A string nonce with the same 8 characters is another nonce; both kinds share the bound.
    expect(g.check(clock.now(), 'abcdefgh')).toBe('ok');
    expect(g.check(clock.now(), new TextEncoder().encode('abcdefgh'))).toBe('ok');
    expect(g.size).toBe(100);
  });

  it('forgets 8-byte nonces that left the window, and the ring stays consistent', async () => {
    const clock = new ManualClock(0);
    const g = new ReplayGuard({ clock }, { windowMs: 1_000 });
    const b = (i: number): Uint8Array => new Uint8Array([i >> 8, i & 255, 0, 0, 0, 0, i & 7, 1]);
    for (let i = 0; i < 500; i++) expect(g.check(0, b(i))).toBe('ok');
    await clock.advance(5_000);
    for (let i = 0; i < 500; i++) expect(g.check(5_000, b(i + 1000))).toBe('ok');
    expect(g.size).toBe(500);
    expect(g.floor).toBe(-Infinity);
    for (let i = 0; i < 500; i++) expect(g.check(5_000, b(i + 1000))).toBe('replayed');
    // Forgotten (expired) ones read as new again only within a fresh timestamp's window check.
    for (let i = 0; i < 500; i++) expect(g.check(5_000, b(i))).toBe('ok');
  });

  it('refuses bad options', () => {
    expect(() => new ReplayGuard({}, { windowMs: 0 })).toThrow(KeyringError);
    expect(() => new ReplayGuard({}, { maxNonces: 0.5 })).toThrow(KeyringError);
  });
});
