/**
 * One fetcher per object (src/peer/rendezvous.ts): a miss asks the member designated for its URL
 * by rendezvous hashing, which fetches from the origin once for every asker; the index is asked
 * only when the designated member does not answer. Keyed mode (a real HMAC `PeerAuth`); open
 * mode takes no ask. Real proxies on loopback; the attacker is a socket of its own on 127.0.0.66.
 */
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createServer as createHttpServer, request, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { PEER_FETCHING_TIMEOUT_MS, PEER_TIMEOUT_MS } from '../../src/constants.js';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import type { LiveMember } from '../../src/peer/members.js';
import { processingIntervalMs } from '../../src/peer/processing.js';
import { chooseFetcher, designatedHere, topMember } from '../../src/peer/rendezvous.js';
import { ManualClock } from '@coral/testkit';
import { NODE_A as A, NODE_B as B, T0, get, startPair, until } from '../helpers/harness.js';
import { HmacPeerAuth } from '../helpers/peer-auth.js';
import type { Pair, Reply } from '../helpers/harness.js';

const BODY = Buffer.from(Array.from({ length: 30_000 }, (_, i) => (i * 13) % 256));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const KEY = '5a'.repeat(32);

/** Two proxies, keyed (each its own verifier of the fleet key) or open. */
async function fleet(keyed = true): Promise<Pair & { auth: HmacPeerAuth }> {
  const clock = new ManualClock(T0);
  const f = await startPair({
    body: BODY,
    clock,
    members: new InMemoryFleetMembers({ recordsAuthenticated: keyed, rendezvous: true }),
    ...(keyed
      ? {
          a: { peerAuth: new HmacPeerAuth(KEY, clock) },
          b: { peerAuth: new HmacPeerAuth(KEY, clock) },
        }
      : {}),
  });
  cleanups.push(() => f.close());
  return { ...f, auth: new HmacPeerAuth(KEY, clock) };
}

/** `Coral-Peer-Auth` for a GET of `path` on `host`, signed with the fleet key. */
const signed = (f: { auth: HmacPeerAuth }, host: string, path: string) => ({
  'coral-peer-auth': f.auth.sign({ method: 'GET', authority: host, path }),
});

const member = (nodeId: string, near = true): LiveMember => ({
  nodeId,
  ip: '127.0.0.9',
  httpPort: 1,
  near,
});

/** A path of `f`'s origin whose designated fetcher, between A and B, is `who`. */
function pathFor(f: Pair, who: string): string {
  for (let i = 0; ; i++) {
    const path = `/obj${i}`;
    const top = topMember(A, urlKey(f.url(path)), [member(B)]);
    if ((top === undefined ? A : B) === who) return path;
  }
}

const C = 'cc'.repeat(20);

/** A path of `f`'s origin (`prefix` + a number) for which member C outranks A and B. */
function pathForC(f: Pair, prefix: string, skip = 0): string {
  for (let i = 0, found = 0; ; i++) {
    const path = `${prefix}${i}`;
    if (topMember(C, urlKey(f.url(path)), [member(A), member(B)]) === undefined && found++ >= skip)
      return path;
  }
}

/** A peer request as a member (or an attacker) sends it, from `from`. */
function ask(
  port: number,
  to: string,
  host: string,
  path: string,
  from: string,
  headers: Record<string, string>,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: to, port, path, localAddress: from, headers: { host, ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the rendezvous choice', () => {
  const key = urlKey('http://www.example.com/x');
  const ids = ['11', '22', '33', '44', '55'].map((b) => b.repeat(20));

  it('every node computes the same designated member from the same membership', () => {
    const tops = ids.map((self) => {
      const others = ids.filter((i) => i !== self).map((i) => member(i));
      return topMember(self, key, others)?.nodeId ?? self;
    });
    expect(new Set(tops).size).toBe(1);
    // Exactly one of them considers itself designated.
    const live = (self: string) => ({
      recordsAuthenticated: true,
      member: () => undefined,
      live: () => ids.filter((i) => i !== self).map((i) => member(i)),
    });
    expect(ids.filter((self) => designatedHere(live(self), self, key))).toEqual([tops[0]]);
  });

  it('spreads keys over the members (each gets some of 1,000 keys)', () => {
    const counts = new Map<string, number>();
    for (let k = 0; k < 1000; k++) {
      const top = topMember(
        ids[0]!,
        urlKey(`http://www.example.com/${k}`),
        ids.slice(1).map((i) => member(i)),
      );
      const id = top?.nodeId ?? ids[0]!;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual([...ids].sort());
  });

  it('asks the member designated in its own cluster first, and that one the fleet-wide one', () => {
    // A far member that outranks everyone for this key, and a near one.
    const all = ids.slice(1).map((i) => member(i, false));
    const far = topMember(ids[0]!, key, all)!;
    const near = all.filter((m) => m !== far).map((m) => ({ ...m, near: true }));
    const members = {
      recordsAuthenticated: true,
      member: () => undefined,
      live: () => [far, ...near],
    };
    const nearTop = topMember(ids[0]!, key, near);
    const choice = chooseFetcher(members, ids[0]!, key);
    expect(choice).toEqual(
      nearTop ? { kind: 'member', member: nearTop } : { kind: 'member', member: far },
    );
    // Without any live member there is no choice: the index decides.
    expect(chooseFetcher({ ...members, live: () => [] }, ids[0]!, key)).toBeUndefined();
    expect(
      chooseFetcher({ recordsAuthenticated: true, member: () => undefined }, ids[0]!, key),
    ).toBeUndefined();
  });
});

describe('one fetcher per object over real sockets', () => {
  it('a miss on the node not designated is fetched by the designated member, from the origin once', async () => {
    const f = await fleet();
    const path = pathFor(f, A);
    const rb = await get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toBe(
      `Coral; fwd=peer; fwd-status=200; detail=peer-${A.slice(0, 12)}`,
    );
    // B asked A directly: no lookup in the index, no claim.
    expect(f.index.log.filter((e) => e.op === 'lookup')).toHaveLength(0);
    // A fetched it for B and holds it now.
    const ra = await get(f.a.port, f.origin.coralHost, path);
    expect(ra.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(f.origin.hits).toHaveLength(1);
  });

  it('simultaneous misses on both nodes reach the origin once, whichever node is designated', async () => {
    const f = await fleet();
    for (const who of [A, B]) {
      const path = pathFor(f, who);
      const before = f.origin.hits.length;
      const [ra, rb] = await Promise.all([
        get(f.a.port, f.origin.coralHost, path),
        get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4'),
      ]);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      expect(ra.body.equals(BODY) && rb.body.equals(BODY)).toBe(true);
      expect(f.origin.hits.length - before).toBe(1);
    }
    // By construction, not by a race in the index: neither node looked anything up.
    expect(f.index.log.filter((e) => e.op === 'lookup')).toHaveLength(0);
  });

  it('a designated member that does not answer: the asker falls back to the index, then the origin', async () => {
    const f = await fleet();
    // C outranks A and B for this path, and nothing listens at its address.
    const path = pathForC(f, '/down');
    f.members!.set(C, { ip: '127.0.0.9', httpPort: 9 });
    const rb = await get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(f.index.log.filter((e) => e.op === 'lookup')).toHaveLength(1);
    expect(f.origin.hits).toHaveLength(1);
  });

  /** A member at 127.0.0.9 that accepts connections and never answers; `asks()` counts requests. */
  async function silentMember(): Promise<{ port: number; asks: () => number }> {
    const accepted: Socket[] = [];
    let asks = 0;
    const silent = createServer((sock) => {
      accepted.push(sock);
      sock.once('data', () => asks++);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.9', r));
    cleanups.push(async () => {
      for (const s of accepted) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    });
    return { port: (silent.address() as AddressInfo).port, asks: () => asks };
  }

  it('a designated member that stalls is waited on while it stays live; once out of the live set, the asker falls back and skips it', async () => {
    const f = await fleet();
    // C outranks A and B for both paths; it accepts connections and never answers.
    const c = await silentMember();
    const [s1, s2] = [pathForC(f, '/s'), pathForC(f, '/s', 1)];
    f.members!.set(C, { ip: '127.0.0.9', httpPort: c.port });
    let answered = false;
    const pending = get(f.b.port, f.origin.coralHost, s1, {}, 'GET', '127.0.0.4').then((r) => {
      answered = true;
      return r;
    });
    await until(() => c.asks() === 1, 'B asked C');
    // Failure detection still holds C live: it is only slow to read the ask (a busy machine), and
    // giving up would fetch the object a second time. B goes on waiting, looking again every
    // third of a patience.
    const step = Math.floor(PEER_FETCHING_TIMEOUT_MS / 3);
    await f.clock.advance(PEER_FETCHING_TIMEOUT_MS);
    for (let i = 0; i < 6; i++) {
      const again = f.clock.now() + step;
      await until(() => f.clock.nextAt() === again, 'B waits on');
      await f.clock.advance(step);
    }
    expect(answered).toBe(false);
    expect(f.origin.hits).toHaveLength(0);
    // Declared dead (hung, as under SIGSTOP): out of the live set, given up at the next look.
    f.members!.delete(C);
    await f.clock.advance(step);
    const rb = await pending;
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    // The next miss designated to C does not wait on it again (back in the live set or not).
    f.members!.set(C, { ip: '127.0.0.9', httpPort: c.port });
    const rb2 = await get(f.b.port, f.origin.coralHost, s2, {}, 'GET', '127.0.0.4');
    expect(rb2.status).toBe(200);
    expect(c.asks()).toBe(1);
    expect(f.origin.hits).toHaveLength(2);
  });

  it('a designated member held in the choice after its death gets the short peer patience', async () => {
    const f = await fleet();
    // C is declared dead (no longer a member) but the choice still holds it: it hangs.
    const c = await silentMember();
    const members = f.members!;
    const listed = members.live!.bind(members);
    members.live = () => [
      ...listed(),
      { nodeId: C, ip: '127.0.0.9', httpPort: c.port, near: true },
    ];
    const path = pathForC(f, '/held');
    const pending = get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4');
    await until(() => c.asks() === 1, 'B asked C');
    await f.clock.advance(PEER_TIMEOUT_MS);
    const rb = await pending;
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(f.origin.hits).toHaveLength(1);
  });

  /**
   * Member C outranks A and B for `path` and is a scripted HTTP server: it takes every ask with a
   * 102 and sends another each time `beat()` is called, and the final answer on `release()`.
   */
  async function scriptedC(f: Pair, prefix: string) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const asks: ServerResponse[] = [];
    const slow = createHttpServer((_req, res) => {
      asks.push(res);
      res.writeProcessing();
      void released.then(() => {
        if (res.destroyed) return;
        res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': BODY.length });
        res.end(BODY);
      });
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.9', r));
    cleanups.push(async () => {
      slow.closeAllConnections();
      await new Promise<void>((r) => slow.close(() => r()));
    });
    const path = pathForC(f, prefix);
    f.members!.set(C, { ip: '127.0.0.9', httpPort: (slow.address() as AddressInfo).port });
    return {
      path,
      asks,
      release,
      beat: () => asks.forEach((res) => res.writeProcessing()),
    };
  }

  /** C's beat: the taker's (src/peer/processing.ts). */
  const BEAT = processingIntervalMs(PEER_FETCHING_TIMEOUT_MS);

  /**
   * Wait until B has moved its patience past `at` (it saw the 102 just sent). Its first patience,
   * before any 102, is the same length, so the first 102 shows only through the next ones.
   */
  const sawBeatAfter = (f: Pair, at: number) =>
    until(() => (f.clock.nextAt() ?? Infinity) > at, 'B saw the 102');

  it('a designated member that took the ask (102 Processing) is waited for while its 102s keep coming', async () => {
    const f = await fleet();
    const c = await scriptedC(f, '/slow');
    const pending = get(f.b.port, f.origin.coralHost, c.path, {}, 'GET', '127.0.0.4');
    await until(() => c.asks.length === 1, 'B asked C');
    // Well past every peer patience, with a 102 within each: B keeps waiting on C.
    for (let waited = 0; waited < 3 * PEER_FETCHING_TIMEOUT_MS; waited += BEAT) {
      await f.clock.advance(BEAT);
      c.beat();
      await sawBeatAfter(f, f.clock.now() + PEER_FETCHING_TIMEOUT_MS - BEAT);
    }
    c.release();
    const rb = await pending;
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(new RegExp(`detail=peer-${C.slice(0, 12)}`));
    expect(f.origin.hits).toHaveLength(0);
  });

  it('a designated member that falls silent after its 102 is given up after one patience, and skipped', async () => {
    const f = await fleet();
    const c = await scriptedC(f, '/hung');
    const pending = get(f.b.port, f.origin.coralHost, c.path, {}, 'GET', '127.0.0.4');
    await until(() => c.asks.length === 1, 'B asked C');
    // One more beat, then nothing (hung, as under SIGSTOP): one patience later B falls back, long
    // before the origin's timeout it would wait while the 102s came.
    await f.clock.advance(BEAT);
    c.beat();
    await sawBeatAfter(f, f.clock.now() + PEER_FETCHING_TIMEOUT_MS - BEAT);
    await f.clock.advance(PEER_FETCHING_TIMEOUT_MS);
    const rb = await pending;
    expect(rb.status).toBe(200);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(f.origin.hits).toHaveLength(1);
    // The next miss designated to C goes elsewhere at once.
    const other = pathForC(f, '/hung', 1);
    const rb2 = await get(f.b.port, f.origin.coralHost, other, {}, 'GET', '127.0.0.4');
    expect(rb2.status).toBe(200);
    expect(c.asks).toHaveLength(1);
  });

  it('a member not designated for the URL refuses a signed ask (views disagree); it never fetches', async () => {
    const f = await fleet();
    const path = pathFor(f, B);
    const r = await ask(f.a.port, '127.0.0.1', f.origin.coralHost, path, '127.0.0.4', {
      'x-coral-peer': B,
      'x-coral-designated': '1',
      ...signed(f, f.origin.coralHost, path),
    });
    expect(r.status).toBe(504);
    expect(f.origin.hits).toHaveLength(0);
  });

  it('an ask without a valid signature is refused before anything is fetched', async () => {
    const f = await fleet();
    const path = pathFor(f, A);
    const headers = { 'x-coral-peer': B, 'x-coral-designated': '1' };
    // An attacker on its own address: no signature, a forged one, a replayed one.
    const none = await ask(f.a.port, '127.0.0.1', f.origin.coralHost, path, '127.0.0.66', headers);
    const forged = await ask(f.a.port, '127.0.0.1', f.origin.coralHost, path, '127.0.0.66', {
      ...headers,
      ...signed({ auth: new HmacPeerAuth('66'.repeat(32), f.clock) }, f.origin.coralHost, path),
    });
    const good = signed(f, f.origin.coralHost, path);
    const first = await ask(f.a.port, '127.0.0.1', f.origin.coralHost, path, '127.0.0.66', {
      ...headers,
      ...good,
    });
    const replayed = await ask(f.a.port, '127.0.0.1', f.origin.coralHost, path, '127.0.0.66', {
      ...headers,
      ...good,
    });
    expect([none.status, forged.status, replayed.status]).toEqual([403, 403, 403]);
    // The one signed with the fleet key is a member's ask, whoever carried it: fetched once.
    expect(first.status).toBe(200);
    expect(first.body.equals(BODY)).toBe(true);
    expect(f.origin.hits).toHaveLength(1);
  });

  it('open mode takes no ask: misses go to the index, and an ask is a cache-only peer request', async () => {
    const f = await fleet(false);
    const path = pathFor(f, A);
    const r = await ask(f.a.port, '127.0.0.1', f.origin.coralHost, path, '127.0.0.4', {
      'x-coral-peer': B,
      'x-coral-designated': '1',
    });
    expect(r.status).toBe(504);
    expect(f.origin.hits).toHaveLength(0);
    const rb = await get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4');
    expect(rb.status).toBe(200);
    expect(f.index.log.filter((e) => e.op === 'lookup')).toHaveLength(1);
  });
});
