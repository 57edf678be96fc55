/**
 * Adversary: a lying member (issue 31, item 3). A member holds the fleet key, so its signature
 * and its holder records are genuine; the asker must still judge what it asks for and what it
 * gets. Over real sockets on loopback, with a member that answers whatever it likes:
 * - a name whose origin the asker itself would refuse (a name mapped to 169.254.169.254, a
 *   private address) gets the asker's 403 without any request to a member, whether the member
 *   is the designated fetcher or an announced holder;
 * - the freshness a member declares is capped by the asker's own limit (`peerMaxTtlSeconds`): a
 *   member's lie stops being served within that, when the asker revalidates with the origin,
 *   even after the member left (with or without validators to revalidate with);
 * - a member's copy that fails its integrity check (wrong SHA-256, cut short) is caught before
 *   a byte of it is sent (copies up to `peerVerifyWholeBytes`): the client gets the origin's
 *   page, no "socket hang up", and the failure is counted;
 * - a larger copy that stalls or is cut short after 3 MiB of 4 is completed from the origin by
 *   one `Range: bytes=3145728-` / `If-Range` request: the client gets all 4 MiB byte-exact; an
 *   origin that ignores the Range (200) leaves the client's transfer incomplete, nothing stored;
 *   a member whose first bytes were wrong is caught by the assembled hash, its clients cut off,
 *   and it is quarantined.
 */
import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { topMember } from '../../src/peer/rendezvous.js';
import type { ProxyMetrics, ProxyOptions } from '../../src/proxy/types.js';
import { PEER_FETCHING_TIMEOUT_MS, PEER_MAX_TTL_SECONDS } from '../../src/constants.js';
import {
  NODE_B as B,
  T0,
  closer,
  get,
  startOrigin,
  startProxy,
  until,
} from '../helpers/harness.js';
import type { ProxyHarness } from '../helpers/harness.js';
import { HmacPeerAuth } from '../helpers/peer-auth.js';

const LIAR = 'cc'.repeat(20);
const KEY = '5a'.repeat(32);
const LIE = Buffer.from('the member says so\n'.repeat(50));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Liar {
  port: number;
  requests: Array<{ url: string; headers: IncomingHttpHeaders }>;
}

async function startLiar(answer: (res: ServerResponse, url: string) => void): Promise<Liar> {
  const state: Liar = { port: 0, requests: [] };
  const server = createServer((req, res) => {
    state.requests.push({ url: req.url ?? '', headers: req.headers });
    answer(res, req.url ?? '');
  });
  cleanups.push(closer(server));
  await new Promise<void>((r) => server.listen(0, '127.0.0.5', r));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

const lie = (res: ServerResponse) => {
  res.writeHead(200, {
    'cache-control': 'max-age=86400',
    'content-type': 'text/html',
    'content-length': String(LIE.length),
  });
  res.end(LIE);
};

interface Asker {
  px: ProxyHarness;
  members: InMemoryFleetMembers;
  index: InMemoryContentIndex;
  clock: ManualClock;
}

/** Proxy B, keyed (a real HMAC PeerAuth), with the liar as a live member. */
async function asker(
  liar: Liar,
  options: Partial<ProxyOptions> = {},
  metrics?: ProxyMetrics,
): Promise<Asker> {
  const clock = new ManualClock(T0);
  const index = new InMemoryContentIndex({ clock });
  const members = new InMemoryFleetMembers({ recordsAuthenticated: true, rendezvous: true });
  const px = await startProxy(
    { self: { nodeId: B, ip: '127.0.0.4', httpPort: 0 }, ...options },
    {
      clock,
      index,
      members,
      peerAuth: new HmacPeerAuth(KEY, clock),
      ...(metrics ? { metrics } : {}),
    },
    '127.0.0.4',
  );
  members.set(B, { ip: '127.0.0.4', httpPort: px.port });
  members.set(LIAR, { ip: '127.0.0.5', httpPort: liar.port });
  cleanups.push(() => px.close());
  return { px, members, index, clock };
}

/** A path of `origin` whose designated fetcher, for B, is the liar (`designated`) or B itself. */
function pathWhere(origin: string, designated: boolean): string {
  const live = [{ nodeId: LIAR, ip: '127.0.0.5', httpPort: 1, near: true }];
  for (let i = 0; ; i++) {
    const path = `/p${i}`;
    const top = topMember(B, urlKey(`${origin}${path}`), live);
    if ((top?.nodeId === LIAR) === designated) return path;
  }
}

describe("the asker's own origin policy comes before any member", () => {
  const forbidden = [
    ['a name mapped to the metadata address', 'meta.test.nyud.net', 'http://meta.test'],
    ['a link-local literal', '169.254.169.254.nyud.net', 'http://169.254.169.254'],
    ['a name mapped to a private address', 'inside.test.8080.nyud.net', 'http://inside.test:8080'],
  ] as const;

  for (const [what, host, origin] of forbidden) {
    it(`${what}: 403 from the asker, the member never asked (designated or holder)`, async () => {
      const liar = await startLiar(lie);
      const a = await asker(liar, {
        allowPrivateOrigins: false,
        hosts: { 'meta.test': ['169.254.169.254'], 'inside.test': ['10.1.2.3'] },
      });
      // The liar is the designated fetcher of one path, and announced as holder of another.
      const designated = pathWhere(origin, true);
      const held = pathWhere(origin, false);
      a.index.set(urlKey(`${origin}${held}`), {
        nodeId: LIAR,
        ip: '127.0.0.5',
        httpPort: liar.port,
        state: 'complete',
        size: LIE.length,
      });
      for (const path of [designated, held]) {
        const r = await get(a.px.port, host, path, {}, 'GET', '127.0.0.4');
        expect(r.status, path).toBe(403);
        expect(r.headers['x-coral-error'], path).toBe('CORAL_ORIGIN_FORBIDDEN');
        expect(r.body.toString()).not.toContain('the member says so');
      }
      expect(liar.requests).toEqual([]);
      expect(await a.px.proxy.cacheList()).toEqual([]);
    });
  }

  it('an allowed origin is still asked of the designated member', async () => {
    const liar = await startLiar(lie);
    const a = await asker(liar, { allowPrivateOrigins: true });
    const path = pathWhere('http://origin.test', true);
    const r = await get(a.px.port, 'origin.test.nyud.net', path, {}, 'GET', '127.0.0.4');
    expect(r.status).toBe(200);
    expect(liar.requests).toHaveLength(1);
  });
});

describe("a member's freshness is capped by the asker's own limits", () => {
  async function withOrigin() {
    const origin = await startOrigin((_req, res) => {
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        etag: '"real"',
        'content-length': '15',
      });
      res.end('the origin page');
    });
    cleanups.push(() => origin.close());
    return origin;
  }

  it('a day declared by a member is an hour here; past it the origin answers, the member gone', async () => {
    const origin = await withOrigin();
    const liar = await startLiar((res) => {
      res.writeHead(200, {
        'cache-control': 'max-age=86400',
        etag: '"lie"',
        'content-length': String(LIE.length),
      });
      res.end(LIE);
    });
    const a = await asker(liar);
    const path = pathWhere(`http://origin.test:${origin.port}`, true);
    const first = await get(a.px.port, origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(first.body.equals(LIE)).toBe(true);
    expect(first.headers['cache-status']).toMatch(/fwd=peer/);
    // Stored as an hour-fresh copy: its age is what the member's day leaves an hour of.
    expect(Number(first.headers['age'])).toBe(86_400 - PEER_MAX_TTL_SECONDS);
    const [entry] = await a.px.proxy.cacheList();
    expect(entry!.expiresAt).toBe(a.clock.now() + PEER_MAX_TTL_SECONDS * 1000);
    // Within the hour: a hit. Then the member leaves, the hour ends.
    expect(
      (await get(a.px.port, origin.coralHost, path, {}, 'GET', '127.0.0.4')).headers[
        'cache-status'
      ],
    ).toMatch(/^Coral; hit/);
    a.members.delete(LIAR);
    await a.clock.advance(PEER_MAX_TTL_SECONDS * 1000 + 1000);
    const later = await get(a.px.port, origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(later.body.toString()).toBe('the origin page');
    expect(origin.hits).toHaveLength(1);
    expect(origin.hits[0]!.headers['if-none-match']).toBe('"lie"');
    expect(liar.requests).toHaveLength(1);
  });

  it("a member's copy without validators: past the cap the asker fetches the origin's whole page", async () => {
    const origin = await withOrigin();
    const liar = await startLiar(lie); // max-age=86400, neither ETag nor Last-Modified
    const a = await asker(liar);
    const path = pathWhere(`http://origin.test:${origin.port}`, true);
    const r = await get(a.px.port, origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(r.body.equals(LIE)).toBe(true);
    await a.clock.advance(PEER_MAX_TTL_SECONDS * 1000 + 1000);
    const later = await get(a.px.port, origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(later.body.toString()).toBe('the origin page');
    // Nothing to validate with: an unconditional request, whose answer replaces the copy.
    expect(origin.hits).toHaveLength(1);
    expect(origin.hits[0]!.headers['if-none-match']).toBeUndefined();
    expect(liar.requests).toHaveLength(1);
  });
});

describe('a failed integrity check from a member falls back to the origin for that client', () => {
  const PAGE = Buffer.from('the origin page\n'.repeat(400));
  const SHA = createHash('sha256').update(PAGE).digest('hex');

  async function setup(answer: (res: ServerResponse) => void) {
    const origin = await startOrigin((_req, res) => {
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        etag: '"real"',
        'content-length': String(PAGE.length),
      });
      res.end(PAGE);
    });
    cleanups.push(() => origin.close());
    const liar = await startLiar(answer);
    const outcomes: string[] = [];
    const metrics: ProxyMetrics = {
      request() {},
      originFetch() {},
      peerFetch() {},
      rateLimited() {},
      peerIntegrity: (o) => outcomes.push(o),
    };
    const a = await asker(liar, {}, metrics);
    const path = pathWhere(`http://origin.test:${origin.port}`, true);
    return { origin, liar, a, path, outcomes };
  }

  const head = (res: ServerResponse) =>
    res.writeHead(200, {
      'cache-control': 'max-age=600',
      etag: '"real"',
      'x-coral-sha256': SHA, // the right hash...
      'content-length': String(PAGE.length),
    });

  it('wrong bytes under the right SHA-256: the client gets the origin page, counted, the member skipped', async () => {
    const s = await setup((res) => {
      head(res);
      const wrong = Buffer.from(PAGE);
      wrong[100] = wrong[100]! ^ 1; // ...for other bytes
      res.end(wrong);
    });
    const r = await get(s.a.px.port, s.origin.coralHost, s.path, {}, 'GET', '127.0.0.4');
    expect(r.status).toBe(200);
    expect(r.body.equals(PAGE)).toBe(true);
    expect(r.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(s.outcomes).toEqual(['origin']);
    expect(s.origin.hits).toHaveLength(1);
    expect((await s.a.px.proxy.cacheList()).map((e) => e.sha256)).toEqual([SHA]);
  });

  it('a copy cut short: the client gets the origin page, not a hang-up', async () => {
    const s = await setup((res) => {
      head(res);
      res.write(PAGE.subarray(0, 1000));
      setImmediate(() => res.socket?.destroy());
    });
    const r = await get(s.a.px.port, s.origin.coralHost, s.path, {}, 'GET', '127.0.0.4');
    expect(r.body.equals(PAGE)).toBe(true);
    expect(s.outcomes).toEqual(['origin']);
    expect(s.liar.requests).toHaveLength(1);
  });
});

describe("a member's large copy that stops mid-body is completed from the origin", () => {
  const MIB = 1024 * 1024;
  const BIG = Buffer.alloc(4 * MIB);
  for (let i = 0; i < BIG.length; i += 4) BIG.writeUInt32BE((i * 2654435761) >>> 0, i);
  const BIG_SHA = createHash('sha256').update(BIG).digest('hex');
  const SENT = 3 * MIB;
  const ETAG = '"v1"';

  /**
   * An origin that answers `Range` under `If-Range: "v1"` with 206 — or ignores Range (200), or
   * answers 206 under another ETag (an origin that does not check If-Range, the object changed).
   */
  type OriginMode = 'ranges' | 'ignores-range' | 'other-etag';
  async function bigOrigin(mode: OriginMode) {
    const origin = await startOrigin((req, res) => {
      const m = /^bytes=([0-9]+)-$/.exec(req.headers.range ?? '');
      const fields = {
        'cache-control': 'max-age=600',
        etag: mode === 'other-etag' ? '"v2"' : ETAG,
      };
      if (
        mode !== 'ignores-range' &&
        m &&
        (req.headers['if-range'] === ETAG || mode === 'other-etag')
      ) {
        const from = Number(m[1]);
        res.writeHead(206, {
          ...fields,
          'content-range': `bytes ${from}-${BIG.length - 1}/${BIG.length}`,
          'content-length': String(BIG.length - from),
        });
        res.end(BIG.subarray(from));
        return;
      }
      res.writeHead(200, { ...fields, 'content-length': String(BIG.length) });
      res.end(BIG);
    });
    cleanups.push(() => origin.close());
    return origin;
  }

  /** A member that sends the head (announcing `BIG_SHA`), `first`, then `then` (stall or close). */
  function member(first: Buffer, then: 'stall' | 'close', announce = true) {
    return (res: ServerResponse) => {
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        etag: ETAG,
        ...(announce ? { 'x-coral-sha256': BIG_SHA } : {}),
        'content-length': String(BIG.length),
      });
      res.write(first, () => {
        if (then === 'close') res.socket?.end();
      });
    };
  }

  interface Reading {
    received: () => number;
    done: Promise<{ complete: boolean; body: Buffer; length: number | undefined }>;
  }

  /** A client reading the object as it comes; `complete`: it got the whole declared length. */
  function read(port: number, host: string, path: string): Reading {
    const chunks: Buffer[] = [];
    let received = 0;
    const done = new Promise<{ complete: boolean; body: Buffer; length: number | undefined }>(
      (resolve) => {
        const req = request(
          { host: '127.0.0.4', port, path, headers: { host }, agent: false },
          (res: IncomingMessage) => {
            const cl = res.headers['content-length'];
            const length = cl === undefined ? undefined : Number(cl);
            const end = (complete: boolean) =>
              resolve({ complete, body: Buffer.concat(chunks), length });
            res.on('data', (c: Buffer) => {
              chunks.push(c);
              received += c.length;
            });
            res.on('end', () => end(res.complete && received === length));
            res.on('error', () => end(false));
            res.on('aborted', () => end(false));
          },
        );
        req.on('error', () =>
          resolve({ complete: false, body: Buffer.concat(chunks), length: undefined }),
        );
        req.end();
      },
    );
    return { received: () => received, done };
  }

  async function setup(answer: (res: ServerResponse) => void, mode: OriginMode = 'ranges') {
    const origin = await bigOrigin(mode);
    const liar = await startLiar(answer);
    const outcomes: string[] = [];
    const metrics: ProxyMetrics = {
      request() {},
      originFetch() {},
      peerFetch() {},
      rateLimited() {},
      peerIntegrity: (o) => outcomes.push(o),
    };
    const a = await asker(liar, {}, metrics);
    const path = pathWhere(`http://origin.test:${origin.port}`, true);
    return { origin, liar, a, path, outcomes };
  }

  /** The client reads until the member's part is in (its last byte held back), then the stall bound runs out. */
  async function stallPast(s: Awaited<ReturnType<typeof setup>>, r: Reading) {
    await until(() => r.received() >= SENT - 1, 'the member part at the client');
    await s.a.clock.advance(PEER_FETCHING_TIMEOUT_MS + 1);
  }

  for (const then of ['stall', 'close'] as const) {
    it(`3 MiB of 4 then ${then === 'stall' ? 'a stall' : 'the connection closed'}: the client gets all 4 MiB, one Range request`, async () => {
      const s = await setup(member(BIG.subarray(0, SENT), then));
      const r = read(s.a.px.port, s.origin.coralHost, s.path);
      if (then === 'stall') await stallPast(s, r);
      const got = await r.done;
      expect(got.complete).toBe(true);
      expect(got.body.equals(BIG)).toBe(true);
      expect(s.origin.hits).toHaveLength(1);
      expect(s.origin.hits[0]!.headers['range']).toBe(`bytes=${SENT}-`);
      expect(s.origin.hits[0]!.headers['if-range']).toBe(ETAG);
      expect(s.outcomes).toEqual(['resumed']);
      // The whole matched the member's SHA-256 under the origin's validators: stored, and the
      // member (honest, only failing) not quarantined.
      await until(async () => (await s.a.px.proxy.cacheList()).length === 1, 'the commit');
      expect((await s.a.px.proxy.cacheList()).map((e) => e.sha256)).toEqual([BIG_SHA]);
      expect(s.a.px.proxy.quarantine().quarantined).toEqual([]);
    });
  }

  it('an origin that ignores the Range (200): the client sees its transfer end early, nothing stored', async () => {
    const s = await setup(member(BIG.subarray(0, SENT), 'close'), 'ignores-range');
    const got = await read(s.a.px.port, s.origin.coralHost, s.path).done;
    expect(got.complete).toBe(false);
    expect(got.length).toBe(BIG.length);
    expect(got.body.length).toBeLessThan(BIG.length);
    // Never two versions spliced: what the client got is the member's part only.
    expect(got.body.equals(BIG.subarray(0, got.body.length))).toBe(true);
    expect(s.origin.hits).toHaveLength(1);
    expect(s.origin.hits[0]!.headers['range']).toBe(`bytes=${SENT}-`);
    expect(s.outcomes).toEqual(['aborted']);
    expect(await s.a.px.proxy.cacheList()).toEqual([]);
    expect(s.a.px.proxy.quarantine().quarantined).toEqual([]);
  });

  it('a member that lied in its first bytes then truncated: the assembled hash is wrong, the client cut off, the member quarantined', async () => {
    const wrong = Buffer.from(BIG.subarray(0, SENT));
    wrong[4096] = wrong[4096]! ^ 0xff;
    const s = await setup(member(wrong, 'close'));
    const got = await read(s.a.px.port, s.origin.coralHost, s.path).done;
    expect(got.complete).toBe(false);
    expect(got.body.length).toBeLessThan(BIG.length);
    expect(s.origin.hits).toHaveLength(1);
    expect(s.outcomes).toEqual(['aborted']);
    expect(await s.a.px.proxy.cacheList()).toEqual([]);
    const q = s.a.px.proxy.quarantine().quarantined;
    expect(q.map((e) => [e.nodeId, e.found, e.evidence.proof])).toEqual([[LIAR, 'stream', true]]);
    expect(q[0]!.evidence.member.sha256).toBe(BIG_SHA);
    expect(q[0]!.evidence.origin.sha256).not.toBe(BIG_SHA);
  });

  it('an origin whose 206 names another ETag: the rest is refused, the client sees its transfer end early', async () => {
    const s = await setup(member(BIG.subarray(0, SENT), 'close'), 'other-etag');
    const got = await read(s.a.px.port, s.origin.coralHost, s.path).done;
    expect(got.complete).toBe(false);
    expect(got.body.equals(BIG.subarray(0, got.body.length))).toBe(true);
    expect(got.body.length).toBeLessThanOrEqual(SENT);
    expect(s.origin.hits).toHaveLength(1);
    expect(s.outcomes).toEqual(['aborted']);
    expect(await s.a.px.proxy.cacheList()).toEqual([]);
  });

  it('a member that announced no SHA-256: completed for the client, not stored (its part is unchecked)', async () => {
    const s = await setup(member(BIG.subarray(0, SENT), 'close', false));
    const got = await read(s.a.px.port, s.origin.coralHost, s.path).done;
    expect(got.complete).toBe(true);
    expect(got.body.equals(BIG)).toBe(true);
    expect(s.outcomes).toEqual(['resumed']);
    expect(await s.a.px.proxy.cacheList()).toEqual([]);
  });
});
