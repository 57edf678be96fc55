import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { DnsChallengeError, InMemoryChallengeStore } from '../../src/index.js';

const V1 = 'LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0';
const V2 = '9Z2KTUUQ3sAvW4o2Nh8NbRHCPoQqqkf7tD7JNhLF4zE';

describe('InMemoryChallengeStore', () => {
  it('holds several values per zone, oldest first, until removed', () => {
    const store = new InMemoryChallengeStore({ clock: new ManualClock(0) });
    expect(store.txt('nyud.net')).toEqual([]);
    store.set('nyud.net', V1);
    store.set('NYUD.net.', V2); // zones are compared in canonical form
    expect(store.txt('nyud.net')).toEqual([V1, V2]);
    expect(store.txt('other.net')).toEqual([]);
    expect(store.remove('nyud.net', V1)).toBe(1);
    expect(store.txt('nyud.net')).toEqual([V2]);
    expect(store.remove('nyud.net', V1)).toBe(0);
    expect(store.remove('nyud.net')).toBe(1);
    expect(store.txt('nyud.net')).toEqual([]);
    expect(store.list()).toEqual([]);
  });

  it('values expire after their lifetime; setting again renews one', async () => {
    const clock = new ManualClock(1000);
    const store = new InMemoryChallengeStore({ clock }, { defaultTtlMs: 60_000 });
    store.set('nyud.net', V1);
    store.set('nyud.net', V2, { ttlMs: 5_000 });
    expect(store.list()).toEqual([
      { zone: 'nyud.net', value: V1, expiresAt: 61_000 },
      { zone: 'nyud.net', value: V2, expiresAt: 6_000 },
    ]);
    await clock.advance(5_000);
    expect(store.txt('nyud.net')).toEqual([V1]);
    await clock.advance(50_000);
    store.set('nyud.net', V1); // renewed at 56,000 → lives to 116,000
    await clock.advance(10_000);
    expect(store.txt('nyud.net')).toEqual([V1]);
    await clock.advance(50_000);
    expect(store.txt('nyud.net')).toEqual([]);
  });

  it('refuses bad zones, bad values, bad lifetimes and too many values with DNS_ERR_CHALLENGE', () => {
    const store = new InMemoryChallengeStore({ clock: new ManualClock(0) }, { maxPerZone: 2 });
    const bad: [() => unknown, RegExp][] = [
      [() => store.set('not a zone', V1), /not a DNS name/],
      [() => store.set('nyud.net', ''), /printable ASCII/],
      [() => store.set('nyud.net', 'a\nb'), /printable ASCII/],
      [() => store.set('nyud.net', 'é'), /printable ASCII/],
      [() => store.set('nyud.net', 'x'.repeat(256)), /printable ASCII/],
      [() => store.set('nyud.net', V1, { ttlMs: 0 }), /lifetime/],
      [() => store.set('nyud.net', V1, { ttlMs: 1.5 }), /lifetime/],
      [() => store.set('nyud.net', V1, { ttlMs: 25 * 3_600_000 }), /lifetime/],
      [() => new InMemoryChallengeStore({}, { maxPerZone: 0 }), /maxPerZone/],
    ];
    for (const [f, msg] of bad) {
      expect(f).toThrow(DnsChallengeError);
      expect(f).toThrow(msg);
    }
    store.set('nyud.net', V1);
    store.set('nyud.net', V2);
    store.set('nyud.net', V2); // a renewal is not one more
    expect(() => store.set('nyud.net', 'third')).toThrow(/already holds 2/);
    try {
      store.set('nyud.net', 'third');
    } catch (err) {
      expect((err as DnsChallengeError).code).toBe('DNS_ERR_CHALLENGE');
    }
    expect(store.set('x.nyud.net', 'third').zone).toBe('x.nyud.net'); // per zone
    expect(store.txt('nyud.net')).toEqual([V1, V2]);
  });
});
