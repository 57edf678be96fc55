import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { CoralProxy } from '../../src/proxy/coral-proxy.js';
import { urlKey } from '../../src/mapping/coral-name.js';
import { T0, get, startOrigin, startProxy, until } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BODY = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 13) % 256));
const SHA = createHash('sha256').update(BODY).digest('hex');

interface Fleet {
  clock: ManualClock;
  index: InMemoryContentIndex;
  members: InMemoryFleetMembers;
  origin: Origin;
  a: ProxyHarness;
  b: ProxyHarness;
  events: unknown[];
  url: string;
}

async function fleet(
  originHold?: Promise<void>,
  peerTimeoutMs = 1_000,
  reannounceIntervalMs = 600_000,
): Promise<Fleet> {
  const clock = new ManualClock(T0);
  const index = new InMemoryContentIndex({ clock });
  // Keyed mode: records are authenticated, so a verified peer copy is stored and announced.
  const members = new InMemoryFleetMembers({ recordsAuthenticated: true });
  const origin = await startOrigin((_q, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(BODY.length) });
    res.write(BODY.subarray(0, 1000));
    if (originHold) void originHold.then(() => res.end(BODY.subarray(1000)));
    else res.end(BODY.subarray(1000));
  });
  const events: unknown[] = [];
  const logger = {
    debug: (o: unknown) => events.push(o),
    info() {},
    warn: (o: unknown) => events.push(o),
    error() {},
  };
  const a = await startProxy(
    {
      self: { nodeId: 'aa'.repeat(20), ip: '127.0.0.1', httpPort: 0 },
      peerTimeoutMs,
      reannounceIntervalMs,
    },
    { clock, index, members },
    '127.0.0.1',
  );
  const b = await startProxy(
    {
      self: { nodeId: 'bb'.repeat(20), ip: '127.0.0.4', httpPort: 0 },
      peerTimeoutMs,
      // These tests are about streamed member copies, as every copy larger than
      // PEER_VERIFY_WHOLE_BYTES is (smaller ones: test/adversary/lying-member.spec.ts).
      peerVerifyWholeBytes: 0,
    },
    { clock, index, logger, members },
    '127.0.0.4',
  );
  members.set('aa'.repeat(20), { ip: '127.0.0.1', httpPort: a.port });
  members.set('bb'.repeat(20), { ip: '127.0.0.4', httpPort: b.port });
  cleanups.push(
    () => origin.close(),
    () => a.close(),
    () => b.close(),
  );
  return {
    clock,
    index,
    members,
    origin,
    a,
    b,
    events,
    url: `http://origin.test:${origin.port}/obj`,
  };
}

const fromB = (f: Fleet, headers: Record<string, string> = {}) =>
  get(f.b.port, f.origin.coralHost, '/obj', headers, 'GET', '127.0.0.4');
const fromA = (f: Fleet) => get(f.a.port, f.origin.coralHost, '/obj', {}, 'GET', '127.0.0.1');

/** A fake fleet member: `behaviour` decides what it does with a peer request. */
async function fakePeer(
  behaviour: 'lie' | 'stall' | 'stall-mid-body',
): Promise<{ port: number; requests: Array<Record<string, unknown>> }> {
  const requests: Array<Record<string, unknown>> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    requests.push(req.headers);
    if (behaviour === 'lie') {
      const wrong = Buffer.from(BODY);
      wrong[100] = wrong[100]! ^ 0xff;
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        'content-length': String(wrong.length),
      });
      res.end(wrong);
    } else if (behaviour === 'stall-mid-body') {
      res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(BODY.length) });
      res.write(BODY.subarray(0, 1000));
    }
    // 'stall': never answers.
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.5', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { port: (server.address() as AddressInfo).port, requests };
}

describe('cooperation through the ContentIndex', () => {
  it("B's miss is served from A: the origin sees one request in total; announcements as specified", async () => {
    const f = await fleet();
    const ra = await fromA(f);
    expect(ra.body.equals(BODY)).toBe(true);
    const key = Buffer.from(urlKey(f.url)).toString('hex');
    const aAnn = f.index.log.filter(
      (e) => e.op === 'announce' && e.holder?.nodeId === 'aa'.repeat(20),
    );
    expect(aAnn.map((e) => [e.holder!.state, e.ttl])).toEqual([
      ['fetching', 20],
      ['complete', 600], // capped by freshness (max-age=600 < 1 h)
    ]);
    expect(aAnn[1]!.holder).toMatchObject({
      size: BODY.length,
      sha256: SHA,
      ip: '127.0.0.1',
      httpPort: f.a.port,
    });
    expect(aAnn.every((e) => e.key === key)).toBe(true);

    const rb = await fromB(f);
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(
      /^Coral; fwd=peer; fwd-status=200; detail=peer-aaaa/,
    );
    expect(f.origin.hits).toHaveLength(1);
    // B now holds it too, and serves it from its own cache.
    const rb2 = await fromB(f);
    expect(rb2.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(
      f.index.log.some(
        (e) =>
          e.op === 'announce' &&
          e.holder?.nodeId === 'bb'.repeat(20) &&
          e.holder.state === 'complete',
      ),
    ).toBe(true);
    expect(f.origin.hits).toHaveLength(1);
  });

  it('a peer that is still fetching streams its in-flight fetch to B (fleet-wide coalescing)', async () => {
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const f = await fleet(hold);
    const pa = fromA(f);
    await until(() => f.origin.hits.length === 1, 'A fetching');
    await until(
      () => f.index.log.some((e) => e.op === 'announce' && e.holder?.state === 'fetching'),
      'fetching announced',
    );
    const pb = fromB(f);
    await until(
      () => f.a.proxy !== undefined && f.index.log.filter((e) => e.op === 'lookup').length >= 2,
      'B looked up',
    );
    release();
    const [ra, rb] = await Promise.all([pa, pb]);
    expect(ra.body.equals(BODY)).toBe(true);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(/fwd=peer/);
    expect(f.origin.hits).toHaveLength(1);
  });

  it('a peer returning wrong bytes is detected at the end: the client streaming them is cut off, nothing is stored, the next request goes to the origin', async () => {
    const f = await fleet();
    const liar = await fakePeer('lie');
    f.members.set('cc'.repeat(20), { ip: '127.0.0.5', httpPort: liar.port });
    f.index.set(urlKey(f.url), {
      nodeId: 'cc'.repeat(20),
      ip: '127.0.0.5',
      httpPort: liar.port,
      state: 'complete',
      size: BODY.length,
      sha256: SHA,
    });
    // The body streams to the client as it arrives; its hash is known only at the end, so the
    // last byte is held back and the connection aborted: never a complete-looking wrong body.
    await expect(fromB(f)).rejects.toThrow();
    expect(liar.requests).toHaveLength(1);
    expect(liar.requests[0]!['x-coral-peer']).toBe('bb'.repeat(20));
    expect(liar.requests[0]!['cache-control']).toBe('only-if-cached');
    expect(await f.b.proxy.cacheList()).toEqual([]);
    expect(f.origin.hits).toHaveLength(0);
    // The liar is skipped for a while: the next request goes to the origin.
    const rb = await fromB(f);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(liar.requests).toHaveLength(1);
    expect(f.origin.hits).toHaveLength(1);
    await until(async () => (await f.b.proxy.cacheList()).length === 1, 'stored');
    const list = await f.b.proxy.cacheList();
    expect(list.map((e) => e.sha256)).toEqual([SHA]);
  });

  it('a peer that refuses connections costs B no clock time at all', async () => {
    const f = await fleet();
    const dead = await fakePeer('stall');
    await cleanups.pop()!(); // close it: its port now refuses
    f.members.set('dd'.repeat(20), { ip: '127.0.0.5', httpPort: dead.port });
    f.index.set(urlKey(f.url), {
      nodeId: 'dd'.repeat(20),
      ip: '127.0.0.5',
      httpPort: dead.port,
      state: 'complete',
      size: BODY.length,
      sha256: SHA,
    });
    const before = f.clock.now();
    const rb = await fromB(f);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(f.clock.now() - before).toBe(0);
    expect(f.events.some((e) => (e as { type?: string }).type === 'peer-error')).toBe(true);
  });

  for (const mode of ['stall', 'stall-mid-body'] as const) {
    it(`a peer that ${mode === 'stall' ? 'never answers' : 'stops mid-body'} costs B exactly peerTimeoutMs (1000 ms of clock) before the origin`, async () => {
      const f = await fleet(undefined, 1_000);
      const slow = await fakePeer(mode);
      f.members.set('ee'.repeat(20), { ip: '127.0.0.5', httpPort: slow.port });
      f.index.set(urlKey(f.url), {
        nodeId: 'ee'.repeat(20),
        ip: '127.0.0.5',
        httpPort: slow.port,
        state: 'complete',
        size: BODY.length,
        sha256: SHA,
      });
      let settled = false;
      let received = 0;
      const pb = (
        mode === 'stall'
          ? fromB(f)
          : new Promise<Buffer>((resolve, reject) => {
              // Watch the bytes arrive: the member's head and first bytes reach the client.
              const req = request(
                {
                  host: '127.0.0.4',
                  port: f.b.port,
                  path: '/obj',
                  headers: { host: f.origin.coralHost },
                  agent: false,
                },
                (res) => {
                  res.on('data', (c: Buffer) => (received += c.length));
                  res.on('end', () => resolve(Buffer.alloc(received)));
                  res.on('error', reject);
                  res.on('aborted', () => reject(new Error('aborted')));
                },
              );
              req.on('error', reject);
              req.end();
            })
      ).finally(() => (settled = true));
      await until(() => slow.requests.length === 1, 'peer request arrived');
      // The patience runs between body bytes once the member has answered: wait for its bytes.
      if (mode === 'stall-mid-body')
        await until(() => received >= 999, 'first bytes at the client');
      await f.clock.advance(999);
      expect(f.origin.hits).toHaveLength(0);
      expect(settled).toBe(false);
      await f.clock.advance(1);
      if (mode === 'stall') {
        // No answer in time: the same request goes on to the origin.
        const rb = (await pb) as Awaited<ReturnType<typeof fromB>>;
        expect(rb.body.equals(BODY)).toBe(true);
        expect(f.origin.hits).toHaveLength(1);
      } else {
        // The client already had the head and the first bytes: its connection is cut, nothing is
        // stored, and the stalled member is skipped by the next request.
        await expect(pb).rejects.toThrow();
        expect(await f.b.proxy.cacheList()).toEqual([]);
        const rb = await fromB(f);
        expect(rb.body.equals(BODY)).toBe(true);
        expect(slow.requests).toHaveLength(1);
        expect(f.origin.hits).toHaveLength(1);
      }
    });
  }

  it('re-announces stored objects while they stay fresh (TTL capped by freshness), and purge withdraws', async () => {
    const f = await fleet(undefined, 1_000, 60_000);
    await fromA(f);
    const complete = () =>
      f.index.log.filter(
        (e) =>
          e.op === 'announce' &&
          e.holder?.nodeId === 'aa'.repeat(20) &&
          e.holder.state === 'complete',
      );
    expect(complete().map((e) => e.ttl)).toEqual([600]);
    await f.clock.advance(60_000);
    expect(complete().map((e) => e.ttl)).toEqual([600, 540]);
    await f.clock.advance(600_000); // sweeps at 120 s ... 540 s announce; at 600 s it is stale: no more
    expect(complete().map((e) => e.ttl)).toEqual([600, 540, 480, 420, 360, 300, 240, 180, 120, 60]);
    expect(await f.a.proxy.purge(f.url)).toBe(true);
    expect(f.index.log.at(-1)!.op).toBe('withdraw');
    expect(await f.index.lookup(urlKey(f.url))).toEqual([]);
    expect(await f.a.proxy.purge(f.url)).toBe(false);
  });

  it('an index that never answers costs at most indexTimeoutMs of clock before the origin', async () => {
    const clock = new ManualClock(T0);
    let lookups = 0;
    const stuck = {
      lookup: () => {
        lookups++;
        return new Promise<never>(() => {});
      },
      announce: async () => {},
    };
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60' });
      res.end('from origin');
    });
    const proxy = new CoralProxy(
      { index: stuck, clock, members: new InMemoryFleetMembers() },
      {
        allowPrivateOrigins: true,
        hosts: { 'origin.test': ['127.0.0.2'] },
        self: { nodeId: 'ab'.repeat(20), ip: '127.0.0.1', httpPort: 0 },
        indexTimeoutMs: 2_000,
      },
    );
    const { port } = await proxy.listen(0, '127.0.0.1');
    cleanups.push(
      () => origin.close(),
      () => proxy.close(),
    );
    let settled = false;
    const p = get(port, origin.coralHost, '/').finally(() => (settled = true));
    await until(() => lookups === 1, 'lookup started');
    await clock.advance(1_999);
    expect(settled).toBe(false);
    expect(origin.hits).toHaveLength(0);
    await clock.advance(1);
    expect((await p).body.toString()).toBe('from origin');
  });

  it('a holder that announced `fetching` gets peerFetchingTimeoutMs to answer (its origin is slow), a complete one peerTimeoutMs', async () => {
    const clock = new ManualClock(T0);
    const index = new InMemoryContentIndex({ clock });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const origin = await startOrigin((_q, res) => {
      // Response headers only after the release: A's fetch is "in flight" for a while.
      void released.then(() => {
        res.writeHead(200, {
          'cache-control': 'max-age=600',
          'content-length': String(BODY.length),
        });
        res.end(BODY);
      });
    });
    const opts = { peerTimeoutMs: 1_000, peerFetchingTimeoutMs: 3_000 };
    const members = new InMemoryFleetMembers({ recordsAuthenticated: true });
    const a = await startProxy(
      { ...opts, self: { nodeId: 'aa'.repeat(20), ip: '127.0.0.1', httpPort: 0 } },
      { clock, index, members },
      '127.0.0.1',
    );
    const b = await startProxy(
      { ...opts, self: { nodeId: 'bb'.repeat(20), ip: '127.0.0.4', httpPort: 0 } },
      { clock, index, members },
      '127.0.0.4',
    );
    members.set('aa'.repeat(20), { ip: '127.0.0.1', httpPort: a.port });
    cleanups.push(
      () => origin.close(),
      () => a.close(),
      () => b.close(),
    );
    const pa = get(a.port, origin.coralHost, '/obj', {}, 'GET', '127.0.0.1');
    await until(() => origin.hits.length === 1, 'A fetching');
    await until(
      () => index.log.some((e) => e.op === 'announce' && e.holder?.state === 'fetching'),
      'announced',
    );
    const pb = get(b.port, origin.coralHost, '/obj', {}, 'GET', '127.0.0.4');
    await until(() => index.log.filter((e) => e.op === 'lookup').length === 2, 'B looked up A');
    await clock.advance(2_999); // longer than peerTimeoutMs: B still waits for A
    expect(origin.hits).toHaveLength(1);
    release();
    const [ra, rb] = await Promise.all([pa, pb]);
    expect(ra.body.equals(BODY)).toBe(true);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(/fwd=peer/);
    expect(origin.hits).toHaveLength(1);
  });

  it('a stalled `fetching` holder costs exactly peerFetchingTimeoutMs (3000 ms of clock)', async () => {
    const f = await fleet(undefined, 1_000);
    const slow = await fakePeer('stall');
    f.members.set('ff'.repeat(20), { ip: '127.0.0.5', httpPort: slow.port });
    f.index.set(urlKey(f.url), {
      nodeId: 'ff'.repeat(20),
      ip: '127.0.0.5',
      httpPort: slow.port,
      state: 'fetching',
    });
    let settled = false;
    const pb = fromB(f).finally(() => (settled = true));
    await until(() => slow.requests.length === 1, 'peer request arrived');
    await f.clock.advance(2_999);
    expect(settled).toBe(false);
    expect(f.origin.hits).toHaveLength(0);
    await f.clock.advance(1);
    expect((await pb).body.equals(BODY)).toBe(true);
    expect(f.origin.hits).toHaveLength(1);
  });
});
