import { describe, expect, it } from 'vitest';
import { answerMeta, type AnswerMeta } from '../../src/answer/answer-builder.js';
import { AnswerCache, ENTRY_OVERHEAD_BYTES } from '../../src/cache/answer-cache.js';

const meta = (name: string): AnswerMeta =>
  answerMeta({
    name,
    type: 1,
    rcode: 0,
    aa: true,
    method: 'random',
    detail: 'test',
    nodes: [],
    rrlKind: 'answer',
    rrlName: '*.nyud.net',
  });
const same = (a: AnswerMeta, b: AnswerMeta) => a.name === b.name;
const put = (c: AnswerCache, name: string, bucket?: string, size = 10) =>
  c.store(name, 1, bucket, Buffer.alloc(size), meta(name), 1e12, same);
const hit = (c: AnswerCache, name: string, bucket?: string) => {
  const top = c.top(name, 1);
  const e = bucket === undefined ? top?.static : top?.byBucket?.get(bucket);
  if (e) c.touch(e);
  return e !== undefined;
};

describe('AnswerCache', () => {
  it('evicts one entry at a time, least recently used first; never clears', () => {
    const c = new AnswerCache({ maxEntries: 4 });
    for (const n of ['a', 'b', 'c', 'd']) put(c, n);
    // Plain LRU order among entries used once: a is the oldest.
    put(c, 'e');
    expect(['a', 'b', 'c', 'd', 'e'].map((n) => c.has(n, 1))).toEqual([
      false,
      true,
      true,
      true,
      true,
    ]);
    expect(c.entries).toBe(4);
    expect(c.evictions).toBe(1);
    // b used again: it outlives c, d, e although older.
    expect(hit(c, 'b')).toBe(true);
    for (const n of ['f', 'g', 'h']) put(c, n);
    expect(c.has('b', 1)).toBe(true);
    expect(['c', 'd', 'e'].some((n) => c.has(n, 1))).toBe(false);
  });

  it('names in use survive a flood of one-off names of any length (scan resistance)', () => {
    const c = new AnswerCache({ maxEntries: 100 });
    const hot = Array.from({ length: 50 }, (_, i) => `hot${i}.example.com.nyud.net`);
    for (const n of hot) put(c, n);
    for (const n of hot) hit(c, n);
    for (let i = 0; i < 100_000; i++) put(c, `flood${i}.example.com.nyud.net`);
    expect(hot.every((n) => c.has(n, 1))).toBe(true);
    expect(c.entries).toBe(100);
  });

  it('is bounded in bytes too; a rebuild updates its entry in place, with its new size', () => {
    const per = (name: string, size: number) => size + 2 * name.length + ENTRY_OVERHEAD_BYTES;
    const c = new AnswerCache({ maxEntries: 1000, maxBytes: 3 * per('x', 100) });
    put(c, 'x', undefined, 100);
    put(c, 'y', 'b1', 100);
    put(c, 'y', 'b2', 100);
    expect(c.bytes).toBe(3 * per('x', 100));
    put(c, 'z', undefined, 100); // over the byte bound: the oldest (x) goes
    expect(c.has('x', 1)).toBe(false);
    expect(c.has('y', 1, 'b1')).toBe(true);
    const before = c.top('y', 1)!.byBucket!.get('b2')!;
    put(c, 'y', 'b2', 300); // a bigger rebuild: same entry, more bytes, so more room is made
    expect(c.top('y', 1)!.byBucket!.get('b2')).toBe(before);
    expect(before.bytes.length).toBe(300);
    expect(c.bytes).toBeLessThanOrEqual(3 * per('x', 100));
    expect(c.has('y', 1, 'b2')).toBe(true);
    // An answer bigger than the whole bound is kept alone rather than never cached.
    put(c, 'huge', undefined, 10_000);
    expect(c.entries).toBe(1);
    expect(c.has('huge', 1)).toBe(true);
  });
});
