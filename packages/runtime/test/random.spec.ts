import { describe, expect, it } from 'vitest';
import { SeededRandom, shuffle } from '../src/random.js';

describe('SeededRandom', () => {
  it('replays the same stream from the same seed and differs across seeds', () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    const c = new SeededRandom(43);
    const sa = Array.from({ length: 8 }, () => a.next());
    const sb = Array.from({ length: 8 }, () => b.next());
    const sc = Array.from({ length: 8 }, () => c.next());
    expect(sa).toEqual(sb);
    expect(sa).not.toEqual(sc);
    for (const x of sa) expect(x >= 0 && x < 1).toBe(true);
  });

  it('draws integers over the whole range', () => {
    const r = new SeededRandom(1);
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(r.int(10));
    expect([...seen].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('shuffles deterministically and keeps every element', () => {
    const items = shuffle([1, 2, 3, 4, 5, 6], new SeededRandom(7));
    expect([...items].sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(shuffle([1, 2, 3, 4, 5, 6], new SeededRandom(7))).toEqual(items);
  });
});
