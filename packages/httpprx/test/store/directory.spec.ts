import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { Directory, KEY_BYTES, PRIMARY_BYTES } from '../../src/store/directory.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function keyOf(primary: Uint8Array, variant: number): Uint8Array {
  const k = new Uint8Array(KEY_BYTES);
  k.set(primary);
  k[PRIMARY_BYTES] = variant;
  return k;
}

describe('Directory (compact slots, binary keys, LRU)', () => {
  it('matches a reference model through 20,000 random inserts, removals and touches', () => {
    const rnd = new SeededRandom(12);
    const dir = new Directory(4);
    // Few distinct urlKeys with colliding first bytes, so probes and chains are exercised.
    const primaries = Array.from({ length: 300 }, (_, i) => {
      const p = rnd.bytes(new Uint8Array(PRIMARY_BYTES));
      if (i % 3 === 0) p.set([7, 7, 0, 0]); // same hash bucket
      return p;
    });
    const model = new Map<string, { size: number; file: number }>(); // insertion order = LRU
    let file = 0;
    for (let step = 0; step < 20_000; step++) {
      const p = primaries[rnd.int(primaries.length)]!;
      const key = keyOf(p, rnd.int(3));
      const k = hex(key);
      const op = rnd.int(10);
      const slot = dir.find(key);
      expect(slot !== -1, `step ${step}`).toBe(model.has(k));
      if (op < 5) {
        if (slot !== -1) dir.remove(slot);
        model.delete(k);
        const info = {
          size: rnd.int(1000),
          file: ++file,
          freshUntil: step * 1000,
        };
        dir.insert(key, info);
        model.set(k, { size: info.size, file: info.file });
      } else if (op < 8) {
        if (slot !== -1) {
          dir.remove(slot);
          model.delete(k);
        }
      } else if (slot !== -1) {
        dir.touch(slot);
        const v = model.get(k)!;
        model.delete(k);
        model.set(k, v);
      }
    }
    expect(dir.count).toBe(model.size);
    expect(dir.bytes).toBe([...model.values()].reduce((a, v) => a + v.size, 0));
    // LRU order, oldest first, is the model's insertion order.
    expect([...dir.slots()].map((s) => hex(dir.key(s)))).toEqual([...model.keys()]);
    for (const [k, v] of model) {
      const s = dir.find(Buffer.from(k, 'hex'));
      expect(dir.size(s)).toBe(v.size);
      expect(dir.file(s)).toBe(v.file);
    }
    // Variants of one URL are all reachable from its first slot.
    const byPrimary = new Map<string, number>();
    for (const k of model.keys())
      byPrimary.set(k.slice(0, 40), (byPrimary.get(k.slice(0, 40)) ?? 0) + 1);
    expect(dir.primaries).toBe(byPrimary.size);
    for (const [p, n] of byPrimary) {
      let seen = 0;
      for (let s = dir.first(Buffer.from(p, 'hex')); s !== -1; s = dir.nextVariant(s)) seen++;
      expect(seen).toBe(n);
    }
  });

  it('costs about seventy bytes per object', () => {
    const rnd = new SeededRandom(1);
    const dir = new Directory();
    const info = { size: 1024, file: 1, freshUntil: 0 };
    for (let i = 0; i < 100_000; i++) dir.insert(keyOf(rnd.bytes(new Uint8Array(20)), 0), info);
    expect(dir.count).toBe(100_000);
    // 57 bytes a slot (28 + 8 + 2*4 + 1 + 3*4), slots growing by a quarter, and the table (a
    // power of two, 4 bytes a URL, at most half full).
    expect(dir.footprint / 100_000).toBeLessThan(120);
  });

  it('keeps file numbers and freshness ends in 32 bits', () => {
    const dir = new Directory(4);
    const key = keyOf(new Uint8Array(20).fill(1), 0);
    const s = dir.insert(key, { size: 5e9, file: 0xffffffff, freshUntil: 1_764_547_200_999 });
    // Sizes stay exact beyond 4 GiB; freshness is kept to the second it falls in.
    expect(dir.info(s)).toEqual({ size: 5e9, file: 0xffffffff, freshUntil: 1_764_547_200_000 });
    dir.setFreshUntil(s, Infinity);
    expect(dir.info(s).freshUntil).toBe(0xffffffff * 1000);
    dir.setFreshUntil(s, -5);
    expect(dir.info(s).freshUntil).toBe(0);
    expect(() =>
      dir.insert(keyOf(new Uint8Array(20).fill(2), 0), { size: 1, file: 2 ** 32, freshUntil: 0 }),
    ).toThrow(/bad body file/);
  });

  it('orders its LRU by a rank per slot (start-up: the time each object was stored)', () => {
    const dir = new Directory(4);
    const rank = new Float64Array(16);
    const info = { size: 1, file: 1, freshUntil: 0 };
    const keys = [3, 1, 2].map((i) => {
      const k = keyOf(new Uint8Array(20).fill(i), 0);
      rank[dir.insert(k, info)] = i * 1000;
      return k;
    });
    dir.orderBy(rank);
    expect([...dir.slots()].map((s) => dir.key(s)[0])).toEqual([1, 2, 3]);
    expect(dir.find(keys[0]!)).not.toBe(-1);
  });
});
