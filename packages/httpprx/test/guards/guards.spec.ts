import { afterEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Dial, Resolver, ResolvedAddress } from '../../src/connect/index.js';
import { get, httpDate, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

class MapResolver implements Resolver {
  readonly asked: string[] = [];
  constructor(private readonly map: Record<string, ResolvedAddress[]>) {}
  async resolve(host: string): Promise<ResolvedAddress[]> {
    this.asked.push(host);
    return this.map[host] ?? [];
  }
}

describe('SSRF guard (through the SmartConnect connector)', () => {
  const targets: Record<string, ResolvedAddress[]> = {
    'loopback.test': [{ address: '127.0.0.1', family: 4 }],
    'private.test': [{ address: '10.0.0.1', family: 4 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'v6loop.test': [{ address: '::1', family: 6 }],
  };

  it('refuses origins resolving to loopback, private, link-local and ::1 — without any connection attempt', async () => {
    // A real server on the loopback target, to prove nothing connects to it either.
    let connections = 0;
    const local = await startOrigin((_q, res) => res.end('should never be reached'), '127.0.0.1');
    local.server.on('connection', () => connections++);
    cleanups.push(() => local.close());
    const dials: string[] = [];
    const dial: Dial = async (t) => {
      dials.push(t.address);
      throw Object.assign(new Error('test dial refuses'), { code: 'ECONNREFUSED' });
    };
    const resolver = new MapResolver(targets);
    const px = await startProxy({ allowPrivateOrigins: false, hosts: {} }, { resolver, dial });
    cleanups.push(() => px.close());
    for (const name of Object.keys(targets)) {
      const r = await get(px.port, `${name}.${local.port}.nyud.net`, '/');
      expect(r.status).toBe(403);
      expect(r.headers['x-coral-error']).toBe('CORAL_ORIGIN_FORBIDDEN');
      expect(r.body.toString()).toContain('CORAL_ORIGIN_FORBIDDEN');
    }
    expect(resolver.asked.sort()).toEqual(Object.keys(targets).sort());
    expect(dials).toEqual([]);
    expect(connections).toBe(0);
    expect(px.proxy.originConnector.stats().dials).toBe(0);
    expect(px.proxy.originConnector.stats().refusedAddresses).toBe(4);
    expect(local.hits).toHaveLength(0);
  });

  it('a name without addresses is a clear 502 with the connector code as cause', async () => {
    const resolver = new MapResolver({});
    const px = await startProxy({ hosts: {} }, { resolver });
    cleanups.push(() => px.close());
    const r = await get(px.port, 'nowhere.test.nyud.net', '/');
    expect(r.status).toBe(502);
    expect(r.headers['x-coral-error']).toBe('CORAL_ORIGIN_UNREACHABLE');
    expect(r.headers['x-coral-cause']).toBe('EADDRNOTAVAIL');
  });

  it('the same loopback origin is fetched when allowPrivateOrigins is set', async () => {
    const local = await startOrigin((_q, res) => res.end('allowed'), '127.0.0.1');
    cleanups.push(() => local.close());
    const resolver = new MapResolver(targets);
    const px = await startProxy({ allowPrivateOrigins: true, hosts: {} }, { resolver });
    cleanups.push(() => px.close());
    const r = await get(px.port, `loopback.test.${local.port}.nyud.net`, '/');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('allowed');
  });
});

describe('request guards', () => {
  let origin: Origin;
  let px: ProxyHarness;
  async function setup(options = {}, handler?: (q: IncomingMessage, s: ServerResponse) => void) {
    px = await startProxy(options);
    origin = await startOrigin(
      handler ??
        ((_q, res) => {
          res.writeHead(200, { date: httpDate(px.clock.now()), 'cache-control': 'max-age=60' });
          res.end('ok');
        }),
    );
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
  }

  it('a Host outside every zone gets a clear 403 page: not an open proxy', async () => {
    await setup();
    for (const host of ['www.example.com', `127.0.0.2:${origin.port}`, 'nyud.net.evil.com']) {
      const r = await get(px.port, host, '/');
      expect(r.status).toBe(403);
      expect(r.headers['x-coral-error']).toBe('CORAL_NOT_CORALIZED');
      expect(r.headers['content-type']).toMatch(/text\/html/);
      expect(r.body.toString()).toMatch(/not a Coralized name/);
    }
    const bad = await get(px.port, 'bad..name.nyud.net', '/');
    expect(bad.status).toBe(400);
    expect(bad.headers['x-coral-error']).toBe('CORAL_BAD_HOST');
    expect(origin.hits).toHaveLength(0);
    // ...while the Coralized name of the same origin works.
    expect((await get(px.port, origin.coralHost, '/')).status).toBe(200);
  });

  it('only GET and HEAD on Coralized names', async () => {
    await setup();
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const r = await get(px.port, origin.coralHost, '/', {}, method);
      expect(r.status).toBe(405);
      expect(r.headers['allow']).toBe('GET, HEAD');
      expect(r.headers['x-coral-error']).toBe('CORAL_METHOD_NOT_ALLOWED');
    }
    expect(origin.hits).toHaveLength(0);
    expect((await get(px.port, origin.coralHost, '/', {}, 'HEAD')).status).toBe(200);
  });

  it('an object over maxObjectBytes is not stored, and the client is told', async () => {
    await setup({ maxObjectBytes: 10_000 }, (req, res) => {
      const size = Number((req.url ?? '').slice(1));
      if (req.url === '/chunked') {
        res.writeHead(200, { date: httpDate(px.clock.now()), 'cache-control': 'max-age=60' });
        let sent = 0;
        const more = () => {
          if (sent >= 30_000 || res.destroyed) return res.end();
          res.write(Buffer.alloc(1000, 7));
          sent += 1000;
          setImmediate(more);
        };
        more();
        return;
      }
      res.writeHead(200, {
        date: httpDate(px.clock.now()),
        'cache-control': 'max-age=60',
        'content-length': String(size),
      });
      res.end(Buffer.alloc(size, 1));
    });
    // Declared too large: a clear error page, body never fetched.
    const r = await get(px.port, origin.coralHost, '/20000');
    expect(r.status).toBe(502);
    expect(r.headers['x-coral-error']).toBe('CORAL_OBJECT_TOO_LARGE');
    expect(r.body.toString()).toMatch(/20000 bytes; this proxy fetches objects up to 10000 bytes/);
    // No Content-Length: enforced while streaming; the client sees the transfer cut, not a complete body.
    await expect(get(px.port, origin.coralHost, '/chunked')).rejects.toThrow();
    // At the limit it is stored.
    expect((await get(px.port, origin.coralHost, '/10000')).body.length).toBe(10_000);
    expect((await px.proxy.cacheList()).map((e) => e.size)).toEqual([10_000]);
    await get(px.port, origin.coralHost, '/20000');
    expect(origin.hits.filter((h) => h.url === '/20000')).toHaveLength(2);
  });

  it('per-client rate limit on the injected clock', async () => {
    await setup({ rateLimit: { perSecond: 2, burst: 2 } });
    expect((await get(px.port, origin.coralHost, '/')).status).toBe(200);
    expect((await get(px.port, origin.coralHost, '/')).status).toBe(200);
    const limited = await get(px.port, origin.coralHost, '/');
    expect(limited.status).toBe(429);
    expect(limited.headers['x-coral-error']).toBe('CORAL_RATE_LIMITED');
    expect(limited.headers['retry-after']).toBe('1');
    await px.clock.advance(500);
    expect((await get(px.port, origin.coralHost, '/')).status).toBe(200);
  });

  it('loop guard: a request that already passed through this proxy is refused', async () => {
    await setup();
    const r = await get(px.port, origin.coralHost, '/', {
      via: '1.1 other, 1.1 coral-a1a1a1a1a1a1',
    });
    expect(r.status).toBe(508);
    expect(r.headers['x-coral-error']).toBe('CORAL_LOOP_DETECTED');
    expect(origin.hits).toHaveLength(0);
    const ok = await get(px.port, origin.coralHost, '/', { via: '1.1 coral-b2b2b2b2b2b2' });
    expect(ok.status).toBe(200);
    expect(origin.hits[0]!.headers['via']).toBe('1.1 coral-b2b2b2b2b2b2, 1.1 coral-a1a1a1a1a1a1');
  });
});

describe('site (accelerator) mode', () => {
  it('maps a configured host to its origin; other methods pass through uncached and invalidate', async () => {
    let version = 1;
    const origin = await startOrigin((req, res, body) => {
      if (req.method === 'GET') {
        res.writeHead(200, {
          'cache-control': 'max-age=600',
          'set-cookie': req.url === '/me' ? 'a=1' : [],
        });
        res.end(`page v${version} cookie=${req.headers['cookie'] ?? ''}`);
      } else if (req.method === 'POST' && req.url === '/page') {
        version++;
        res.writeHead(303, { location: '/page' });
        res.end(`posted ${body.toString()}`);
      } else {
        res.writeHead(400);
        res.end('bad');
      }
    });
    const px = await startProxy({
      sites: { 'www.school.example': `http://origin.test:${origin.port}` },
    });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const site = (
      path: string,
      method = 'GET',
      body?: string,
      headers: Record<string, string> = {},
    ) =>
      get(
        px.port,
        'www.school.example',
        path,
        headers,
        method,
        '127.0.0.1',
        body ? Buffer.from(body) : undefined,
      );
    expect((await site('/page', 'GET', undefined, { cookie: 'sid=1' })).body.toString()).toBe(
      'page v1 cookie=sid=1',
    );
    expect((await site('/page')).headers['cache-status']).toMatch(/hit/);
    expect(origin.hits).toHaveLength(1);
    const post = await site('/page', 'POST', 'name=x', { 'content-type': 'text/plain' });
    expect(post.status).toBe(303);
    expect(post.body.toString()).toBe('posted name=x');
    expect(post.headers['cache-status']).toMatch(/fwd=method/);
    expect(origin.hits[1]!.body.toString()).toBe('name=x');
    // The stored response was invalidated by the successful POST.
    expect((await site('/page')).body.toString()).toBe('page v2 cookie=');
    expect(origin.hits).toHaveLength(3);
    // An error response does not invalidate.
    expect((await site('/page', 'DELETE')).status).toBe(400);
    expect((await site('/page')).headers['cache-status']).toMatch(/hit/);
    // Set-Cookie is passed to the client in site mode, and such a response is not stored.
    const me = await site('/me');
    expect(me.headers['set-cookie']).toEqual(['a=1']);
    await site('/me');
    expect(origin.hits.filter((h) => h.url === '/me')).toHaveLength(2);
  });
});

describe('peer requests', () => {
  it('are served only from the cache, never fetched (504 otherwise)', async () => {
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60' });
      res.end('x');
    });
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const miss = await get(px.port, origin.coralHost, '/', { 'x-coral-peer': 'b'.repeat(40) });
    expect(miss.status).toBe(504);
    expect(miss.headers['x-coral-error']).toBe('CORAL_NOT_CACHED');
    expect(origin.hits).toHaveLength(0);
    await get(px.port, origin.coralHost, '/');
    const hit = await get(px.port, origin.coralHost, '/', { 'x-coral-peer': 'b'.repeat(40) });
    expect(hit.status).toBe(200);
    expect(hit.headers['x-coral-sha256']).toMatch(/^[0-9a-f]{64}$/);
    expect(origin.hits).toHaveLength(1);
  });
});

export type { Socket };
