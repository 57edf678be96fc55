import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import { keyFromName } from '../../src/id/id.js';
import { MAX_REGION_BYTES } from '../../src/store/arena.js';
import { ValueStore, type StoreChange } from '../../src/store/value-store.js';
import { StoreStatus } from '../../src/wire/messages.js';

const key = keyFromName('hot');
const pub = (i: number): Uint8Array => keyFromName(`publisher-${i}`);
const val = (s: string): Uint8Array => new TextEncoder().encode(s);

function setup(opts = {}, onChange?: (change: StoreChange) => void) {
  const clock = new ManualClock();
  const store = new ValueStore({ clock, random: new SeededRandom(1), onChange }, opts);
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
    const changes: string[] = [];
    const { clock, store } = setup({}, (c) => changes.push(c.kind));
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

describe('ValueStore: sources, copies, quotas', () => {
  const k = (i: number): Uint8Array => keyFromName(`k${i}`);

  it('a refused store creates no slot and no counter', () => {
    const { store } = setup({ maxValuesPerSource: 2 });
    expect(store.store(0, k(1), pub(1), val('a'), 60, { source: '10.0.0.1' })).toBe(
      StoreStatus.ACCEPTED,
    );
    expect(store.store(0, k(2), pub(1), val('b'), 60, { source: '10.0.0.1' })).toBe(
      StoreStatus.ACCEPTED,
    );
    const before = { keys: store.keyCount, requests: store.requests.size };
    for (let i = 3; i < 50; i++)
      expect(store.store(0, k(i), pub(1), val('x'), 60, { source: '10.0.0.1' })).toBe(
        StoreStatus.LIMIT,
      );
    expect({ keys: store.keyCount, requests: store.requests.size }).toEqual(before);
    expect(store.usage('10.0.0.1')).toEqual({ values: 2, bytes: 2 * (1 + 64) });
    expect(store.quotaRefused).toBe(47);
    // Other sources, and this node's own values, are not held back by that source.
    expect(store.store(0, k(3), pub(2), val('c'), 60, { source: '10.0.0.2' })).toBe(
      StoreStatus.ACCEPTED,
    );
    expect(store.store(0, k(4), pub(3), val('d'), 60)).toBe(StoreStatus.ACCEPTED);
  });

  it('caps a source by bytes, and replacing its own value does not count twice', () => {
    const { store } = setup({ maxBytesPerSource: 3 * (100 + 64) });
    const src = { source: '2001:db8::/64' };
    for (let i = 0; i < 3; i++)
      expect(store.store(0, k(i), pub(1), new Uint8Array(100), 60, src)).toBe(StoreStatus.ACCEPTED);
    expect(store.store(0, k(9), pub(1), new Uint8Array(100), 60, src)).toBe(StoreStatus.LIMIT);
    expect(store.store(0, k(0), pub(1), new Uint8Array(100), 60, src)).toBe(StoreStatus.ACCEPTED);
    expect(store.usage(src.source).values).toBe(3);
  });

  it('caps the total count of values', () => {
    const { store } = setup({ maxValues: 5 });
    for (let i = 0; i < 5; i++) expect(store.store(0, k(i), pub(i), val('v'), 60)).toBe(0);
    expect(store.store(0, k(9), pub(9), val('v'), 60)).toBe(StoreStatus.LIMIT);
    expect(store.size).toBe(5);
  });

  it('keeps copies apart: never replacing or displacing a first-hand value', () => {
    const { store } = setup({ maxValuesPerKey: 3, fullValues: 100, loadedStores: 100 });
    const copier = pub(7);
    expect(store.store(0, key, pub(1), val('original'), 60)).toBe(StoreStatus.ACCEPTED);
    // A copy claiming to be pub(1)'s value: its original is here, so it is not needed.
    expect(store.store(0, key, pub(1), val('forged'), 60, { copy: true, storedBy: copier })).toBe(
      StoreStatus.EXISTS,
    );
    expect(store.get(0, key).map((v) => new TextDecoder().decode(v.value))).toEqual(['original']);
    // A copy of another publisher's value is stored as a copy, by its copier.
    expect(store.store(0, key, pub(2), val('copy2'), 60, { copy: true, storedBy: copier })).toBe(
      StoreStatus.ACCEPTED,
    );
    expect(store.get(0, key).find((v) => v.copy)).toMatchObject({ storedBy: copier });
    // A copy cannot displace a first-hand value to make room.
    expect(store.store(0, key, pub(3), val('first'), 60)).toBe(StoreStatus.ACCEPTED);
    expect(store.store(0, key, pub(4), val('c4'), 600, { copy: true, storedBy: copier })).toBe(
      StoreStatus.ACCEPTED,
    ); // displaced the other copy (expiring sooner)
    expect(store.get(0, key).filter((v) => !v.copy)).toHaveLength(2);
    // When pub(4) stores first-hand, the copy of its value goes.
    expect(store.store(0, key, pub(4), val('real4'), 60)).toBe(StoreStatus.ACCEPTED);
    expect(store.get(0, key).some((v) => v.copy)).toBe(false);
  });

  it('counts only first-hand values toward full for a first-hand store', () => {
    const { store } = setup({ fullValues: 2, loadedStores: 100 });
    const copier = pub(9);
    store.store(0, key, pub(1), val('a'), 100, { copy: true, storedBy: copier });
    store.store(0, key, pub(2), val('b'), 100, { copy: true, storedBy: copier });
    expect(store.store(0, key, pub(3), val('c'), 100, { copy: true, storedBy: copier })).toBe(
      StoreStatus.FULL,
    );
    expect(store.store(0, key, pub(4), val('d'), 100)).toBe(StoreStatus.ACCEPTED);
  });

  it('restore applies the quotas again', () => {
    const { store, clock } = setup({ maxValuesPerSource: 2 });
    let n = 0;
    for (let i = 0; i < 10; i++) {
      const ok = store.restore({
        level: 0,
        key: k(i),
        publisher: pub(1),
        value: val('x'),
        expiresAt: clock.now() + 60_000,
        storedAt: clock.now(),
        source: 'legacy',
      });
      if (ok) n++;
    }
    expect(n).toBe(2);
  });
});

describe('ValueStore: memory (values held in store-owned bytes)', () => {
  it('keeps a copy of key and value, never a view into the buffer they came in', () => {
    const { store } = setup();
    // A datagram-like buffer: the key and value are views into it.
    const datagram = new Uint8Array(1200);
    const k = datagram.subarray(10, 30);
    k.set(keyFromName('in-a-datagram'));
    const v = datagram.subarray(100, 140);
    v.fill(7);
    expect(store.store(0, k, pub(1), v, 60)).toBe(StoreStatus.ACCEPTED);
    const [stored] = store.get(0, k);
    expect(stored!.value.buffer).not.toBe(datagram.buffer);
    expect(stored!.key.buffer).not.toBe(datagram.buffer);
    expect(stored!.publisher.buffer).not.toBe(pub(1).buffer);
    datagram.fill(0); // the buffer is reused for the next datagram
    expect([...stored!.value]).toEqual(Array.from({ length: 40 }, () => 7));
    expect(store.get(0, keyFromName('in-a-datagram'))).toHaveLength(1);
  });

  it('holds each publisher id once, however many values it published', () => {
    const { store } = setup();
    for (let i = 0; i < 50; i++) store.store(0, keyFromName(`k${i}`), pub(1), val(`v${i}`), 60);
    const ids = new Set(
      Array.from({ length: 50 }, (_, i) => store.get(0, keyFromName(`k${i}`))[0]!.publisher),
    );
    expect(ids.size).toBe(1);
    // A copy's copier is shared the same way, and replacing a value keeps one entry per publisher.
    store.store(0, keyFromName('k0'), pub(1), val('v0b'), 60);
    store.store(0, keyFromName('k0'), pub(2), val('c'), 60, { copy: true, storedBy: pub(3) });
    store.store(0, keyFromName('k1'), pub(2), val('c'), 60, { copy: true, storedBy: pub(3) });
    const copies = ['k0', 'k1'].map((n) => store.get(0, keyFromName(n)).find((x) => x.copy)!);
    expect(copies[0]!.storedBy).toBe(copies[1]!.storedBy);
    expect(store.get(0, keyFromName('k0'))).toHaveLength(2);
    expect(store.size).toBe(52);
  });

  it('counts accepted stores and requests per public slot key, gone with the slot', async () => {
    const { store, clock } = setup({ fullValues: 1 });
    const hot = keyFromName('hot-key');
    const name = ValueStore.slotKey(0, hot);
    expect(store.accepted.get(name)).toBeUndefined();
    store.store(0, hot, pub(1), val('a'), 60);
    store.store(0, hot, pub(2), val('b'), 60); // full: refused, but a request
    expect(store.accepted.get(name)).toBe(1);
    expect(store.requests.get(name)).toBe(2);
    expect(store.accepted.has(ValueStore.slotKey(1, hot))).toBe(false);
    expect(store.requests.size).toBe(1);
    await clock.advance(120_000);
    store.sweep();
    expect(store.accepted.get(name)).toBeUndefined();
    expect(store.requests.size).toBe(0);
  });

  it('reuses slots and records after a sweep, compacts its bytes, and keeps old views intact', async () => {
    const { store, clock } = setup({ loadedStores: 1000 });
    const k = (i: number) => keyFromName(`many-${i}`);
    // 3,000 keys at two levels: half with a short TTL.
    for (let i = 0; i < 3000; i++)
      expect(
        store.store(i % 2, k(i), pub(i % 7), val(`value-${i}`.repeat(4)), i % 2 ? 60 : 600),
      ).toBe(StoreStatus.ACCEPTED);
    const held = store.get(1, k(1))[0]!;
    const before = store.footprint;
    await clock.advance(120_000);
    expect(store.sweep()).toBe(1500);
    expect(store.keyCount).toBe(1500);
    // Half the arena was dead: compacted into fresh chunks. A view handed out earlier still
    // reads its bytes.
    expect(store.footprint.arenaUsed).toBeLessThan(before.arenaUsed / 2 + 4096);
    expect(new TextDecoder().decode(held.value)).toBe('value-1'.repeat(4));
    for (let i = 0; i < 3000; i++)
      expect(store.get(i % 2, k(i)).map((v) => new TextDecoder().decode(v.value))).toEqual(
        i % 2 ? [] : [`value-${i}`.repeat(4)],
      );
    // New keys take the freed slots and records: the arrays do not grow.
    for (let i = 3000; i < 4500; i++) store.store(1, k(i), pub(1), val(`new-${i}`), 600);
    expect(store.footprint.slots).toBe(before.slots);
    expect(store.footprint.records).toBe(before.records);
    for (let i = 3000; i < 4500; i++)
      expect(new TextDecoder().decode(store.get(1, k(i))[0]!.value)).toBe(`new-${i}`);
    expect(store.get(0, k(3000))).toEqual([]);
    expect(store.size).toBe(3000);
    expect(store.all()).toHaveLength(3000);
    expect(store.sources()).toEqual([]);
  });

  it('refuses a value larger than an arena chunk and creates nothing for it', () => {
    const { store } = setup({ maxBytes: 2 ** 30, maxBytesPerSource: 2 ** 30 });
    const big = new Uint8Array(MAX_REGION_BYTES + 1);
    expect(store.store(0, key, pub(1), big, 60)).toBe(StoreStatus.LIMIT);
    expect(store.size).toBe(0);
    expect(store.keyCount).toBe(0);
    expect(store.requests.size).toBe(0);
    expect(store.store(0, key, pub(1), big.subarray(1), 60)).toBe(StoreStatus.ACCEPTED);
    expect(store.get(0, key)[0]!.value.length).toBe(MAX_REGION_BYTES);
  });
});
