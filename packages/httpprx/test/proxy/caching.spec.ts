import { afterEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { get, httpDate, startOrigin, startScripted, until } from '../helpers/harness.js';
import type { Origin, ProxyHarness, Route } from '../helpers/harness.js';
import type { ProxyOptions } from '../../src/proxy/types.js';

let origin: Origin;
let px: ProxyHarness;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Origin whose responses are scripted per path; the clock of the proxy also dates the responses. */
async function setup(routes: Record<string, Route>, options: Partial<ProxyOptions> = {}) {
  ({ px, origin } = await startScripted(routes, options, cleanups));
}

const hitsFor = (path: string) => origin.hits.filter((h) => h.url === path).length;
const fetchP = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  get(px.port, origin.coralHost, path, headers, method);

function reply(extra: Record<string, string>, body = 'hello', status = 200) {
  return (_req: IncomingMessage, res: ServerResponse, n: number) => {
    res.writeHead(status, {
      date: httpDate(px.clock.now()),
      'content-type': 'text/plain',
      ...extra,
    });
    res.end(`${body} ${n}`);
  };
}

describe('freshness', () => {
  it('max-age: reused while fresh, refetched once stale', async () => {
    await setup({ '/a': reply({ 'cache-control': 'max-age=60' }) });
    const r1 = await fetchP('/a');
    expect(r1.status).toBe(200);
    expect(r1.body.toString()).toBe('hello 1');
    // `stored` only after the commit: the response's head went out before its body was in.
    expect(r1.headers['cache-status']).toBe('Coral; fwd=uri-miss; fwd-status=200');
    expect(r1.headers['via']).toMatch(/coral-/);
    await px.clock.advance(30_000);
    const r2 = await fetchP('/a');
    expect(r2.body.toString()).toBe('hello 1');
    expect(r2.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(r2.headers['age']).toBe('30');
    expect(hitsFor('/a')).toBe(1);
    await px.clock.advance(31_000);
    const r3 = await fetchP('/a');
    expect(r3.body.toString()).toBe('hello 2');
    expect(hitsFor('/a')).toBe(2);
  });
});

describe('explicit freshness sources', () => {
  it('s-maxage wins over max-age for a shared cache', async () => {
    await setup({ '/s': reply({ 'cache-control': 'max-age=0, s-maxage=100' }) });
    await fetchP('/s');
    await px.clock.advance(50_000);
    expect((await fetchP('/s')).body.toString()).toBe('hello 1');
    expect(hitsFor('/s')).toBe(1);
    await px.clock.advance(60_000);
    expect((await fetchP('/s')).body.toString()).toBe('hello 2');
  });

  it('Expires relative to Date', async () => {
    await setup({
      '/e': (_q, res, n) => {
        const now = px.clock.now();
        res.writeHead(200, { date: httpDate(now), expires: httpDate(now + 60_000) });
        res.end(`e${n}`);
      },
    });
    await fetchP('/e');
    await px.clock.advance(30_000);
    expect((await fetchP('/e')).body.toString()).toBe('e1');
    await px.clock.advance(40_000);
    expect((await fetchP('/e')).body.toString()).toBe('e2');
  });

  it('an invalid Expires means already stale', async () => {
    await setup({ '/e0': reply({ expires: '0' }) });
    await fetchP('/e0');
    await fetchP('/e0');
    expect(hitsFor('/e0')).toBe(2);
  });

  it('Age from upstream shortens the remaining freshness', async () => {
    await setup({ '/age': reply({ 'cache-control': 'max-age=100', age: '80' }) });
    const r1 = await fetchP('/age');
    expect(r1.headers['age']).toBe('80');
    await px.clock.advance(10_000);
    expect((await fetchP('/age')).headers['age']).toBe('90');
    expect(hitsFor('/age')).toBe(1);
    await px.clock.advance(15_000);
    expect((await fetchP('/age')).body.toString()).toBe('hello 2');
  });

  it('heuristic freshness: 10% of the Last-Modified age, capped at a day; nothing without it', async () => {
    await setup({
      '/lm': (_q, res, n) => {
        const now = px.clock.now();
        res.writeHead(200, { date: httpDate(now), 'last-modified': httpDate(now - 5 * 3600_000) });
        res.end(`lm${n}`);
      },
      '/old': (_q, res, n) => {
        const now = px.clock.now();
        res.writeHead(200, {
          date: httpDate(now),
          'last-modified': httpDate(now - 100 * 86400_000),
        });
        res.end(`old${n}`);
      },
      '/none': reply({}),
    });
    await fetchP('/lm'); // 5 h old → fresh for 30 min
    await px.clock.advance(29 * 60_000);
    expect((await fetchP('/lm')).body.toString()).toBe('lm1');
    await fetchP('/old'); // 100 days old → capped at 24 h (not 10 days)
    await px.clock.advance(2 * 60_000); // /lm is now 31 min old
    expect(hitsFor('/lm')).toBe(1);
    await fetchP('/lm');
    expect(hitsFor('/lm')).toBe(2);
    await px.clock.advance(23 * 3600_000);
    expect((await fetchP('/old')).body.toString()).toBe('old1');
    await px.clock.advance(2 * 3600_000);
    expect((await fetchP('/old')).body.toString()).toBe('old2');
    // Neither explicit expiry nor Last-Modified nor a validator: not stored.
    await fetchP('/none');
    await fetchP('/none');
    expect(hitsFor('/none')).toBe(2);
  });

  it('the optional default TTL applies only to responses with no freshness information', async () => {
    await setup(
      { '/none': reply({}), '/ma0': reply({ 'cache-control': 'max-age=0' }) },
      { defaultTtlSeconds: 60 },
    );
    await fetchP('/none');
    await px.clock.advance(59_000);
    expect((await fetchP('/none')).body.toString()).toBe('hello 1');
    await px.clock.advance(2_000);
    expect((await fetchP('/none')).body.toString()).toBe('hello 2');
    await fetchP('/ma0');
    await fetchP('/ma0');
    expect(hitsFor('/ma0')).toBe(2);
  });
});

describe('what may not be stored or reused', () => {
  for (const cc of ['no-store', 'private', 'private, max-age=60', 'no-store, max-age=60']) {
    it(`Cache-Control: ${cc} is never stored (max-age=60 alone is)`, async () => {
      await setup({
        '/x': reply({ 'cache-control': cc }),
        '/y': reply({ 'cache-control': 'max-age=60' }),
      });
      await fetchP('/x');
      const r = await fetchP('/x');
      expect(r.body.toString()).toBe('hello 2');
      expect(r.headers['cache-status']).not.toMatch(/stored/);
      await fetchP('/y');
      await fetchP('/y');
      expect(hitsFor('/y')).toBe(1);
    });
  }

  it('request no-store: neither served from nor stored', async () => {
    await setup({ '/n': reply({ 'cache-control': 'max-age=60' }) });
    await fetchP('/n', { 'cache-control': 'no-store' });
    await fetchP('/n');
    expect(hitsFor('/n')).toBe(2);
    await fetchP('/n');
    expect(hitsFor('/n')).toBe(2);
  });

  it('Authorization: not shared unless the response says public / s-maxage / must-revalidate', async () => {
    await setup({
      '/auth': reply({ 'cache-control': 'max-age=60' }),
      '/pub': reply({ 'cache-control': 'public, max-age=60' }),
    });
    const r = await fetchP('/auth', { authorization: 'Bearer alice' });
    expect(r.body.toString()).toBe('hello 1');
    expect(origin.hits[0]!.headers['authorization']).toBe('Bearer alice');
    const anon = await fetchP('/auth');
    expect(anon.body.toString()).toBe('hello 2'); // Alice's copy was not shared
    await fetchP('/pub', { authorization: 'Bearer alice' });
    expect((await fetchP('/pub')).body.toString()).toBe('hello 1');
    expect(hitsFor('/pub')).toBe(1);
  });

  it('response no-cache: stored, but revalidated on every use', async () => {
    await setup({
      '/nc': (req, res, n) => {
        const h = { date: httpDate(px.clock.now()), 'cache-control': 'no-cache', etag: '"v1"' };
        if (req.headers['if-none-match'] === '"v1"') {
          res.writeHead(304, h);
          res.end();
        } else {
          res.writeHead(200, h);
          res.end(`nc${n}`);
        }
      },
    });
    await fetchP('/nc');
    const r = await fetchP('/nc');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('nc1');
    expect(r.headers['cache-status']).toMatch(/fwd=stale; fwd-status=304/);
    expect(origin.hits[1]!.headers['if-none-match']).toBe('"v1"');
    expect(hitsFor('/nc')).toBe(2);
  });

  it('request no-cache forces revalidation of a fresh copy', async () => {
    await setup({
      '/rnc': (req, res, n) => {
        const h = { date: httpDate(px.clock.now()), 'cache-control': 'max-age=600', etag: '"a"' };
        if (req.headers['if-none-match'] === '"a"') {
          res.writeHead(304, h);
          res.end();
        } else {
          res.writeHead(200, h);
          res.end(`r${n}`);
        }
      },
    });
    await fetchP('/rnc');
    await fetchP('/rnc');
    expect(hitsFor('/rnc')).toBe(1);
    const r = await fetchP('/rnc', { 'cache-control': 'no-cache' });
    expect(r.body.toString()).toBe('r1');
    expect(hitsFor('/rnc')).toBe(2);
    expect(origin.hits[1]!.headers['if-none-match']).toBe('"a"');
  });

  it('Vary: one stored response per secondary key', async () => {
    await setup({
      '/v': (req, res, n) => {
        res.writeHead(200, {
          date: httpDate(px.clock.now()),
          'cache-control': 'max-age=60',
          vary: 'Accept-Language',
        });
        res.end(`${req.headers['accept-language'] ?? 'none'}-${n}`);
      },
      '/star': reply({ 'cache-control': 'max-age=60', vary: '*' }),
    });
    expect((await fetchP('/v', { 'accept-language': 'fr' })).body.toString()).toBe('fr-1');
    expect((await fetchP('/v', { 'accept-language': 'de' })).body.toString()).toBe('de-2');
    const fr = await fetchP('/v', { 'accept-language': 'FR' });
    expect(fr.body.toString()).toBe('fr-1');
    expect(fr.headers['cache-status']).toMatch(/hit/);
    expect((await fetchP('/v', { 'accept-language': 'de' })).body.toString()).toBe('de-2');
    const none = await fetchP('/v');
    expect(none.body.toString()).toBe('none-3');
    expect(none.headers['cache-status']).toMatch(/fwd=vary-miss/);
    expect(hitsFor('/v')).toBe(3);
    await fetchP('/star');
    await fetchP('/star');
    expect(hitsFor('/star')).toBe(2);
  });
});

describe('revalidation', () => {
  it('ETag: a 304 refreshes the stored headers and freshness; a 200 replaces the body', async () => {
    let version = 1;
    await setup({
      '/etag': (req, res) => {
        const h = {
          date: httpDate(px.clock.now()),
          'cache-control': 'max-age=10',
          etag: `"v${version}"`,
          'x-served': String(origin.hits.length),
        };
        if (req.headers['if-none-match'] === `"v${version}"`) {
          res.writeHead(304, h);
          res.end();
        } else {
          res.writeHead(200, h);
          res.end(`body v${version}`);
        }
      },
    });
    expect((await fetchP('/etag')).headers['x-served']).toBe('1');
    await px.clock.advance(20_000);
    const r = await fetchP('/etag');
    expect(r.body.toString()).toBe('body v1');
    expect(r.headers['x-served']).toBe('2'); // header taken from the 304
    expect(r.headers['cache-status']).toMatch(/fwd=stale; fwd-status=304/);
    expect(origin.hits[1]!.headers['if-none-match']).toBe('"v1"');
    await px.clock.advance(5_000); // fresh again thanks to the 304
    expect((await fetchP('/etag')).headers['x-served']).toBe('2');
    expect(origin.hits).toHaveLength(2);
    version = 2;
    await px.clock.advance(10_000);
    expect((await fetchP('/etag')).body.toString()).toBe('body v2');
    await px.clock.advance(1_000);
    expect((await fetchP('/etag')).body.toString()).toBe('body v2');
    expect(origin.hits).toHaveLength(3);
  });

  it('Last-Modified: revalidated with If-Modified-Since', async () => {
    const lm = httpDate(Date.UTC(2025, 0, 1));
    await setup({
      '/lmv': (req, res, n) => {
        const h = {
          date: httpDate(px.clock.now()),
          'cache-control': 'max-age=10',
          'last-modified': lm,
        };
        if (req.headers['if-modified-since'] === lm) {
          res.writeHead(304, h);
          res.end();
        } else {
          res.writeHead(200, h);
          res.end(`lmv${n}`);
        }
      },
    });
    await fetchP('/lmv');
    await px.clock.advance(11_000);
    const r = await fetchP('/lmv');
    expect(r.body.toString()).toBe('lmv1');
    expect(origin.hits[1]!.headers['if-modified-since']).toBe(lm);
  });

  it('stale-while-revalidate: stale served at once, refreshed once in the background; not past the window', async () => {
    let release: (() => void) | undefined;
    await setup({
      '/swr': (_q, res, n) => {
        const send = () => {
          res.writeHead(200, {
            date: httpDate(px.clock.now()),
            'cache-control': 'max-age=10, stale-while-revalidate=60',
          });
          res.end(`swr${n}`);
        };
        if (n === 2) release = send;
        else send();
      },
    });
    await fetchP('/swr');
    await px.clock.advance(30_000);
    // The background refresh is held by the origin; clients keep getting the stale copy meanwhile.
    const results = await Promise.all([fetchP('/swr'), fetchP('/swr'), fetchP('/swr')]);
    for (const r of results) {
      expect(r.body.toString()).toBe('swr1');
      expect(r.headers['cache-status']).toMatch(/hit; ttl=-20; detail=stale-while-revalidate/);
    }
    await until(() => release !== undefined, 'background refresh');
    expect(hitsFor('/swr')).toBe(2); // exactly one refresh for three stale hits
    release!();
    await until(async () => (await fetchP('/swr')).body.toString() === 'swr2', 'refreshed body');
    // Past the window: the client waits for revalidation instead.
    await px.clock.advance(100_000);
    const late = await fetchP('/swr');
    expect(late.body.toString()).toBe('swr3');
    expect(late.headers['cache-status']).toMatch(/fwd=stale; fwd-status=200/);
  });

  it('stale-if-error: stale served on origin 5xx within the window, the error passed on after it', async () => {
    let fail = false;
    await setup({
      '/sie': (_q, res, n) => {
        if (fail) {
          res.writeHead(500, { date: httpDate(px.clock.now()) });
          res.end('origin broke');
          return;
        }
        res.writeHead(200, {
          date: httpDate(px.clock.now()),
          'cache-control': 'max-age=10, stale-if-error=30',
        });
        res.end(`sie${n}`);
      },
    });
    await fetchP('/sie');
    fail = true;
    await px.clock.advance(20_000);
    const r = await fetchP('/sie');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('sie1');
    expect(r.headers['cache-status']).toMatch(/fwd=stale; fwd-status=500.*detail=stale-if-error/);
    await px.clock.advance(30_000);
    const r2 = await fetchP('/sie');
    expect(r2.status).toBe(500);
    expect(r2.body.toString()).toBe('origin broke');
  });

  for (const cc of ['must-revalidate', 'proxy-revalidate']) {
    it(`${cc}: a stale copy is not served when the origin is down, even with stale-if-error (RFC 9111 §4.2.4)`, async () => {
      await setup({
        '/mr': reply({ 'cache-control': `max-age=10, ${cc}, stale-if-error=3600` }),
        '/plain': reply({ 'cache-control': 'max-age=10, stale-if-error=3600' }),
      });
      await fetchP('/mr');
      await fetchP('/plain');
      await origin.close();
      await px.clock.advance(20_000);
      const r = await fetchP('/mr');
      expect(r.status).toBe(504);
      expect(r.headers['x-coral-error']).toBe('CORAL_REVALIDATION_FAILED');
      const p = await fetchP('/plain');
      expect(p.status).toBe(200);
      expect(p.body.toString()).toBe('hello 1');
      expect(p.headers['cache-status']).toMatch(/detail=stale-if-error/);
    });
  }
});

describe('answering from a stored full response', () => {
  const big = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const bigRoute = (_q: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, {
      date: httpDate(px.clock.now()),
      'cache-control': 'max-age=60',
      etag: '"big"',
    });
    res.end(big);
  };

  it('HEAD after a GET is answered from the cache; a HEAD miss is forwarded and stores nothing', async () => {
    await setup({ '/big': bigRoute, '/h': reply({ 'cache-control': 'max-age=60' }) });
    await fetchP('/big');
    const h = await fetchP('/big', {}, 'HEAD');
    expect(h.status).toBe(200);
    expect(h.headers['content-length']).toBe('1000');
    expect(h.body.length).toBe(0);
    expect(h.headers['cache-status']).toMatch(/hit/);
    expect(hitsFor('/big')).toBe(1);
    await fetchP('/h', {}, 'HEAD');
    expect(origin.hits.at(-1)!.method).toBe('HEAD');
    const g = await fetchP('/h');
    expect(g.body.toString()).toBe('hello 2');
    expect(hitsFor('/h')).toBe(2);
  });

  it('single Range requests are cut from the stored body; a miss with Range gets the whole body', async () => {
    await setup({ '/big': bigRoute });
    const miss = await fetchP('/big', { range: 'bytes=0-9' });
    expect(miss.status).toBe(200);
    expect(miss.body.equals(big)).toBe(true);
    expect(origin.hits[0]!.headers['range']).toBeUndefined();
    const r = await fetchP('/big', { range: 'bytes=10-19' });
    expect(r.status).toBe(206);
    expect(r.headers['content-range']).toBe('bytes 10-19/1000');
    expect(r.body.equals(big.subarray(10, 20))).toBe(true);
    const suffix = await fetchP('/big', { range: 'bytes=-5' });
    expect(suffix.body.equals(big.subarray(995))).toBe(true);
    const open = await fetchP('/big', { range: 'bytes=990-' });
    expect(open.body.equals(big.subarray(990))).toBe(true);
    const bad = await fetchP('/big', { range: 'bytes=5000-' });
    expect(bad.status).toBe(416);
    expect(bad.headers['content-range']).toBe('bytes */1000');
    const multi = await fetchP('/big', { range: 'bytes=0-1,5-6' });
    expect(multi.status).toBe(200);
    expect(multi.body.length).toBe(1000);
    const ifRangeOld = await fetchP('/big', { range: 'bytes=0-9', 'if-range': '"other"' });
    expect(ifRangeOld.status).toBe(200);
    const ifRangeOk = await fetchP('/big', { range: 'bytes=0-9', 'if-range': '"big"' });
    expect(ifRangeOk.status).toBe(206);
    expect(hitsFor('/big')).toBe(1);
  });

  it("a client's conditional GET is answered 304 from the cache when it matches", async () => {
    await setup({ '/big': bigRoute });
    await fetchP('/big');
    const r = await fetchP('/big', { 'if-none-match': '"big"' });
    expect(r.status).toBe(304);
    expect(r.body.length).toBe(0);
    const r2 = await fetchP('/big', { 'if-none-match': '"nope"' });
    expect(r2.status).toBe(200);
    expect(hitsFor('/big')).toBe(1);
  });
});

describe('cookies, redirects and headers', () => {
  it('cookies are neither forwarded nor returned nor stored on Coralized names', async () => {
    await setup({
      '/c': (req, res, n) => {
        res.writeHead(200, {
          date: httpDate(px.clock.now()),
          'cache-control': 'max-age=60',
          'set-cookie': ['session=secret; Path=/'],
        });
        res.end(`c${n} cookie=${req.headers['cookie'] ?? ''}`);
      },
    });
    const r = await fetchP('/c', { cookie: 'id=42' });
    expect(origin.hits[0]!.headers['cookie']).toBeUndefined();
    expect(r.headers['set-cookie']).toBeUndefined();
    expect(r.body.toString()).toBe('c1 cookie=');
    const again = await fetchP('/c');
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.headers['cache-status']).toMatch(/hit/);
  });

  it('absolute http Locations are rewritten to their Coralized form, others left alone', async () => {
    await setup({
      '/r1': reply(
        { location: 'http://www.example.com:8080/x?y=1', 'cache-control': 'max-age=60' },
        '',
        301,
      ),
      '/r2': reply({ location: '/relative' }, '', 302),
      '/r3': reply({ location: 'https://secure.example.com/' }, '', 302),
    });
    const r1 = await fetchP('/r1');
    expect(r1.status).toBe(301);
    expect(r1.headers['location']).toBe('http://www.example.com.8080.nyud.net/x?y=1');
    const r1b = await fetchP('/r1'); // from the cache, rewritten the same way
    expect(r1b.headers['location']).toBe('http://www.example.com.8080.nyud.net/x?y=1');
    expect(hitsFor('/r1')).toBe(1);
    const withPort = await get(px.port, `${origin.coralHost}:8090`, '/r1');
    expect(withPort.headers['location']).toBe('http://www.example.com.8080.nyud.net:8090/x?y=1');
    expect((await fetchP('/r2')).headers['location']).toBe('/relative');
    expect((await fetchP('/r3')).headers['location']).toBe('https://secure.example.com/');
  });

  it('every response carries Via and Cache-Status, errors included', async () => {
    await setup({ '/ok': reply({ 'cache-control': 'max-age=60' }) });
    const replies = [
      await fetchP('/ok'),
      await fetchP('/ok'),
      await fetchP('/missing'),
      await get(px.port, 'not-coral.example.com', '/'),
      await fetchP('/ok', {}, 'POST'),
    ];
    for (const r of replies) {
      expect(r.headers['via']).toMatch(/1\.1 coral-a1a1/);
      expect(r.headers['cache-status']).toMatch(/^Coral/);
    }
  });
});

describe('origin failures', () => {
  it('connect failures are negatively cached briefly', async () => {
    await setup({ '/n': reply({ 'cache-control': 'max-age=60' }) }, { negativeTtlMs: 5_000 });
    const port = origin.port;
    await origin.close();
    const r1 = await fetchP('/n');
    expect(r1.status).toBe(502);
    expect(r1.headers['x-coral-error']).toBe('CORAL_ORIGIN_UNREACHABLE');
    const fresh = reply({ 'cache-control': 'max-age=60' });
    origin = await startOrigin((req, res) => fresh(req, res, 1), '127.0.0.2', port);
    cleanups.push(() => origin.close());
    const r2 = await fetchP('/n');
    expect(r2.status).toBe(502);
    expect(r2.headers['x-coral-error']).toBe('CORAL_ORIGIN_NEGATIVE_CACHED');
    expect(origin.hits).toHaveLength(0);
    await px.clock.advance(5_001);
    const r3 = await fetchP('/n');
    expect(r3.status).toBe(200);
    expect(origin.hits).toHaveLength(1);
  });

  it('a truncated transfer is never stored and never replaces a good copy', async () => {
    let truncate = false;
    await setup({
      '/t': (_q, res, n) => {
        res.writeHead(200, {
          date: httpDate(px.clock.now()),
          'cache-control': 'max-age=10',
          'content-length': '2000',
        });
        if (truncate) {
          res.write(Buffer.alloc(700, 1));
          setImmediate(() => res.socket?.destroy());
        } else res.end(Buffer.alloc(2000, n));
      },
      '/tc': (_q, res) => {
        // chunked, cut before the final chunk
        res.writeHead(200, { date: httpDate(px.clock.now()), 'cache-control': 'max-age=60' });
        res.write(Buffer.alloc(500, 9));
        setImmediate(() => res.socket?.destroy());
      },
    });
    const good = await fetchP('/t');
    expect(good.body.equals(Buffer.alloc(2000, 1))).toBe(true);
    truncate = true;
    await px.clock.advance(20_000);
    await expect(fetchP('/t')).rejects.toThrow();
    // The good copy is still there, intact.
    const stale = await fetchP('/t', { 'cache-control': 'max-stale=3600' });
    expect(stale.body.equals(Buffer.alloc(2000, 1))).toBe(true);
    await expect(fetchP('/tc')).rejects.toThrow();
    expect((await px.proxy.cacheList()).map((e) => e.url)).toEqual([
      `http://origin.test:${origin.port}/t`,
    ]);
  });
});

describe('bad input gets an answer, never a crash', () => {
  it('malformed client headers and request targets', async () => {
    await setup({ '/ok': reply({ 'cache-control': 'max-age=60' }) });
    await fetchP('/ok');
    const weird: Array<Record<string, string>> = [
      { 'cache-control': 'max-age=abc, =, "' },
      { range: 'bytes=abc' },
      { range: 'bytes=5-1' },
      { 'if-modified-since': 'garbage' },
      { 'if-none-match': '' },
      { 'if-range': 'nonsense' },
      { pragma: 'no-cache, junk' },
    ];
    for (const h of weird) {
      const r = await fetchP('/ok', h);
      expect(r.status).toBe(200);
      expect(r.body.toString()).toMatch(/^hello/);
    }
    // absolute-form target: the path is taken from it
    const abs = await get(px.port, origin.coralHost, `http://${origin.coralHost}/ok`);
    expect(abs.status).toBe(200);
    expect(abs.headers['cache-status']).toMatch(/hit/);
  });

  it('malformed origin headers', async () => {
    await setup({
      '/w': (_q, res, n) => {
        res.writeHead(200, {
          date: 'not a date',
          'cache-control': 'max-age=-5, s-maxage=x',
          expires: 'yesterday',
          age: '-3',
          'last-modified': 'whenever',
          vary: ', ,',
        });
        res.end(`w${n}`);
      },
    });
    const r1 = await fetchP('/w');
    expect(r1.status).toBe(200);
    const r2 = await fetchP('/w');
    expect(r2.body.toString()).toBe('w2'); // nothing usable as freshness: not reused
  });
});
