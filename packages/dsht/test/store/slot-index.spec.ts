import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { SlotIndex } from '../../src/store/slot-index.js';

/** Keys held by slot number, as the value store keeps them. */
function harness(seed?: number) {
  const keys: Array<{ level: number; key: Uint8Array } | undefined> = [];
  const same = (a: Uint8Array, b: Uint8Array) =>
    a.length === b.length && a.every((x, i) => x === b[i]);
  const index = new SlotIndex(
    {
      matches: (s, level, key) =>
        keys[s] !== undefined && keys[s].level === level && same(keys[s].key, key),
    },
    seed === undefined ? {} : { seed },
  );
  return { keys, index };
}

const key = (i: number): Uint8Array => {
  const k = new Uint8Array(20);
  new DataView(k.buffer).setUint32(16, i);
  return k;
};

describe('SlotIndex', () => {
  it('finds what was inserted, by level and key bytes, and nothing else', () => {
    const { keys, index } = harness(7);
    expect(index.find(0, key(1))).toBe(-1);
    keys[0] = { level: 0, key: key(1) };
    index.insert(0, key(1), 0);
    keys[1] = { level: 1, key: key(1) };
    index.insert(1, key(1), 1);
    expect(index.find(0, key(1))).toBe(0);
    expect(index.find(1, key(1))).toBe(1);
    expect(index.find(2, key(1))).toBe(-1);
    expect(index.find(0, key(2))).toBe(-1);
    // A copy of the key (another buffer) finds the same slot.
    expect(index.find(0, key(1).slice())).toBe(0);
    expect(index.size).toBe(2);
  });

  it('the hash depends on a per-table seed', () => {
    const a = harness(1).index;
    const b = harness(2).index;
    const differ = Array.from({ length: 32 }, (_, i) => a.hash(0, key(i)) !== b.hash(0, key(i)));
    expect(differ.filter(Boolean).length).toBeGreaterThan(30);
  });

  it('keeps every key reachable through collisions, deletions and growth (against a Map)', () => {
    // 3,000 random inserts and removals over 400 keys: the table grows from 64 buckets, runs of
    // colliding keys form at up to 3/4 load, and removals shift later entries back.
    const { keys, index } = harness(3);
    const model = new Map<number, number>();
    const rnd = new SeededRandom(11);
    let next = 0;
    let collisions = 0;
    const homes = new Set<number>();
    for (let step = 0; step < 3000; step++) {
      const k = rnd.int(400);
      const level = k % 3;
      if (model.has(k) && rnd.next() < 0.5) {
        const s = model.get(k)!;
        expect(index.remove(level, key(k))).toBe(s);
        keys[s] = undefined;
        model.delete(k);
      } else if (!model.has(k)) {
        const s = next++;
        keys[s] = { level, key: key(k) };
        const home = index.hash(level, key(k)) & (index.capacity - 1);
        if (homes.has(home)) collisions++;
        homes.add(home);
        index.insert(level, key(k), s);
        model.set(k, s);
      }
      if (step % 100 === 0)
        for (let j = 0; j < 400; j++) expect(index.find(j % 3, key(j))).toBe(model.get(j) ?? -1);
    }
    for (let j = 0; j < 400; j++) expect(index.find(j % 3, key(j))).toBe(model.get(j) ?? -1);
    expect(index.size).toBe(model.size);
    expect(collisions).toBeGreaterThan(100);
    expect(index.capacity).toBeGreaterThanOrEqual((model.size * 4) / 3);
    // Removing what is absent changes nothing.
    expect(index.remove(0, key(100_000))).toBe(-1);
    expect(index.size).toBe(model.size);
  });

  it('empties completely and is reusable', () => {
    const { keys, index } = harness();
    for (let i = 0; i < 200; i++) {
      keys[i] = { level: 0, key: key(i) };
      index.insert(0, key(i), i);
    }
    for (let i = 199; i >= 0; i -= 2) expect(index.remove(0, key(i))).toBe(i);
    for (let i = 0; i < 200; i += 2) expect(index.remove(0, key(i))).toBe(i);
    expect(index.size).toBe(0);
    for (let i = 0; i < 200; i++) expect(index.find(0, key(i))).toBe(-1);
    index.insert(0, key(5), 5);
    expect(index.find(0, key(5))).toBe(5);
  });
});
