import { SeededRandom } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { SpaceSaving } from '../../src/metrics/top-k.js';

describe('SpaceSaving', () => {
  it('counts exactly while it holds fewer items than its capacity', () => {
    const s = new SpaceSaving<string>(4);
    for (const x of ['a', 'b', 'a', 'c', 'a', 'b']) s.add(x);
    expect(s.top()).toEqual([
      { item: 'a', count: 3, error: 0 },
      { item: 'b', count: 2, error: 0 },
      { item: 'c', count: 1, error: 0 },
    ]);
    expect(s.total).toBe(6);
    expect(s.get('a')).toEqual({ item: 'a', count: 3, error: 0 });
    expect(s.get('z')).toBeUndefined();
  });

  it('keeps a frequent item through a flood of distinct ones, in bounded memory', () => {
    const s = new SpaceSaving<string>(10);
    let hot = 0;
    for (let i = 0; i < 20_000; i++) {
      // every fifth request is for the hot URL; the rest are all different (an attacker's junk)
      if (i % 5 === 0) {
        s.add('http://www.example.com/hot');
        hot++;
      } else {
        s.add(`http://www.example.com/junk/${i}`);
      }
    }
    expect(s.size).toBe(10);
    const top = s.top(1)[0]!;
    expect(top.item).toBe('http://www.example.com/hot');
    expect(top.count).toBeGreaterThanOrEqual(hot);
    expect(top.count - top.error).toBeLessThanOrEqual(hot);
  });

  it('never under-counts and over-counts by at most its error, on a skewed random stream', () => {
    const rng = new SeededRandom(7);
    const s = new SpaceSaving<number>(50);
    const exact = new Map<number, number>();
    for (let i = 0; i < 50_000; i++) {
      // Zipf-like: item k with weight ~ 1/k over 2,000 items
      const k = Math.floor(Math.exp(rng.next() * Math.log(2_000)));
      exact.set(k, (exact.get(k) ?? 0) + 1);
      s.add(k);
    }
    for (const h of s.top()) {
      const truth = exact.get(h.item) ?? 0;
      expect(h.count).toBeGreaterThanOrEqual(truth);
      expect(h.count - h.error).toBeLessThanOrEqual(truth);
    }
    // Every item above total / capacity is monitored, and the true top 5 are the sketch's top 5.
    for (const [item, n] of exact) if (n > s.total / s.capacity) expect(s.get(item)).toBeDefined();
    const trueTop = [...exact]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k]) => k);
    expect(s.top(5).map((h) => h.item)).toEqual(trueTop);
  });

  it('takes weights, ignores non-positive ones and refuses a bad capacity', () => {
    const s = new SpaceSaving<string>(2);
    s.add('a', 5);
    s.add('b', 0);
    s.add('b', -1);
    s.add('b', Number.NaN);
    expect(s.top()).toEqual([{ item: 'a', count: 5, error: 0 }]);
    s.add('b', 2);
    s.add('c', 1); // replaces b (the smallest): count 2 + 1, error 2
    expect(s.get('c')).toEqual({ item: 'c', count: 3, error: 2 });
    expect(s.get('b')).toBeUndefined();
    s.clear();
    expect(s.size).toBe(0);
    expect(s.total).toBe(0);
    expect(() => new SpaceSaving(0)).toThrow(RangeError);
    expect(() => new SpaceSaving(1.5)).toThrow(RangeError);
  });
});
