import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import { keyFromName } from '../../src/id/id.js';
import { ValueStore } from '../../src/store/value-store.js';
import { StoreStatus } from '../../src/wire/messages.js';

const key = keyFromName('hot');
const pub = (i: number): Uint8Array => keyFromName(`publisher-${i}`);
const val = (s: string): Uint8Array => new TextEncoder().encode(s);

function setup(opts = {}) {
  const clock = new ManualClock();
  const store = new ValueStore({ clock, random: new SeededRandom(1) }, opts);
  return { clock, store };
}

describe('ValueStore', () => {
  it('is full with l=4 values whose remaining TTL is at least half the new one', async () => {
    const { clock, store } = setup({ loadedStores: 1000 });
    for (let i = 0; i < 4; i++)
      expect(store.store(0, key, pub(i), val(`v${i}`), 100)).toBe(StoreStatus.ACCEPTED);
    expect(store.isFull(0, key, 100)).toBe(true);
    expect(store.store(0, key, pub(9), val('new'), 100)).toBe(StoreStatus.FULL);
    // A publisher already present may still replace its value when full.
    expect(store.isFull(0, key, 100, pub(2))).toBe(false);
    expect(store.store(0, key, pub(2), val('v2b'), 100)).toBe(StoreStatus.ACCEPTED);
    // A new value with a TTL more than twice the remaining TTLs is not blocked.
    expect(store.isFull(0, key, 300)).toBe(false);
    // At 49 s every value has 51 s left (≥ 50 s): still full. At 51 s, 49 s left: not full.
    await clock.advance(49_000);
    expect(store.isFull(0, key, 100)).toBe(true);
    await clock.advance(2_000);
    expect(store.isFull(0, key, 100)).toBe(false);
    expect(store.isFull(0, key, 90)).toBe(true);
    expect(store.store(0, key, pub(9), val('new'), 100)).toBe(StoreStatus.ACCEPTED);
  });

  it('is loaded after β=12 stores in a minute, then accepts about one per 5 s', async () => {
    const { clock, store } = setup({ fullValues: 1000 });
    let accepted = 0;
    for (let i = 0; i < 20; i++)
      if (store.store(0, key, pub(i), val('x'), 600) === StoreStatus.ACCEPTED) accepted++;
    expect(accepted).toBe(12);
    expect(store.isLoaded(0, key)).toBe(true);
    expect(store.store(0, key, pub(50), val('x'), 600)).toBe(StoreStatus.LOADED);
    await clock.advance(4_000);
    expect(store.isLoaded(0, key)).toBe(true);
    await clock.advance(1_000);
    expect(store.isLoaded(0, key)).toBe(false);
    expect(store.store(0, key, pub(51), val('x'), 600)).toBe(StoreStatus.ACCEPTED);
    expect(store.store(0, key, pub(52), val('x'), 600)).toBe(StoreStatus.LOADED);
    // Over the next minute, one store every 5 s gets in.
    let later = 0;
    for (let s = 0; s < 60; s++) {
      await clock.advance(1_000);
      if (store.store(0, key, pub(100 + s), val('x'), 600) === StoreStatus.ACCEPTED) later++;
    }
    expect(later).toBe(12);
    // Levels are separate: the same key at level 1 is not loaded.
    expect(store.isLoaded(1, key)).toBe(false);
  });

  it('replaces a publisher value and returns random subsets', () => {
    const { store } = setup();
    store.store(0, key, pub(1), val('old'), 60);
    store.store(0, key, pub(1), val('new'), 60);
    expect(store.get(0, key).map((v) => new TextDecoder().decode(v.value))).toEqual(['new']);
    expect(store.size).toBe(1);
    for (let i = 2; i < 10; i++) store.store(0, key, pub(i), val(`v${i}`), 60);
    expect(store.get(0, key, 4)).toHaveLength(4);
    expect(new Set(store.get(0, key, 4).map((v) => v.value)).size).toBe(4);
  });

  it('expires values and sweeps them', async () => {
    const { clock, store } = setup();
    const changes: string[] = [];
    store.onChange = (c) => changes.push(c.kind);
    store.store(0, key, pub(1), val('a'), 10);
    store.store(0, key, pub(2), val('b'), 20);
    await clock.advance(10_000);
    expect(store.get(0, key)).toHaveLength(1);
    expect(store.sweep()).toBe(1);
    expect(store.size).toBe(1);
    await clock.advance(10_000);
    expect(store.sweep()).toBe(1);
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
    expect(changes).toEqual(['put', 'put', 'delete', 'delete']);
  });

  it('caps values per key and total bytes', () => {
    const { store } = setup({
      maxValuesPerKey: 3,
      maxBytes: 1000,
      fullValues: 100,
      loadedStores: 100,
    });
    for (let i = 0; i < 3; i++)
      expect(store.store(0, key, pub(i), val('x'), 60)).toBe(StoreStatus.ACCEPTED);
    // A fourth value displaces the one expiring soonest only if it outlives it.
    expect(store.store(0, key, pub(3), val('x'), 30)).toBe(StoreStatus.LIMIT);
    expect(store.store(0, key, pub(3), val('x'), 120)).toBe(StoreStatus.ACCEPTED);
    expect(store.get(0, key)).toHaveLength(3);
    const other = keyFromName('other');
    expect(store.store(0, other, pub(1), new Uint8Array(500), 60)).toBe(StoreStatus.ACCEPTED);
    expect(store.store(0, other, pub(2), new Uint8Array(500), 60)).toBe(StoreStatus.LIMIT);
    expect(store.bytes).toBeLessThanOrEqual(1000);
  });
});
