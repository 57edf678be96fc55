/**
 * Issue 11, Must-show 3: an origin whose http:// answers 301 to https:// of the same URL. A client
 * that starts at the Coralized http URL ends on content from the CDN — with TLS on at the
 * Coralized https URL, with TLS off served under the http name — and the origin sees one request
 * per object.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { get, startProxy } from '../helpers/harness.js';
import type { ProxyHarness } from '../helpers/harness.js';
import { follow, listenTls, makePki, startDualOrigin } from '../helpers/tls.js';
import type { DualOrigin, TestPki } from '../helpers/tls.js';

let pki: TestPki;
beforeAll(async () => {
  pki = await makePki();
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An https-only site: every http URL is 301 to the same URL over https (on the same port). */
async function httpsOnlySite(): Promise<DualOrigin> {
  const origin = await startDualOrigin(
    (scheme, req, res) => {
      if (scheme === 'http') {
        res.writeHead(301, {
          location: `https://origin.test:${origin.port}${req.url ?? '/'}`,
          'cache-control': 'max-age=3600',
          'content-length': '0',
        });
        return res.end();
      }
      if (req.headers['if-none-match'] === '"v1"') {
        res.writeHead(304, { etag: '"v1"', 'cache-control': 'max-age=600' });
        return res.end();
      }
      const body = `secure ${req.url ?? ''}`;
      res.writeHead(200, {
        'content-type': 'text/plain',
        'content-length': String(body.length),
        'cache-control': 'max-age=600',
        etag: '"v1"',
      });
      res.end(body);
    },
    pki.originCert,
    'origin.test',
  );
  cleanups.push(() => origin.close());
  return origin;
}

function count(origin: DualOrigin): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of origin.hits) {
    const k = `${h.scheme} ${h.url}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

async function proxy(opts: Parameters<typeof startProxy>[0] = {}): Promise<ProxyHarness> {
  const px = await startProxy({ originCa: [pki.originCa.cert], ...opts });
  cleanups.push(() => px.close());
  return px;
}

describe('an origin that redirects http to https (same URL)', () => {
  it('TLS on: the Coralized http URL redirects to the Coralized https URL, which serves the site', async () => {
    const origin = await httpsOnlySite();
    const px = await proxy();
    const tlsPort = await listenTls(px, pki);
    const start = `origin.test.${origin.port}.nyud.net:${px.port}`;
    const target = `https://origin-test---${origin.port}.nyud.net:${tlsPort}`;
    for (const path of ['/page.html', '/style.css', '/page.html', '/style.css']) {
      const first = await get(px.port, start, path);
      expect(first.status).toBe(301);
      // Rewritten to the one-label https name on the TLS port: the client stays on the CDN.
      expect(first.headers['location']).toBe(`${target}${path}`);
      const end = await follow(first.headers['location']!, pki.zoneCa);
      expect(end.status).toBe(200);
      expect(end.body.toString()).toBe(`secure ${path}`);
      expect(end.headers['via']).toMatch(/coral-/);
    }
    // One request per object: each redirect once, each page once, then hits.
    expect(count(origin)).toEqual({
      'http /page.html': 1,
      'http /style.css': 1,
      'https /page.html': 1,
      'https /style.css': 1,
    });
  });

  it('TLS on: a client already on TLS is sent to the https name on the port it used', async () => {
    const origin = await httpsOnlySite();
    const px = await proxy();
    const tlsPort = await listenTls(px, pki, { publicPort: 443 });
    // The http origin named in the one-label form, asked over TLS.
    const r = await follow(
      `https://origin-test---h${origin.port}.nyud.net:${tlsPort}/x`,
      pki.zoneCa,
    );
    expect(r.status).toBe(301);
    expect(r.headers['location']).toBe(
      `https://origin-test---${origin.port}.nyud.net:${tlsPort}/x`,
    );
    // From plain http, links use the public TLS port (443 is not written).
    const p = await get(px.port, `origin.test.${origin.port}.nyud.net`, '/x');
    expect(p.headers['location']).toBe(`https://origin-test---${origin.port}.nyud.net/x`);
  });

  it('TLS off: the proxy follows the upgrade and serves the site under the http name', async () => {
    const origin = await httpsOnlySite();
    const px = await proxy();
    const host = `origin.test.${origin.port}.nyud.net`;
    for (const path of ['/page.html', '/img.png', '/page.html', '/img.png']) {
      const r = await get(px.port, host, path);
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe(`secure ${path}`);
      expect(r.headers['location']).toBeUndefined();
    }
    expect(count(origin)).toEqual({
      'http /page.html': 1,
      'http /img.png': 1,
      'https /page.html': 1,
      'https /img.png': 1,
    });
    // Stored under the http URL the client asked for.
    const urls = (await px.proxy.cacheList()).map((e) => e.url).sort();
    expect(urls).toEqual([
      `http://origin.test:${origin.port}/img.png`,
      `http://origin.test:${origin.port}/page.html`,
    ]);
  });

  it('TLS off: revalidation follows the upgrade too (conditional request answered 304)', async () => {
    const origin = await httpsOnlySite();
    const px = await proxy();
    const host = `origin.test.${origin.port}.nyud.net`;
    expect((await get(px.port, host, '/r')).status).toBe(200);
    await px.clock.advance(700_000); // past max-age=600
    const r = await get(px.port, host, '/r');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('secure /r');
    expect(r.headers['cache-status']).toBe('Coral; fwd=stale; fwd-status=304');
    expect(count(origin)).toEqual({ 'http /r': 2, 'https /r': 2 });
  });

  it('TLS off, followHttpsUpgrade false: the redirect is passed on untouched', async () => {
    const origin = await httpsOnlySite();
    const px = await proxy({ followHttpsUpgrade: false });
    const r = await get(px.port, `origin.test.${origin.port}.nyud.net`, '/p');
    expect(r.status).toBe(301);
    expect(r.headers['location']).toBe(`https://origin.test:${origin.port}/p`);
    expect(count(origin)).toEqual({ 'http /p': 1 });
  });

  it('a redirect to another URL or host over https is not followed', async () => {
    const origin = await startDualOrigin(
      (scheme, req, res) => {
        const to =
          req.url === '/moved'
            ? `https://origin.test:${origin.port}/elsewhere`
            : 'https://other.test/x';
        res.writeHead(scheme === 'http' ? 302 : 200, { location: to, 'content-length': '0' });
        res.end();
      },
      pki.originCert,
      'origin.test',
    );
    cleanups.push(() => origin.close());
    const px = await proxy();
    for (const path of ['/moved', '/away']) {
      const r = await get(px.port, `origin.test.${origin.port}.nyud.net`, path);
      expect(r.status).toBe(302);
    }
    expect(origin.hits.every((h) => h.scheme === 'http')).toBe(true);
  });
});
