import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { PEER_HEADER } from '../../src/constants.js';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { fastPathHost } from '../../src/serve/fast-path.js';
import { NODE_A, T0, get, recordingMetrics, startOrigin, startProxy } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('fastPathHost (the fast path reads raw field lines, never builds req.headers)', () => {
  it('gives the one Host value, whatever the case of the field name (RFC 9110 §5.1)', () => {
    expect(fastPathHost(['Host', 'a.nyud.net', 'User-Agent', 'wrk'])).toBe('a.nyud.net');
    expect(fastPathHost(['accept', '*/*', 'HOST', 'b.nyud.net:8090'])).toBe('b.nyud.net:8090');
    // Fields of the same lengths as the names it looks for are passed over.
    expect(fastPathHost(['Date', 'x', 'host', 'c.nyud.net', 'Accept-Ranges', 'bytes'])).toBe(
      'c.nyud.net',
    );
  });

  it('no Host, or Host twice (RFC 9112 §3.2: a 400 on the full path): not for the fast path', () => {
    expect(fastPathHost([])).toBeUndefined();
    expect(fastPathHost(['Accept', '*/*'])).toBeUndefined();
    expect(fastPathHost(['Host', 'a.nyud.net', 'host', 'a.nyud.net'])).toBeUndefined();
    expect(fastPathHost(['Host', 'a.nyud.net', 'HoSt', 'evil.example'])).toBeUndefined();
  });

  it('any field that could change the answer sends the request down the full path', () => {
    const fields = [
      'Via',
      'Range',
      'If-None-Match',
      'If-Modified-Since',
      'Cache-Control',
      'Pragma',
      'Authorization',
      PEER_HEADER,
    ];
    for (const f of fields) {
      for (const name of [f, f.toUpperCase(), f.toLowerCase()]) {
        expect(fastPathHost(['Host', 'a.nyud.net', name, ''])).toBeUndefined();
        expect(fastPathHost([name, 'x', 'Host', 'a.nyud.net'])).toBeUndefined();
      }
    }
  });
});

describe('site mode takes the fast path as Coralized names do', () => {
  /**
   * A keyed node (the index's records are believed, so a Coralized name's opt-out state is read
   * from it) with `site.test` configured as a site whose origin is the one the Coralized name
   * `origin.test.<port>.nyud.net` names: both lead to the same stored object. The origin answers
   * `/go` with `Coral-Control: redirect-home`. `fast()`: hits answered on the fast path so far.
   */
  async function node() {
    const clock = new ManualClock(T0);
    const index = new InMemoryContentIndex({ clock });
    const members = new InMemoryFleetMembers({ recordsAuthenticated: true });
    const origin = await startOrigin((req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        'content-type': 'text/plain',
        ...(req.url === '/go' ? { 'coral-control': 'redirect-home; max-age=120' } : {}),
      });
      res.end(`body of ${req.url}`);
    });
    let fastHits = 0;
    const metrics = { ...recordingMetrics(), fastHit: () => void fastHits++ };
    const px = await startProxy(
      {
        self: { nodeId: NODE_A, ip: '127.0.0.1', httpPort: 0 },
        sites: { 'site.test': `http://origin.test:${origin.port}` },
      },
      { clock, index, members, metrics },
    );
    members.set(NODE_A, { ip: '127.0.0.1', httpPort: px.port });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const site = (path: string, method = 'GET') => get(px.port, 'site.test', path, {}, method);
    const coral = (path: string) => get(px.port, origin.coralHost, path);
    return { origin, site, coral, fast: () => fastHits };
  }

  it('a site-mode hit of a hot object is answered on the fast path, with the right bytes', async () => {
    const n = await node();
    expect((await n.site('/a')).headers['cache-status']).toContain('fwd=uri-miss');
    // The first hit goes the full way (admission, mapping) and routes the raw Host and target.
    expect((await n.site('/a')).headers['cache-status']).toMatch(/^Coral; hit/);
    expect(n.fast()).toBe(0);
    for (let i = 1; i <= 3; i++) {
      const r = await n.site('/a');
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('body of /a');
      expect(r.headers['cache-status']).toMatch(/^Coral; hit; ttl=/);
      expect(n.fast()).toBe(i);
    }
    const head = await n.site('/a', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String('body of /a'.length));
    expect(n.fast()).toBe(4);
    // As a Coralized name's hits are.
    await n.coral('/b');
    await n.coral('/b');
    expect((await n.coral('/b')).body.toString()).toBe('body of /b');
    expect(n.fast()).toBe(5);
    expect(n.origin.hits.map((h) => h.url)).toEqual(['/a', '/b']);
  });

  it('an opt-out sends the Coralized name home, fast path included, and not the site', async () => {
    const n = await node();
    await n.site('/hot');
    await n.site('/hot'); // routes site.test /hot (no opt-out)
    await n.coral('/hot'); // routes the Coralized name to the same entry (opt-out checked)
    expect((await n.coral('/hot')).status).toBe(200);
    expect(n.fast()).toBe(1);
    await n.coral('/go'); // the origin opts out
    const home = await n.coral('/hot');
    expect(home.status).toBe(307);
    expect(home.headers.location).toBe(`http://origin.test:${n.origin.port}/hot`);
    // The site's origin is the operator's own: its hits are served, and on the fast path.
    const r = await n.site('/hot');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('body of /hot');
    expect(n.fast()).toBe(2);
    expect(n.origin.hits.map((h) => h.url)).toEqual(['/hot', '/go']);
  });
});
