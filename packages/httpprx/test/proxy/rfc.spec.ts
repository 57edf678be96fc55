/**
 * The shared-cache rules of issue 12, end to end through a real proxy and origin on loopback, each
 * named by the RFC section that decides it. (The rules themselves are unit-tested in test/cache/.)
 */
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { get, httpDate, startProxy, startScripted, until } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import type { ProxyOptions } from '../../src/proxy/types.js';

let origin: Origin;
let px: ProxyHarness;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;

async function setup(routes: Record<string, Handler>, options: Partial<ProxyOptions> = {}) {
  ({ px, origin } = await startScripted(routes, options, cleanups));
}

const hitsFor = (path: string) => origin.hits.filter((h) => h.url === path).length;
const fetchP = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  get(px.port, origin.coralHost, path, headers, method);
const now = () => httpDate(px.clock.now());

function reply(headers: Record<string, string | string[]>, status = 200, body = 'v'): Handler {
  return (_req, res, n) => {
    res.writeHead(status, { date: now(), ...headers });
    res.end(status === 204 || status === 304 ? undefined : `${body}${n}`);
  };
}

describe('what is stored and reused (RFC 9111 §3, RFC 9110 §15.1)', () => {
  it('any final status with explicit freshness is reused (404, 500, 299, 302)', async () => {
    const paths = { '/404': 404, '/500': 500, '/299': 299, '/302': 302 };
    await setup(
      Object.fromEntries(
        Object.entries(paths).map(([p, s]) => [p, reply({ 'cache-control': 'max-age=60' }, s)]),
      ),
    );
    for (const [p, s] of Object.entries(paths)) {
      await fetchP(p);
      const r = await fetchP(p);
      expect(r.status, p).toBe(s);
      expect(r.headers['cache-status'], p).toMatch(/^Coral; hit/);
      expect(hitsFor(p), p).toBe(1);
    }
  });

  it('a 204 is stored and reused, without a body', async () => {
    await setup({ '/204': reply({ 'cache-control': 'max-age=60' }, 204) });
    await fetchP('/204');
    await until(async () => (await px.proxy.cacheList()).length === 1, '204 stored');
    const r = await fetchP('/204');
    expect(r.status).toBe(204);
    expect(r.body.length).toBe(0);
    expect(r.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(hitsFor('/204')).toBe(1);
  });

  it('heuristic freshness only for heuristically cacheable statuses (RFC 9111 §4.2.2)', async () => {
    const lm = { 'last-modified': httpDate(Date.UTC(2025, 0, 1)) };
    await setup({ '/200': reply(lm, 200), '/302': reply({ ...lm, location: '/x' }, 302) });
    await fetchP('/200');
    expect((await fetchP('/200')).headers['cache-status']).toMatch(/^Coral; hit/);
    await fetchP('/302');
    await fetchP('/302');
    expect(hitsFor('/302')).toBe(2);
  });
});

describe('freshness inputs', () => {
  it('Expires without Date counts from the time received, and the client gets a Date (RFC 9111 §4.2.1, RFC 9110 §6.6.1)', async () => {
    await setup({
      '/e': (_q, res, n) => {
        res.sendDate = false;
        res.writeHead(200, { expires: httpDate(px.clock.now() + 60_000) });
        res.end(`e${n}`);
      },
    });
    const r1 = await fetchP('/e');
    expect(r1.headers['date']).toBe(now());
    await px.clock.advance(30_000);
    expect((await fetchP('/e')).body.toString()).toBe('e1');
    await px.clock.advance(31_000);
    expect((await fetchP('/e')).body.toString()).toBe('e2');
  });

  it('an Expires that is not an HTTP-date is already expired (RFC 9110 §5.6.7, RFC 9111 §5.3)', async () => {
    await setup({
      '/bad': reply({ expires: 'Thu, 01 Jan 2099 00:00:00 +0000', etag: '"x"' }),
      '/iso': reply({ expires: '2099-01-01T00:00:00Z' }),
    });
    await fetchP('/bad');
    const r = await fetchP('/bad');
    expect(r.headers['cache-status']).toMatch(/fwd=stale/);
    await fetchP('/iso');
    await fetchP('/iso');
    expect(hitsFor('/iso')).toBe(2);
  });

  it('Age: the first member of a list counts, an invalid value is ignored (RFC 9111 §5.1)', async () => {
    await setup({
      '/list': reply({ 'cache-control': 'max-age=60', age: ['30', '0'] }),
      '/decimal': reply({ 'cache-control': 'max-age=60', age: '7200.0' }),
    });
    await fetchP('/list');
    await px.clock.advance(29_000);
    expect((await fetchP('/list')).headers['age']).toBe('59');
    await px.clock.advance(1_000);
    await fetchP('/list');
    expect(hitsFor('/list')).toBe(2);
    await fetchP('/decimal');
    const r = await fetchP('/decimal');
    expect(r.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(r.headers['age']).toBe('0'); // not 7200
  });

  it('Vary: values compared as sent, case-sensitive unless the field says otherwise (RFC 9111 §4.1)', async () => {
    await setup({
      '/v': reply({ 'cache-control': 'max-age=60', vary: 'X-Token, Accept-Encoding' }),
    });
    await fetchP('/v', { 'x-token': 'AbC', 'accept-encoding': 'gzip' });
    expect(
      (await fetchP('/v', { 'x-token': 'AbC', 'accept-encoding': 'GZIP' })).body.toString(),
    ).toBe('v1');
    expect(
      (await fetchP('/v', { 'x-token': 'abc', 'accept-encoding': 'gzip' })).body.toString(),
    ).toBe('v2');
    // Absent is not empty.
    expect((await fetchP('/v', { 'accept-encoding': 'gzip' })).body.toString()).toBe('v3');
    expect((await fetchP('/v', { 'x-token': '', 'accept-encoding': 'gzip' })).body.toString()).toBe(
      'v4',
    );
  });
});

describe('targeted cache control (RFC 9213)', () => {
  it('CDN-Cache-Control and Coral-Cache-Control govern this cache and never reach clients', async () => {
    await setup({
      '/cdn': reply({ 'cache-control': 'no-store', 'cdn-cache-control': 'max-age=60' }),
      '/coral': reply({
        'cache-control': 'max-age=600',
        'cdn-cache-control': 'max-age=600',
        'coral-cache-control': 'no-store',
      }),
    });
    const r1 = await fetchP('/cdn');
    const r2 = await fetchP('/cdn');
    expect(r2.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(hitsFor('/cdn')).toBe(1);
    for (const r of [r1, r2]) {
      expect(r.headers['cdn-cache-control']).toBeUndefined();
      expect(r.headers['cache-control']).toBe('no-store'); // for the caches after us
    }
    // Coral-Cache-Control targets this CDN alone, before CDN-Cache-Control (§2.2).
    const c1 = await fetchP('/coral');
    await fetchP('/coral');
    expect(hitsFor('/coral')).toBe(2);
    expect(c1.headers['coral-cache-control']).toBeUndefined();
    expect(c1.headers['cdn-cache-control']).toBeUndefined();
  });
});

describe('stale responses (RFC 9111 §4.2.4, RFC 5861 §4)', () => {
  const failing = () => {
    let fail = false;
    const h: Handler = (_q, res, n) => {
      if (fail) {
        res.writeHead(503, { date: now() });
        res.end('down');
        return;
      }
      res.writeHead(200, { date: now(), 'cache-control': 'max-age=10' });
      res.end(`ok${n}`);
    };
    return { h, breakIt: () => (fail = true) };
  };

  it('without permission (staleOnErrorSeconds: 0) the origin error is passed on', async () => {
    const o = failing();
    await setup({ '/s': o.h }, { staleOnErrorSeconds: 0 });
    await fetchP('/s');
    o.breakIt();
    await px.clock.advance(20_000);
    expect((await fetchP('/s')).status).toBe(503);
  });

  it('with the operator setting, or the client asking, the stale copy is served', async () => {
    const o = failing();
    await setup({ '/s': o.h }, { staleOnErrorSeconds: 60 });
    await fetchP('/s');
    o.breakIt();
    await px.clock.advance(20_000);
    const r = await fetchP('/s');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('ok1');
    expect(r.headers['cache-status']).toMatch(
      /fwd=stale; fwd-status=503; ttl=-10; detail=stale-on-error/,
    );
    await px.clock.advance(60_000);
    expect((await fetchP('/s')).status).toBe(503);
    expect((await fetchP('/s', { 'cache-control': 'stale-if-error=3600' })).body.toString()).toBe(
      'ok1',
    );
  });

  it('a revalidation answered with a 200 that may not be stored drops the old copy (RFC 9111 §4.3.3)', async () => {
    let phase = 0;
    await setup({
      '/r': (req, res, n) => {
        if (phase === 0) {
          res.writeHead(200, {
            date: now(),
            etag: '"1"',
            'cache-control': 'max-age=10, stale-if-error=3600',
          });
          res.end(`first${n}`);
        } else if (phase === 1) {
          expect(req.headers['if-none-match']).toBe('"1"');
          res.writeHead(200, { date: now(), 'cache-control': 'no-store' });
          res.end(`second${n}`);
        } else {
          res.writeHead(500, { date: now() });
          res.end('broken');
        }
      },
    });
    await fetchP('/r');
    await until(async () => (await px.proxy.cacheList()).length === 1, 'stored');
    await px.clock.advance(20_000);
    phase = 1;
    expect((await fetchP('/r')).body.toString()).toBe('second2');
    await until(async () => (await px.proxy.cacheList()).length === 0, 'old copy dropped');
    phase = 2;
    // The old copy would have been served under its stale-if-error: it is gone.
    expect((await fetchP('/r')).status).toBe(500);
  });
});

describe('revalidation (RFC 9111 §4.3.4)', () => {
  it('a 304 merges no field a cache may not store into the stored head (RFC 9111 §3.1, §3.2)', async () => {
    await setup({
      '/m': (req, res, n) => {
        if (req.headers['if-none-match'] === '"1"') {
          res.writeHead(304, {
            date: now(),
            etag: '"1"',
            'cache-control': 'max-age=10, private="x-secret"',
            // Bound to the origin's endpoints: never on a Coralized name (RFC 7838).
            'alt-svc': 'h3=":443"; ma=86400',
            // Hop-by-hop by Connection (RFC 9110 §7.6.1), a cookie, a field `private` names.
            connection: 'x-hop',
            'x-hop': '1',
            'set-cookie': 'a=1',
            'x-secret': 's',
            'x-new': 'from-304',
          });
          res.end();
        } else {
          res.writeHead(200, { date: now(), etag: '"1"', 'cache-control': 'max-age=10' });
          res.end(`m${n}`);
        }
      },
    });
    await fetchP('/m');
    await until(async () => (await px.proxy.cacheList()).length === 1, 'stored');
    await px.clock.advance(20_000);
    // The revalidated answer, a hit on the full path, a hit on the fast path (its header block
    // is built from the stored head alone).
    for (let i = 0; i < 3; i++) {
      const r = await fetchP('/m');
      expect(r.body.toString(), `answer ${i}`).toBe('m1');
      expect(r.headers['x-new'], `answer ${i}`).toBe('from-304');
      for (const f of ['alt-svc', 'x-hop', 'set-cookie', 'x-secret']) {
        expect(r.headers[f], `answer ${i}: ${f}`).toBeUndefined();
      }
    }
    expect(hitsFor('/m')).toBe(2);
  });
});

describe('interim responses (RFC 9110 §15.2)', () => {
  it('103 Early Hints is forwarded before the final response, and the final one is cached', async () => {
    // A raw origin: Node's server cannot send 103 with arbitrary timing from a handler easily.
    const sockets = new Set<Socket>();
    const raw = createNetServer((s) => {
      sockets.add(s);
      s.on('data', () => {
        s.write('HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n');
        setTimeout(() => {
          s.write(
            `HTTP/1.1 200 OK\r\nDate: ${now()}\r\nCache-Control: max-age=60\r\nContent-Length: 5\r\n\r\nhello`,
          );
        }, 20);
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.2', r));
    px = await startProxy();
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          raw.close(() => r());
        }),
      () => px.close(),
    );
    const host = `origin.test.${(raw.address() as AddressInfo).port}.nyud.net`;
    const infos: Array<{ statusCode: number; headers: Record<string, unknown> }> = [];
    const final = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: px.port, path: '/', headers: { host }, agent: false },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('information', (i) => infos.push({ statusCode: i.statusCode, headers: i.headers }));
      req.on('error', reject);
      req.end();
    });
    expect(infos).toHaveLength(1);
    expect(infos[0]!.statusCode).toBe(103);
    expect(infos[0]!.headers['link']).toBe('</style.css>; rel=preload; as=style');
    expect(final).toEqual({ status: 200, body: 'hello' });
    const again = await get(px.port, host, '/');
    expect(again.headers['cache-status']).toMatch(/^Coral; hit/);
  });
});

describe('Cache-Status stored (RFC 9211 §2.6)', () => {
  it('an origin that sends headers and then stalls never yields `stored`, and nothing is stored when it dies', async () => {
    let cut!: () => void;
    await setup({
      '/stall': (_q, res) => {
        res.writeHead(200, {
          date: now(),
          'cache-control': 'max-age=60',
          'content-length': '1000',
        });
        res.write('x'.repeat(100));
        cut = () => res.destroy();
      },
    });
    let head: Record<string, unknown> | undefined;
    const done = new Promise<string>((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: px.port,
          path: '/stall',
          headers: { host: origin.coralHost },
          agent: false,
        },
        (res) => {
          head = res.headers;
          res.on('data', () => {});
          res.on('end', () => resolve('end'));
          res.on('aborted', () => resolve('aborted'));
          res.on('error', () => resolve('aborted'));
        },
      );
      req.on('error', () => resolve('aborted'));
      req.end();
    });
    await until(() => head !== undefined, 'response head');
    expect(head!['cache-status']).toBe('Coral; fwd=uri-miss; fwd-status=200');
    cut();
    expect(await done).toBe('aborted');
    expect(await px.proxy.cacheList()).toEqual([]);
  });
});
