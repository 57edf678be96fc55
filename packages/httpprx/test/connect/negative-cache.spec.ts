import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';

import { DEFAULT_NEGATIVE_TTL_MS, NegativeCache } from '../../src/connect/index.js';

describe('NegativeCache', () => {
  it('remembers a failure until its TTL runs out on the injected clock', async () => {
    const clock = new ManualClock(100);
    const nc = new NegativeCache<Error>({ clock }, {});
    expect(nc.ttlMs).toBe(DEFAULT_NEGATIVE_TTL_MS);
    const e = new Error('boom');
    nc.set('origin.test:80', e);
    expect(nc.get('origin.test:80')).toEqual({ error: e, expiresAt: 5_100, retryAfterMs: 5_000 });
    await clock.advance(4_999);
    expect(nc.get('origin.test:80')?.retryAfterMs).toBe(1);
    await clock.advance(1);
    expect(nc.get('origin.test:80')).toBeUndefined();
    expect(nc.size).toBe(0);
  });

  it('takes a per-entry TTL, replaces entries, deletes and clears', async () => {
    const clock = new ManualClock();
    const nc = new NegativeCache<string>({ clock }, { ttlMs: 1_000 });
    nc.set('a', 'x', 10);
    nc.set('a', 'y');
    expect(nc.get('a')).toMatchObject({ error: 'y', retryAfterMs: 1_000 });
    nc.set('b', 'z', 0); // a zero TTL stores nothing
    expect(nc.get('b')).toBeUndefined();
    expect(nc.delete('a')).toBe(true);
    nc.set('c', 'w');
    nc.clear();
    expect(nc.size).toBe(0);
  });

  it('is bounded: the oldest key is dropped first', () => {
    const nc = new NegativeCache<number>({ clock: new ManualClock() }, { maxEntries: 2 });
    nc.set('a', 1);
    nc.set('b', 2);
    nc.set('c', 3);
    expect(nc.get('a')).toBeUndefined();
    expect(nc.get('b')?.error).toBe(2);
    expect(nc.get('c')?.error).toBe(3);
  });

  it('rejects nonsense options', () => {
    expect(() => new NegativeCache({}, { ttlMs: -1 })).toThrow(RangeError);
    expect(() => new NegativeCache({}, { ttlMs: Number.NaN })).toThrow(RangeError);
    expect(() => new NegativeCache({}, { maxEntries: 1.5 })).toThrow(RangeError);
  });
});
