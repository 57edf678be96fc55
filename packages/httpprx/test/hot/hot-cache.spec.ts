import { describe, expect, it } from 'vitest';
import { HotCache } from '../../src/hot/hot-cache.js';
import { keyOf, metaFor } from '../store/contract.js';

describe('HotCache', () => {
  it('keeps small objects within its budget; the header block is patched only when the age changes', () => {
    const hot = new HotCache({ budgetBytes: 5000, maxObjectBytes: 1000 });
    const body = Buffer.alloc(800, 1);
    hot.put(metaFor('a', body), body, { lifetime: 60, fast: true, headers: ['x', 'y'] });
    hot.put(metaFor('big', Buffer.alloc(1001)), Buffer.alloc(1001), {
      lifetime: 60,
      fast: true,
      headers: [],
    });
    expect(hot.get(keyOf('big'))).toBeUndefined();
    const e = hot.get(keyOf('a'))!;
    const b1 = HotCache.block(e, 5);
    expect(b1).toEqual(['x', 'y', 'age', '5', 'cache-status', 'Coral; hit; ttl=55']);
    const age5 = b1[3];
    expect(HotCache.block(e, 5)[3]).toBe(age5); // same second: nothing rebuilt
    expect(HotCache.block(e, 6)).toEqual([
      'x',
      'y',
      'age',
      '6',
      'cache-status',
      'Coral; hit; ttl=54',
    ]);
    hot.put(metaFor('b', body), body, { lifetime: 1, fast: true, headers: [] });
    expect(hot.get(keyOf('a'))).toBeUndefined(); // evicted: 2 × (800 + 2048 + block) > 5000
    hot.delete(keyOf('b'));
    expect(hot.get(keyOf('b'))).toBeUndefined();
  });

  it('refuses a body that does not match its metadata', () => {
    const hot = new HotCache({ budgetBytes: 3000, maxObjectBytes: 1000 });
    hot.put(metaFor('a', Buffer.alloc(10)), Buffer.alloc(9), {
      lifetime: 1,
      fast: true,
      headers: [],
    });
    expect(hot.get(keyOf('a'))).toBeUndefined();
  });

  it('keeps a body that is a view of a larger allocation in memory of its own', () => {
    const hot = new HotCache({ budgetBytes: 100_000, maxObjectBytes: 10_000 });
    // As a socket read or Buffer.allocUnsafe's slice pool hands it over: 100 bytes of 64 KiB.
    const read = Buffer.alloc(64 * 1024, 7);
    const view = read.subarray(1000, 1100);
    hot.put(metaFor('view', view), view, { lifetime: 60, fast: true, headers: [] });
    const e = hot.get(keyOf('view'))!;
    expect(e.body.equals(view)).toBe(true);
    expect(e.body.buffer).not.toBe(read.buffer);
    expect(e.body.buffer.byteLength).toBe(100);
    read.fill(0); // the read buffer reused: the entry's bytes do not change
    expect(e.body.equals(Buffer.alloc(100, 7))).toBe(true);
    // A body that already owns its memory is kept as it is.
    const own = Buffer.allocUnsafeSlow(100).fill(3);
    hot.put(metaFor('own', own), own, { lifetime: 60, fast: true, headers: [] });
    expect(hot.get(keyOf('own'))!.body).toBe(own);
  });

  it('routes raw Host and target spellings to an entry while it is hot, and forgets them with it', () => {
    const hot = new HotCache({ budgetBytes: 6000, maxObjectBytes: 1000 });
    const body = Buffer.alloc(800, 1);
    const e = hot.put(metaFor('a', body), body, { lifetime: 60, fast: true, headers: [] })!;
    hot.addRoute(e, 'x.nyud.net', '/a', true);
    hot.addRoute(e, 'X.nyud.net:80', '/./a', true);
    expect(hot.route('x.nyud.net', '/a')?.entry).toBe(e);
    expect(hot.route('X.nyud.net:80', '/./a')?.entry).toBe(e);
    expect(hot.route('x.nyud.net', '/b')).toBeUndefined();
    const slow = hot.put(metaFor('v', body), body, { lifetime: 60, fast: false, headers: [] })!;
    hot.addRoute(slow, 'x.nyud.net', '/v', true);
    expect(hot.route('x.nyud.net', '/v')).toBeUndefined(); // not fast: never routed
    hot.delete(keyOf('a'));
    expect(hot.route('x.nyud.net', '/a')).toBeUndefined();
    expect(e.routes).toEqual([]);
  });

  it('keeps per route whether the opt-out applies: a site and a Coralized name to one entry', () => {
    const hot = new HotCache({ budgetBytes: 6000, maxObjectBytes: 1000 });
    const body = Buffer.alloc(100, 1);
    const e = hot.put(metaFor('a', body), body, { lifetime: 60, fast: true, headers: [] })!;
    hot.addRoute(e, 'site.example', '/a', false);
    hot.addRoute(e, 'origin.example.nyud.net', '/a', true);
    expect(hot.route('site.example', '/a')).toEqual({ entry: e, optOut: false });
    expect(hot.route('origin.example.nyud.net', '/a')).toEqual({ entry: e, optOut: true });
    // Routed again the same way: one route, as last mapped (no second spelling used up).
    hot.addRoute(e, 'site.example', '/a', true);
    expect(hot.route('site.example', '/a')?.optOut).toBe(true);
    expect(e.routes).toHaveLength(2);
  });

  it('routes only to live entries; recency comes from touch, not from routing', () => {
    // Room for two entries of 800 + 2048 + block bytes, not three.
    const hot = new HotCache({ budgetBytes: 6000, maxObjectBytes: 1000 });
    const body = Buffer.alloc(800, 1);
    const a = hot.put(metaFor('a', body), body, { lifetime: 60, fast: true, headers: [] })!;
    const b = hot.put(metaFor('b', body), body, { lifetime: 60, fast: true, headers: [] })!;
    hot.addRoute(a, 'x.nyud.net', '/a', true);
    hot.addRoute(b, 'x.nyud.net', '/b', true);
    // Routing to `a` does not make it recent: the next entry evicts it (the oldest).
    expect(hot.route('x.nyud.net', '/a')?.entry).toBe(a);
    const c = hot.put(metaFor('c', body), body, { lifetime: 60, fast: true, headers: [] })!;
    expect(a.live).toBe(false);
    expect(hot.route('x.nyud.net', '/a')).toBeUndefined();
    // A touch does: `b` was put before `c` but touched after it, so `c` goes first.
    hot.touch(b);
    hot.put(metaFor('d', body), body, { lifetime: 60, fast: true, headers: [] });
    expect(c.live).toBe(false);
    expect(hot.route('x.nyud.net', '/b')?.entry).toBe(b);
    // A replaced entry is no longer routed, and touching it does not bring it back.
    const b2 = hot.put(metaFor('b', body), body, { lifetime: 60, fast: true, headers: [] })!;
    expect(b.live).toBe(false);
    expect(hot.route('x.nyud.net', '/b')).toBeUndefined();
    hot.touch(b);
    expect(hot.get(keyOf('b'))).toBe(b2);
  });

  it('keeps the prepared response per age and connection fields; HEAD gets the head alone', () => {
    const hot = new HotCache({ budgetBytes: 1e6, maxObjectBytes: 100_000 });
    const body = Buffer.from([0x68, 0xff, 0x00, 0x69]); // bytes a one-byte string keeps as they are
    const headers = ['date', 'Mon, 01 Dec 2025 00:00:00 GMT', 'content-length', '4'];
    const e = hot.put(metaFor('a', body), body, { lifetime: 60, fast: true, headers })!;
    const head = 'HTTP/1.1 200 OK\r\ndate: Mon, 01 Dec 2025 00:00:00 GMT\r\ncontent-length: 4\r\n';
    expect(e.head).toBe(head);
    const ka = 'Connection: keep-alive\r\n';
    const w5 = HotCache.wire(e, 5, ka, true);
    expect(w5).toBe(`${head}age: 5\r\ncache-status: Coral; hit; ttl=55\r\n${ka}\r\nh\xff\x00i`);
    expect(Buffer.from(w5, 'latin1').subarray(-4)).toEqual(body);
    expect(HotCache.wire(e, 5, ka, true)).toBe(w5); // the same string: nothing rebuilt
    expect(HotCache.wire(e, 6, ka, true)).toContain(
      'age: 6\r\ncache-status: Coral; hit; ttl=54\r\n',
    );
    const other = `${ka}Keep-Alive: timeout=5\r\n`;
    expect(HotCache.wire(e, 6, other, true)).toContain(`${other}\r\nh`);
    expect(HotCache.wire(e, 6, other, false)).toBe(
      `${head}age: 6\r\ncache-status: Coral; hit; ttl=54\r\n${other}\r\n`,
    );
    // The writeHead block agrees with the prepared bytes.
    expect(HotCache.block(e, 6).slice(-4)).toEqual([
      'age',
      '6',
      'cache-status',
      'Coral; hit; ttl=54',
    ]);
    // A body over the inline limit stays a Buffer; a block without Date is not prepared.
    const big = Buffer.alloc(20_000, 1);
    const b = hot.put(metaFor('big', big), big, {
      lifetime: 60,
      fast: true,
      headers: ['date', 'x', 'content-length', '20000'],
    })!;
    expect(b.head).toBeDefined();
    expect(b.bodyText).toBeUndefined();
    expect(HotCache.wire(b, 1, ka, true).endsWith(`${ka}\r\n`)).toBe(true);
    const noDate = hot.put(metaFor('n', body), body, {
      lifetime: 60,
      fast: true,
      headers: ['content-length', '4'],
    })!;
    expect(noDate.head).toBeUndefined();
    expect(noDate.bodyText).toBeUndefined();
  });
});
