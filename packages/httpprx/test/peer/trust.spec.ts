/**
 * What a peer copy is worth: in keyed mode (authenticated records) a copy that matches its record
 * is stored, announced and re-served like an origin copy; in open mode it is served to the
 * clients that asked, but never stored, announced or handed to another peer.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import {
  NODE_A as A,
  NODE_B as B,
  closer,
  get,
  startPair,
  startProxy,
  until,
} from '../helpers/harness.js';
import type { Pair } from '../helpers/harness.js';

const BODY = Buffer.from(Array.from({ length: 20_000 }, (_, i) => (i * 7) % 256));
const SHA = createHash('sha256').update(BODY).digest('hex');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Fleet = Pair;

async function fleet(recordsAuthenticated: boolean): Promise<Fleet> {
  const f = await startPair({
    body: BODY,
    members: new InMemoryFleetMembers({ recordsAuthenticated }),
  });
  cleanups.push(() => f.close());
  return f;
}

const fromA = (f: Fleet) => get(f.a.port, f.origin.coralHost, '/obj');
const fromB = (f: Fleet) => get(f.b.port, f.origin.coralHost, '/obj', {}, 'GET', '127.0.0.4');
const completeBy = (f: Fleet, id: string) =>
  f.index.log.filter(
    (e) => e.op === 'announce' && e.holder?.nodeId === id && e.holder.state === 'complete',
  );

describe('keyed mode (records authenticated)', () => {
  it('a peer copy matching its record is stored, announced and served from cache', async () => {
    const f = await fleet(true);
    await fromA(f);
    const rb = await fromB(f);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toBe(
      `Coral; fwd=peer; fwd-status=200; detail=peer-${A.slice(0, 12)}`,
    );
    await until(() => completeBy(f, B).length === 1, 'B announced its copy');
    expect(completeBy(f, B).map((e) => e.holder!.sha256)).toEqual([SHA]);
    expect((await f.b.proxy.cacheList()).map((e) => e.sha256)).toEqual([SHA]);
    expect((await fromB(f)).headers['cache-status']).toMatch(/^Coral; hit/);
    expect(f.origin.hits).toHaveLength(1);
  });
});

describe('what a peer request carries', () => {
  it('site mode: the client cookie is forwarded to the origin but never sent to a member', async () => {
    const f = await fleet(true);
    const member = await fakeMember((res) => {
      res.writeHead(504);
      res.end();
    });
    f.members!.set('cc'.repeat(20), { ip: '127.0.0.5', httpPort: member.port });
    const site = await startProxy(
      {
        self: { nodeId: 'dd'.repeat(20), ip: '127.0.0.6', httpPort: 0 },
        sites: { 'www.school.test': `http://origin.test:${f.origin.port}` },
      },
      { index: f.index, members: f.members! },
      '127.0.0.6',
    );
    cleanups.push(() => site.close());
    f.index.set(urlKey(f.url('/obj')), {
      nodeId: 'cc'.repeat(20),
      ip: '127.0.0.5',
      httpPort: member.port,
      state: 'complete',
    });
    const r = await get(
      site.port,
      'www.school.test',
      '/obj',
      { cookie: 'session=secret', 'accept-language': 'fr' },
      'GET',
      '127.0.0.6',
    );
    expect(r.body.equals(BODY)).toBe(true);
    expect(member.headers).toHaveLength(1);
    expect(member.headers[0]!['cookie']).toBeUndefined();
    expect(member.headers[0]!['accept-language']).toBe('fr');
    expect(member.headers[0]!['x-coral-peer']).toBe('dd'.repeat(20));
    expect(f.origin.hits.at(-1)!.headers['cookie']).toBe('session=secret');
  });
});

describe('open mode (records not authenticated)', () => {
  it('a peer copy is served but not stored nor announced; the next request asks a peer again', async () => {
    const f = await fleet(false);
    await fromA(f);
    const rb = await fromB(f);
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toBe(
      `Coral; fwd=peer; fwd-status=200; detail="peer-${A.slice(0, 12)} unverified"`,
    );
    expect(await f.b.proxy.cacheList()).toEqual([]);
    expect(completeBy(f, B)).toEqual([]);
    const again = await fromB(f);
    expect(again.headers['cache-status']).toMatch(/fwd=peer/);
    expect(f.origin.hits).toHaveLength(1); // the origin is still asked once for the fleet
  });

  it('a peer whose body does not match its own x-coral-sha256 is not served: the origin answers at once, the peer is skipped', async () => {
    const f = await fleet(false);
    const liar = await fakeMember((res) => {
      const wrong = Buffer.from(BODY);
      wrong[10] = wrong[10]! ^ 1;
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        'content-length': String(wrong.length),
        'x-coral-sha256': SHA,
      });
      res.end(wrong);
    });
    f.members!.set('cc'.repeat(20), { ip: '127.0.0.5', httpPort: liar.port });
    // A `fetching` record carries no size or sha256: only the peer's own claim can be checked.
    f.index.set(urlKey(f.url('/obj')), {
      nodeId: 'cc'.repeat(20),
      ip: '127.0.0.5',
      httpPort: liar.port,
      state: 'fetching',
    });
    // 20,000 bytes: checked whole before any is sent (PEER_VERIFY_WHOLE_BYTES), so the client
    // gets the origin's copy instead of a cut-off connection.
    const first = await fromB(f);
    expect(first.body.equals(BODY)).toBe(true);
    expect(first.headers['cache-status']).toBe('Coral; fwd=uri-miss; fwd-status=200');
    expect(liar.requests).toBe(1);
    const rb = await fromB(f);
    expect(liar.requests).toBe(1);
    expect(rb.body.equals(BODY)).toBe(true);
  });

  it('another peer joining an unverified peer fetch gets 504, never the copy', async () => {
    const f = await fleet(false);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = await fakeMember((res) => {
      res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(BODY.length) });
      res.write(BODY.subarray(0, 100));
      void held.then(() => res.end(BODY.subarray(100)));
    });
    f.members!.set('cc'.repeat(20), { ip: '127.0.0.5', httpPort: slow.port });
    f.index.set(urlKey(f.url('/obj')), {
      nodeId: 'cc'.repeat(20),
      ip: '127.0.0.5',
      httpPort: slow.port,
      state: 'fetching',
    });
    const client = fromB(f);
    await until(() => slow.requests === 1, 'B asked the member');
    // A peer request to B joins B's in-flight fetch of the object.
    const peer = get(
      f.b.port,
      f.origin.coralHost,
      '/obj',
      { 'x-coral-peer': A },
      'GET',
      '127.0.0.4',
    );
    await until(() => f.metricsB.joined === 1, 'the peer request joined the in-flight fetch');
    release();
    const [rc, rp] = await Promise.all([client, peer]);
    expect(rc.body.equals(BODY)).toBe(true);
    expect(rc.headers['cache-status']).toMatch(/unverified/);
    expect(rp.status).toBe(504);
    expect(rp.headers['x-coral-error']).toBe('CORAL_NOT_CACHED');
  });
});

async function fakeMember(
  answer: (res: ServerResponse) => void,
): Promise<{ port: number; requests: number; headers: IncomingHttpHeaders[] }> {
  const state = { port: 0, requests: 0, headers: [] as IncomingHttpHeaders[] };
  const server = createServer((req, res) => {
    state.requests++;
    state.headers.push(req.headers);
    answer(res);
  });
  cleanups.push(closer(server));
  await new Promise<void>((r) => server.listen(0, '127.0.0.5', r));
  state.port = (server.address() as AddressInfo).port;
  return state;
}
