/**
 * Origin opt-out over real sockets: an origin answering `Coral-Control: redirect-home` gets its
 * clients back from every member (the one that fetched, and another that learns it from the
 * index), for the time it asked; nobody else can set it — not a client's request field, not
 * another origin, not a record in an index that does not authenticate its writers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { siteKey } from '../../src/site-control/opt-outs.js';
import { NODE_A, NODE_B, T0, get, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Fleet {
  clock: ManualClock;
  index: InMemoryContentIndex;
  members: InMemoryFleetMembers;
  origin: Origin;
  /** Paths the origin answers with Coral-Control, and the value. */
  control: Map<string, string>;
  a: ProxyHarness;
  b: ProxyHarness;
}

async function fleet(recordsAuthenticated = true, ip = '127.0.0.2'): Promise<Fleet> {
  const clock = new ManualClock(T0);
  const index = new InMemoryContentIndex({ clock });
  const members = new InMemoryFleetMembers({ recordsAuthenticated });
  const control = new Map<string, string>();
  const origin = await startOrigin((req: IncomingMessage, res: ServerResponse) => {
    const c = control.get(req.url ?? '');
    res.writeHead(200, {
      'cache-control': 'max-age=600',
      'content-type': 'text/plain',
      ...(c ? { 'coral-control': c } : {}),
    });
    res.end(`body of ${req.url}`);
  }, ip);
  const shared = { clock, index, members };
  const a = await startProxy({ self: { nodeId: NODE_A, ip: '127.0.0.1', httpPort: 0 } }, shared);
  const b = await startProxy(
    { self: { nodeId: NODE_B, ip: '127.0.0.4', httpPort: 0 } },
    shared,
    '127.0.0.4',
  );
  members.set(NODE_A, { ip: '127.0.0.1', httpPort: a.port });
  members.set(NODE_B, { ip: '127.0.0.4', httpPort: b.port });
  cleanups.push(
    () => origin.close(),
    () => a.close(),
    () => b.close(),
  );
  return { clock, index, members, origin, control, a, b };
}

const viaA = (f: Fleet, path: string, h: Record<string, string> = {}) =>
  get(f.a.port, f.origin.coralHost, path, h);
const viaB = (f: Fleet, path: string) =>
  get(f.b.port, f.origin.coralHost, path, {}, 'GET', '127.0.0.4');

describe('Coral-Control: redirect-home', () => {
  it('sends the site home on this node and on another, for max-age, then serves again', async () => {
    const f = await fleet();
    const home = (path: string) => `http://origin.test:${f.origin.port}${path}`;
    f.control.set('/optout', 'redirect-home; max-age=120');
    const first = await viaA(f, '/optout');
    // The response that carried it is served (it is here already), without the field.
    expect(first.status).toBe(200);
    expect(first.headers['coral-control']).toBeUndefined();
    expect(f.a.proxy.optOuts().map((o) => o.site)).toEqual([`http://origin.test:${f.origin.port}`]);
    const hits = f.origin.hits.length;

    const onA = await viaA(f, '/other?q=1');
    expect(onA.status).toBe(307);
    expect(onA.headers.location).toBe(home('/other?q=1'));
    expect(onA.headers['cache-control']).toBe('private, no-store');
    expect(onA.headers['cache-status']).toContain('detail=redirect-home');
    // Another member learns it from the index: no fetch, a redirect.
    const onB = await viaB(f, '/third');
    expect(onB.status).toBe(307);
    expect(onB.headers.location).toBe(home('/third'));
    // Even what is stored is not served meanwhile (HEAD too).
    expect((await viaA(f, '/optout')).status).toBe(307);
    expect((await get(f.a.port, f.origin.coralHost, '/optout', {}, 'HEAD')).status).toBe(307);
    expect(f.origin.hits.length).toBe(hits);
    // A member asking for it (peer request) is told it is not served here; no redirect for peers.
    const asked = await viaA(f, '/optout', { 'x-coral-peer': '1' });
    expect(asked.status).toBe(504);
    expect(asked.headers['x-coral-error']).toBe('CORAL_NOT_CACHED');

    // Expiry: both serve the site again.
    f.control.clear();
    await f.clock.advance(121_000);
    const later = await viaA(f, '/other?q=1');
    expect(later.status).toBe(200);
    expect(later.body.toString()).toBe('body of /other?q=1');
    expect((await viaB(f, '/third')).status).toBe(200);
    expect(f.a.proxy.optOuts()).toEqual([]);
  });

  it('stops hot objects on the fast path too', async () => {
    const f = await fleet();
    await viaA(f, '/hot');
    expect((await viaA(f, '/hot')).headers['cache-status']).toMatch(/^Coral; hit/);
    f.control.set('/go', 'redirect-home');
    await viaA(f, '/go');
    const r = await viaA(f, '/hot');
    expect(r.status).toBe(307);
  });

  it('a client sending Coral-Control sets nothing and the origin never sees it', async () => {
    const f = await fleet();
    const r = await viaA(f, '/x', { 'coral-control': 'redirect-home; max-age=600' });
    expect(r.status).toBe(200);
    expect(f.origin.hits.at(-1)!.headers['coral-control']).toBeUndefined();
    expect(f.a.proxy.optOuts()).toEqual([]);
    expect((await viaA(f, '/y')).status).toBe(200);
    expect((await viaB(f, '/y')).status).toBe(200);
  });

  it('an origin opts out only itself', async () => {
    const f = await fleet();
    const evil = await startOrigin((_q, res) => {
      res.writeHead(200, { 'coral-control': 'redirect-home; max-age=600' });
      res.end('evil');
    }, '127.0.0.3');
    cleanups.push(() => evil.close());
    await get(f.a.port, `other.test.${evil.port}.nyud.net`, '/');
    expect(f.a.proxy.optOuts().map((o) => o.site)).toEqual([`http://other.test:${evil.port}`]);
    expect((await viaA(f, '/mine')).status).toBe(200);
    expect((await viaB(f, '/mine')).status).toBe(200);
  });

  it('open mode: records in the index are neither published nor believed', async () => {
    const f = await fleet(false);
    const site = `http://origin.test:${f.origin.port}`;
    // A stranger that can write to an open index.
    await f.index.publishSiteControl(
      siteKey(site),
      { origin: site, until: T0 + 600_000, at: T0, nodeId: 'cc'.repeat(20) },
      600,
    );
    expect((await viaB(f, '/p')).status).toBe(200);
    // This node's own fetch still counts for itself, and is not published.
    f.control.set('/q', 'redirect-home');
    await viaA(f, '/q');
    expect((await viaA(f, '/p2')).status).toBe(307);
    expect((await viaB(f, '/p3')).status).toBe(200);
  });

  it('keyed mode: a record naming another site under the key is ignored', async () => {
    const f = await fleet();
    const site = `http://origin.test:${f.origin.port}`;
    await f.index.publishSiteControl(
      siteKey(site),
      { origin: 'http://elsewhere.test', until: T0 + 600_000, at: T0, nodeId: NODE_A },
      600,
    );
    expect((await viaB(f, '/p')).status).toBe(200);
  });

  it('a malformed Coral-Control is ignored', async () => {
    const f = await fleet();
    f.control.set('/bad', 'redirect-home; max-age=-5');
    expect((await viaA(f, '/bad')).status).toBe(200);
    expect((await viaA(f, '/next')).status).toBe(200);
  });
});
