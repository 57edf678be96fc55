/**
 * Adversary: web cache poisoning through unkeyed request headers (issue 31, item 2). The cache
 * key is the URL plus the fields `Vary` names; a request field that reaches the origin and changes
 * its answer without being in `Vary` lets one client choose the page every later client gets. The
 * origin here does what most frameworks do: it builds its links from `X-Forwarded-Host` /
 * `X-Forwarded-Proto`, honours the method-override and URL-rewrite fields, and shows the client
 * address it is told. Over real sockets on loopback, for every forwarding field: the attacker's
 * request carries it, then a victim's plain request gets the origin's normal answer — in Coral
 * mode, in site mode, and through a peer (the member that fetched it, and the one that asked).
 * The fields the node sets itself are the canonical ones, never the client's.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { NODE_A, NODE_B, T0, closer, get, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

/** The forwarding and override fields an attacker sends (issue 31, item 2, and their kin). */
const ATTACK_FIELDS = [
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-scheme',
  'x-forwarded-server',
  'x-forwarded-prefix',
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'x-original-url',
  'x-rewrite-url',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-host',
  'x-host',
  // Not forwarding fields, but unkeyed all the same: outside the allow-list.
  'referer',
  'x-custom-theme',
];
const EVIL = 'evil.example';

/** A framework-style origin: every field above changes its page (links, method, path, address). */
function page(req: IncomingMessage, res: ServerResponse): void {
  const h = req.headers;
  const one = (n: string) => {
    const v = h[n];
    return Array.isArray(v) ? v.join(',') : v;
  };
  const host = one('x-forwarded-host') ?? one('x-host') ?? one('x-original-host') ?? h.host;
  const proto = one('x-forwarded-proto') ?? one('x-forwarded-scheme') ?? 'http';
  const method =
    one('x-http-method-override') ?? one('x-http-method') ?? one('x-method-override') ?? 'GET';
  const path = one('x-original-url') ?? one('x-rewrite-url') ?? req.url;
  const lines = [
    `<a href="${proto}://${host}${one('x-forwarded-prefix') ?? ''}/next">next</a>`,
    `method ${method} path ${path}`,
    ...ATTACK_FIELDS.map((f) => `${f}: ${one(f) ?? '-'}`),
  ];
  const body = lines.join('\n');
  res.writeHead(200, {
    'cache-control': 'max-age=600',
    'content-type': 'text/html',
    'content-length': String(Buffer.byteLength(body)),
    // CORS the careless way: the request's Origin echoed, no `Vary: Origin`.
    ...(h.origin !== undefined ? { 'access-control-allow-origin': h.origin } : {}),
  });
  res.end(body);
}

let origin: Origin;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  origin = await startOrigin(page);
  cleanups.push(() => origin.close());
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function sawEvil(headers: IncomingHttpHeaders): string[] {
  return Object.entries(headers)
    .filter(([, v]) => String(v).includes(EVIL))
    .map(([k]) => k);
}

/** Attacker first (its request fills the cache), then the victim; both must get the normal page. */
async function attackThenVictim(
  ask: (path: string, headers: Record<string, string>) => Promise<{ body: Buffer }>,
  prefix: string,
): Promise<void> {
  for (const field of ATTACK_FIELDS) {
    const path = `${prefix}/${field}`;
    const hitsBefore = origin.hits.length;
    const attacker = await ask(path, { [field]: EVIL });
    const victim = await ask(path, {});
    expect(victim.body.toString(), field).not.toContain(EVIL);
    expect(attacker.body.toString(), field).not.toContain(EVIL);
    expect(victim.body.toString(), field).toBe(attacker.body.toString());
    expect(victim.body.toString(), field).toContain('method GET');
    // One origin fetch for both, and it carried nothing of the attacker's.
    const hits = origin.hits.slice(hitsBefore);
    expect(hits, field).toHaveLength(1);
    expect(sawEvil(hits[0]!.headers), field).toEqual([]);
  }
}

describe('Coralized names', () => {
  let px: ProxyHarness;
  beforeAll(async () => {
    px = await startProxy();
    cleanups.push(() => px.close());
  });

  it('no forwarding field from a client reaches the origin; the victim gets the normal page', async () => {
    await attackThenVictim(
      (path, headers) => get(px.port, origin.coralHost, path, headers),
      '/coral',
    );
  });

  it('the node sets X-Forwarded-*/Forwarded itself: client address, canonical host and scheme', async () => {
    // The port and the spelling of the Host are the client's choice: neither reaches the origin.
    await get(px.port, `${origin.coralHost}:9999`, '/coral-own');
    const h = origin.hits.at(-1)!.headers;
    const canonical = `origin.test.${origin.port}.nyud.net:${px.port}`;
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-forwarded-host']).toBe(canonical);
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['forwarded']).toBe(`for=127.0.0.1;host="${canonical}";proto=http`);
    expect(h['via']).toMatch(/coral-/);
  });

  it('an Origin echoed in Access-Control-Allow-Origin without Vary: Origin is not shared', async () => {
    const attacker = await get(px.port, origin.coralHost, '/coral-cors', {
      origin: `https://${EVIL}`,
    });
    expect(attacker.headers['access-control-allow-origin']).toBe(`https://${EVIL}`);
    const victim = await get(px.port, origin.coralHost, '/coral-cors');
    expect(victim.headers['access-control-allow-origin']).toBeUndefined();
    expect(victim.headers['cache-status']).toMatch(/fwd=uri-miss/);
  });

  it('negotiation fields are forwarded (they are what Vary keys on)', async () => {
    await get(px.port, origin.coralHost, '/coral-neg', {
      'accept-language': 'fr',
      'user-agent': 'test-agent',
      cookie: 'session=secret',
    });
    const h = origin.hits.at(-1)!.headers;
    expect(h['accept-language']).toBe('fr');
    expect(h['user-agent']).toBe('test-agent');
    expect(h['cookie']).toBeUndefined();
  });
});

describe('site mode', () => {
  let px: ProxyHarness;
  beforeAll(async () => {
    px = await startProxy({ sites: { 'www.school.test': `http://origin.test:${origin.port}` } });
    cleanups.push(() => px.close());
  });

  it('no forwarding field from a client reaches the origin; the victim gets the normal page', async () => {
    await attackThenVictim(
      (path, headers) => get(px.port, 'www.school.test', path, headers),
      '/site',
    );
  });

  it('other methods (never cached) pass their fields but not the forwarding family', async () => {
    const before = origin.hits.length;
    await get(
      px.port,
      'www.school.test',
      '/site-post',
      {
        'content-type': 'application/x-www-form-urlencoded',
        'x-csrf-token': 't0k3n',
        'x-forwarded-host': EVIL,
        'x-http-method-override': 'DELETE',
      },
      'POST',
      '127.0.0.1',
      Buffer.from('a=1'),
    );
    const hit = origin.hits.slice(before)[0]!;
    expect(hit.method).toBe('POST');
    expect(hit.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(hit.headers['x-csrf-token']).toBe('t0k3n');
    expect(hit.headers['x-http-method-override']).toBeUndefined();
    expect(hit.headers['x-forwarded-host']).toBe(`www.school.test:${px.port}`);
    expect(sawEvil(hit.headers)).toEqual([]);
  });
});

describe('through a peer (keyed records)', () => {
  let a: ProxyHarness;
  let b: ProxyHarness;
  let members: InMemoryFleetMembers;
  let index: InMemoryContentIndex;
  beforeAll(async () => {
    const clock = new ManualClock(T0);
    index = new InMemoryContentIndex({ clock });
    members = new InMemoryFleetMembers({ recordsAuthenticated: true });
    const shared = { clock, index, members };
    a = await startProxy({ self: { nodeId: NODE_A, ip: '127.0.0.1', httpPort: 0 } }, shared);
    b = await startProxy(
      { self: { nodeId: NODE_B, ip: '127.0.0.4', httpPort: 0 } },
      shared,
      '127.0.0.4',
    );
    members.set(NODE_A, { ip: '127.0.0.1', httpPort: a.port });
    members.set(NODE_B, { ip: '127.0.0.4', httpPort: b.port });
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
  });

  it('an attacker at one member cannot poison the copy the other members serve', async () => {
    for (const field of ATTACK_FIELDS) {
      const path = `/peer/${field}`;
      const attacker = await get(a.port, origin.coralHost, path, { [field]: EVIL });
      // B asks A (A announced its copy) and serves it to its own client.
      const victim = await get(b.port, origin.coralHost, path, {}, 'GET', '127.0.0.4');
      expect(victim.headers['cache-status'], field).toMatch(/fwd=peer/);
      expect(victim.body.toString(), field).not.toContain(EVIL);
      expect(victim.body.toString(), field).toBe(attacker.body.toString());
    }
  });

  it('the peer request carries none of the client forwarding fields', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const member = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(504);
      res.end();
    });
    cleanups.push(closer(member));
    await new Promise<void>((r) => member.listen(0, '127.0.0.5', r));
    const port = (member.address() as AddressInfo).port;
    members.set('cc'.repeat(20), { ip: '127.0.0.5', httpPort: port });
    index.set(urlKey(`http://origin.test:${origin.port}/peer-ask`), {
      nodeId: 'cc'.repeat(20),
      ip: '127.0.0.5',
      httpPort: port,
      state: 'complete',
    });
    const headers = Object.fromEntries(ATTACK_FIELDS.map((f) => [f, EVIL]));
    const r = await get(b.port, origin.coralHost, '/peer-ask', headers, 'GET', '127.0.0.4');
    expect(r.body.toString()).not.toContain(EVIL);
    expect(seen).toHaveLength(1);
    expect(sawEvil(seen[0]!)).toEqual([]);
    expect(seen[0]!['x-forwarded-for']).toBe('127.0.0.1');
  });
});
