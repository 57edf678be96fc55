/**
 * Coalescing every miss (issue 27, Must-show 5), over real sockets: concurrent misses wait for the
 * first response and share it when it is storable — heuristic freshness included — or are released
 * at once to fetches of their own when it is not, and the URL is then remembered (hit-for-miss) so
 * the next crowd goes to the origin side by side; negative answers are kept within their cap.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ManualClock } from '@coral/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { topMember } from '../../src/peer/rendezvous.js';
import {
  NODE_A,
  NODE_B,
  T0,
  get,
  httpDate,
  recordingMetrics,
  startOrigin,
  startPair,
  startProxy,
  until,
} from '../helpers/harness.js';
import type { Reply } from '../helpers/harness.js';
import { HmacPeerAuth } from '../helpers/peer-auth.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const CROWD = 50;
/** Connections the proxy opens to one origin at most (src/origin/upstream.ts). */
const ORIGIN_CONNECTIONS = 32;

function crowd(port: number, host: string, path: string, n = CROWD): Promise<Reply[]> {
  return Promise.all(Array.from({ length: n }, () => get(port, host, path)));
}

/**
 * A proxy (its joins counted) and an origin that holds every answer until `release()`; `answer`
 * writes it, given the proxy's clock time when the request arrived.
 */
async function held(answer: (res: ServerResponse, now: number) => void) {
  const metrics = recordingMetrics();
  const px = await startProxy({}, { metrics });
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const origin = await startOrigin((_q, res) => {
    const now = px.clock.now();
    void released.then(() => answer(res, now));
  });
  cleanups.push(
    () => origin.close(),
    () => px.close(),
    () => release(),
  );
  return { px, origin, joined: () => metrics.log.joined, release };
}

describe('concurrent misses share a storable response (Varnish waiting list, nginx proxy_cache_lock)', () => {
  for (const [what, lmAgoMs] of [
    ['modified moments ago (heuristic freshness 0 s)', 2_000],
    ['modified a day ago (heuristic freshness 2.4 h)', 86_400_000],
  ] as const) {
    it(`${CROWD} concurrent misses for a Last-Modified-only response, ${what}: 1 origin fetch`, async () => {
      const { px, origin, joined, release } = await held((res, now) => {
        res.writeHead(200, {
          date: httpDate(now),
          'last-modified': httpDate(now - lmAgoMs),
          'content-length': '11',
        });
        res.end('hello world');
      });
      const replies = crowd(px.port, origin.coralHost, '/file.txt');
      // Every other request is waiting on the first one's fetch before the origin answers.
      await until(() => joined() === CROWD - 1, 'the crowd waiting');
      expect(origin.hits).toHaveLength(1);
      release();
      const rs = await replies;
      expect(origin.hits).toHaveLength(1);
      for (const r of rs) {
        expect(r.status).toBe(200);
        expect(r.body.toString()).toBe('hello world');
      }
      const collapsed = rs.filter((r) => String(r.headers['cache-status']).includes('collapsed'));
      expect(collapsed).toHaveLength(CROWD - 1);
    });
  }

  it('heuristic freshness is reported as it is: Age and Cache-Status ttl, capped by heuristicMaxSeconds', async () => {
    const px = await startProxy({ heuristicMaxSeconds: 3600 });
    const origin = await startOrigin((q, res) => {
      const now = px.clock.now();
      // Modified 10,000 s before: 1,000 s of heuristic freshness; a year before: capped.
      const ago = q.url === '/recent' ? 10_000_000 : 365 * 86_400_000;
      res.writeHead(200, {
        date: httpDate(now),
        'last-modified': httpDate(now - ago),
        'content-length': '2',
      });
      res.end('hi');
    });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    await get(px.port, origin.coralHost, '/recent');
    await get(px.port, origin.coralHost, '/old');
    await px.clock.advance(100_000);
    const recent = await get(px.port, origin.coralHost, '/recent');
    expect(recent.headers['age']).toBe('100');
    expect(recent.headers['cache-status']).toMatch(/hit; ttl=900\b/);
    const old = await get(px.port, origin.coralHost, '/old');
    expect(old.headers['cache-status']).toMatch(/hit; ttl=3500\b/);
    expect(origin.hits).toHaveLength(2);
  });

  it('waiters are not given a response whose explicit freshness is spent (max-age=0): each fetches its own', async () => {
    const { px, origin, joined, release } = await held((res) => {
      res.writeHead(200, { 'cache-control': 'max-age=0', 'content-length': '2' });
      res.end('ok');
    });
    const replies = crowd(px.port, origin.coralHost, '/mx', 5);
    await until(() => joined() === 4, 'the crowd waiting');
    release();
    const rs = await replies;
    // The origin asked for validation: each waiter made its own fetch.
    expect(origin.hits).toHaveLength(5);
    expect(rs.filter((r) => String(r.headers['cache-status']).includes('collapsed'))).toHaveLength(
      0,
    );
  });
});

describe('fleet-wide: the designated fetcher shares a Last-Modified-only response with the members that ask', () => {
  it(`${CROWD} concurrent misses over two nodes, modified moments ago: 1 origin fetch`, async () => {
    const clock = new ManualClock(T0);
    const key = '5a'.repeat(32);
    const f = await startPair({
      body: Buffer.alloc(0),
      clock,
      members: new InMemoryFleetMembers({ recordsAuthenticated: true, rendezvous: true }),
      a: { peerAuth: new HmacPeerAuth(key, clock) },
      b: { peerAuth: new HmacPeerAuth(key, clock) },
    });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    cleanups.push(
      () => f.close(),
      () => release(),
    );
    // The origin answers Last-Modified only (a second before Date: heuristic freshness 0 s).
    f.origin.server.removeAllListeners('request');
    f.origin.server.on('request', (q: IncomingMessage, res: ServerResponse) => {
      f.origin.hits.push({
        method: q.method ?? '',
        url: q.url ?? '',
        headers: q.headers,
        body: Buffer.alloc(0),
      });
      const now = clock.now();
      void released.then(() => {
        res.writeHead(200, {
          date: httpDate(now),
          'last-modified': httpDate(now - 1000),
          'content-length': '5',
        });
        res.end('fleet');
      });
    });
    // A path designated to A: B's misses ask A, whose one fetch they wait on.
    let path = '';
    for (let i = 0; path === ''; i++) {
      const p = `/lm${i}`;
      const b = { nodeId: NODE_B, ip: '127.0.0.4', httpPort: 1, near: true };
      if (topMember(NODE_A, urlKey(f.url(p)), [b]) === undefined) path = p;
    }
    const half = CROWD / 2;
    const replies = Promise.all([
      ...Array.from({ length: half }, () => get(f.a.port, f.origin.coralHost, path)),
      ...Array.from({ length: half }, () =>
        get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4'),
      ),
    ]);
    // A: its own crowd less one, and B's ask; B: its own crowd less one, behind that ask.
    await until(
      () => f.metricsA.joined === half && f.metricsB.joined === half - 1,
      'both crowds waiting',
    );
    expect(f.origin.hits).toHaveLength(1);
    release();
    for (const r of await replies) {
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('fleet');
    }
    expect(f.origin.hits).toHaveLength(1);
  });
});

describe('an uncacheable response releases the crowd at once, and the next crowd does not queue (hit-for-miss)', () => {
  for (const cc of ['private', 'no-store']) {
    it(`Cache-Control: ${cc}`, async () => {
      const px = await startProxy();
      // The origin holds every response (heads too, or only bodies) until it has seen `want`
      // requests at once — as many as the proxy opens to one origin (`Upstream`'s pool, 32), the
      // most that can be in flight there — and answers the rest at once: a crowd serialised
      // behind one fetch would never get there.
      let want = ORIGIN_CONNECTIONS;
      let heads = true;
      const held: Array<{ res: ServerResponse; n: number }> = [];
      const flush = () => {
        if (held.length < want) return;
        want = 0;
        for (const h of held.splice(0)) {
          if (!h.res.headersSent) h.res.writeHead(200, { 'cache-control': cc });
          h.res.end(`for request ${h.n}`);
        }
      };
      const origin = await startOrigin((_q, res) => {
        const n = origin.hits.length;
        if (heads) res.writeHead(200, { 'cache-control': cc, 'transfer-encoding': 'chunked' });
        if (heads) res.write(' ');
        held.push({ res, n });
        flush();
      });
      cleanups.push(
        () => origin.close(),
        () => px.close(),
        () => {
          want = 0;
          flush();
        },
      );
      // The first crowd: one fetch, whose head says `cc`; the waiters are released to fetches of
      // their own at the head (the bodies are still held), so the origin sees 32 at once.
      const first = crowd(px.port, origin.coralHost, '/me');
      await until(() => origin.hits.length === CROWD, 'the first crowd at the origin', 15_000);
      const r1 = await first;
      expect(new Set(r1.map((r) => r.body.toString())).size).toBe(CROWD);
      // The next crowd: the origin now holds even the heads until it has seen 32 at once. Only a
      // crowd that does not queue behind one fetch gets them there.
      heads = false;
      want = ORIGIN_CONNECTIONS;
      const second = crowd(px.port, origin.coralHost, '/me');
      await until(() => origin.hits.length === 2 * CROWD, 'the second crowd at the origin', 15_000);
      const r2 = await second;
      expect(new Set(r2.map((r) => r.body.toString())).size).toBe(CROWD);
      for (const r of r2) {
        expect(r.status).toBe(200);
        expect(String(r.headers['cache-status'])).not.toMatch(/collapsed/);
      }
      expect(await px.proxy.cacheList()).toHaveLength(0);
    });
  }

  it('hit-for-miss ends on the injected clock: the misses coalesce again', async () => {
    const metrics = recordingMetrics();
    const px = await startProxy({}, { metrics });
    let cc = 'private';
    let release: (() => void) | undefined;
    const origin = await startOrigin((_q, res) => {
      const answer = () => {
        res.writeHead(200, { 'cache-control': cc, 'content-length': '1' });
        res.end('x');
      };
      if (release === undefined) answer();
      else void new Promise<void>((r) => (release = r)).then(answer);
    });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    await get(px.port, origin.coralHost, '/h');
    // Within HIT_FOR_MISS_SECONDS: two requests at once are two fetches, neither waits.
    await Promise.all([get(px.port, origin.coralHost, '/h'), get(px.port, origin.coralHost, '/h')]);
    expect(origin.hits).toHaveLength(3);
    expect(metrics.log.joined).toBe(0);
    // Past it: the misses coalesce again (the origin answers once both are there).
    await px.clock.advance(121_000);
    release = () => {};
    cc = 'max-age=600';
    const both = Promise.all([
      get(px.port, origin.coralHost, '/h'),
      get(px.port, origin.coralHost, '/h'),
    ]);
    await until(() => metrics.log.joined === 1, 'the second one waiting');
    release();
    await both;
    expect(origin.hits).toHaveLength(4);
  });

  it('a 5xx releases the waiters but is not remembered: the next crowd still queues, sparing the origin', async () => {
    const metrics = recordingMetrics();
    const px = await startProxy({}, { metrics });
    let held: Promise<void> = Promise.resolve();
    const origin = await startOrigin((_q, res) => {
      void held.then(() => {
        res.writeHead(503, { 'content-length': '4' });
        res.end('busy');
      });
    });
    let release!: () => void;
    cleanups.push(
      () => origin.close(),
      () => px.close(),
      () => release?.(),
    );
    expect((await get(px.port, origin.coralHost, '/down')).status).toBe(503);
    held = new Promise<void>((r) => (release = r));
    const replies = crowd(px.port, origin.coralHost, '/down', 5);
    await until(() => metrics.log.joined === 4, 'the next crowd waiting on one fetch');
    expect(origin.hits).toHaveLength(2);
    release();
    for (const r of await replies) expect(r.status).toBe(503);
  });
});

describe('negative answers are kept within their cap (RFC 9110 §15.1, nginx proxy_cache_valid 404)', () => {
  async function notFound(headers: Record<string, string>, options = {}) {
    const metrics = recordingMetrics();
    const px = await startProxy(options, { metrics });
    const origin = await startOrigin((_q, res) => {
      res.writeHead(404, { date: httpDate(px.clock.now()), 'content-length': '4', ...headers });
      res.end('nope');
    });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    return { px, origin, metrics };
  }

  it('a 404 with no freshness of its own: a hit for 60 s, refetched after it (injected clock)', async () => {
    const { px, origin } = await notFound({});
    const first = await get(px.port, origin.coralHost, '/missing');
    expect(first.status).toBe(404);
    expect(first.headers['cache-status']).toMatch(/fwd=uri-miss; fwd-status=404/);
    await px.clock.advance(59_000);
    const hit = await get(px.port, origin.coralHost, '/missing');
    expect(hit.status).toBe(404);
    expect(hit.body.toString()).toBe('nope');
    expect(hit.headers['cache-status']).toMatch(/hit; ttl=1/);
    expect(hit.headers['age']).toBe('59');
    expect(origin.hits).toHaveLength(1);
    await px.clock.advance(2_000);
    const again = await get(px.port, origin.coralHost, '/missing');
    expect(again.status).toBe(404);
    expect(again.headers['cache-status']).not.toMatch(/hit/);
    expect(origin.hits).toHaveLength(2);
  });

  it('negativeTtlSeconds sets the cap; 0 keeps none', async () => {
    const short = await notFound({}, { negativeTtlSeconds: 5 });
    await get(short.px.port, short.origin.coralHost, '/m');
    await short.px.clock.advance(4_000);
    await get(short.px.port, short.origin.coralHost, '/m');
    expect(short.origin.hits).toHaveLength(1);
    await short.px.clock.advance(2_000);
    await get(short.px.port, short.origin.coralHost, '/m');
    expect(short.origin.hits).toHaveLength(2);
    const off = await notFound({}, { negativeTtlSeconds: 0 });
    await get(off.px.port, off.origin.coralHost, '/m');
    await get(off.px.port, off.origin.coralHost, '/m');
    expect(off.origin.hits).toHaveLength(2);
  });

  it("a 404's explicit freshness is obeyed as sent, beyond the cap", async () => {
    const { px, origin } = await notFound({ 'cache-control': 'max-age=3600' });
    await get(px.port, origin.coralHost, '/gone');
    await px.clock.advance(600_000);
    expect((await get(px.port, origin.coralHost, '/gone')).headers['cache-status']).toMatch(/hit/);
    expect(origin.hits).toHaveLength(1);
  });

  it('a 410 is kept the same way, and a crowd asking for it makes one origin fetch', async () => {
    const { px, origin, joined, release } = await held((res, now) => {
      res.writeHead(410, { date: httpDate(now), 'content-length': '4' });
      res.end('gone');
    });
    const replies = crowd(px.port, origin.coralHost, '/old');
    await until(() => joined() === CROWD - 1, 'the crowd waiting');
    release();
    for (const r of await replies) expect(r.status).toBe(410);
    expect(origin.hits).toHaveLength(1);
    expect((await get(px.port, origin.coralHost, '/old')).headers['cache-status']).toMatch(/hit/);
    expect(origin.hits).toHaveLength(1);
  });
});
