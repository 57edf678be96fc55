import { describe, expect, it } from 'vitest';
import type { Built } from '../../src/answer/answer-builder.js';
import { answerMeta } from '../../src/answer/meta.js';
import { AnswerCache, ENTRY_OVERHEAD_BYTES } from '../../src/cache/answer-cache.js';
import { BodyWriter } from '../../src/wire/template.js';

/** A template whose body is `size` bytes of TXT record (12 bytes of record header + string). */
function built(size: number): Built {
  const w = new BodyWriter('nyud.net');
  let left = size;
  while (left > 0) {
    const n = Math.min(255, Math.max(0, left - 13));
    w.txt('an', 'x.nyud.net', 1, 'v'.repeat(n));
    left -= n + 13 + (left === size ? 4 : 2);
  }
  return {
    template: w.finish(true, 0),
    meta: answerMeta({
      rcode: 0,
      aa: true,
      method: 'random',
      detail: 'test',
      nodes: [],
      rrlKind: 'answer',
      rrlName: '*.nyud.net',
    }),
    cacheMs: 1000,
    located: false,
    liveIds: [],
  };
}
const times = { refreshAt: 1e12, expiresAt: 1e12, staleUntil: 1e12 };
const put = (c: AnswerCache, name: string, bucket?: string, size = 10) =>
  c.store(name, 1, bucket, built(size), times);
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

  it('entries in use survive a flood of one-off entries (scan resistance)', () => {
    const c = new AnswerCache({ maxEntries: 100 });
    const hot = Array.from({ length: 50 }, (_, i) => `o0.-1|bucket${i}`);
    for (const n of hot) put(c, n);
    for (const n of hot) hit(c, n);
    for (let i = 0; i < 100_000; i++) put(c, `flood${i}`);
    expect(hot.every((n) => c.has(n, 1))).toBe(true);
    expect(c.entries).toBe(100);
  });

  it('is bounded in bytes too; a rebuild updates its entry in place, with its new size', () => {
    const one = (name: string, size: number) => c0.store(name, 1, undefined, built(size), times);
    const c0 = new AnswerCache({ maxEntries: 1000 });
    const per = (size: number) => one('x', size).size;
    // Body, header, one pointer slot per record (the zone), twice the key's length, the overhead.
    expect(per(100)).toBe(built(100).template.body.length + 12 + 2 + 2 + ENTRY_OVERHEAD_BYTES);
    const c = new AnswerCache({ maxEntries: 1000, maxBytes: 3 * per(100) });
    put(c, 'x', undefined, 100);
    put(c, 'y', 'b1', 100);
    put(c, 'y', 'b2', 100);
    expect(c.bytes).toBe(3 * per(100));
    put(c, 'z', undefined, 100); // over the byte bound: the oldest (x) goes
    expect(c.has('x', 1)).toBe(false);
    expect(c.has('y', 1, 'b1')).toBe(true);
    const before = c.top('y', 1)!.byBucket!.get('b2')!;
    put(c, 'y', 'b2', 300); // a bigger rebuild: same entry, more bytes, so more room is made
    expect(c.top('y', 1)!.byBucket!.get('b2')).toBe(before);
    expect(before.built.template.body.length).toBeGreaterThan(250);
    expect(c.bytes).toBeLessThanOrEqual(3 * per(100));
    expect(c.has('y', 1, 'b2')).toBe(true);
    // An answer bigger than the whole bound is kept alone rather than never cached.
    put(c, 'huge', undefined, 10_000);
    expect(c.entries).toBe(1);
    expect(c.has('huge', 1)).toBe(true);
  });
});
