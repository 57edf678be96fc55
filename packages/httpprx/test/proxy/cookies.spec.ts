/**
 * Headers that would act on the whole zone never reach a client: Set-Cookie on Coralized names
 * (never passed), and in site mode a cookie whose Domain is the zone, a parent of it, or not the
 * site's own (RFC 6265 §5.3 step 6).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { get, startOrigin, startProxy } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const COOKIES = [
  'host=1; Path=/',
  'zone=1; Domain=nyud.net',
  'parent=1; Domain=.net',
  'other=1; Domain=elsewhere.example',
  'own=1; Domain=shop.nyud.net',
];

async function setup() {
  const origin = await startOrigin((_q, res) => {
    res.writeHead(200, {
      'set-cookie': COOKIES,
      'alt-svc': 'h3=":443"',
      'content-length': '2',
      'cache-control': 'max-age=60',
    });
    res.end('ok');
  });
  cleanups.push(() => origin.close());
  const px = await startProxy({ sites: { 'shop.nyud.net': `http://origin.test:${origin.port}` } });
  cleanups.push(() => px.close());
  return { origin, px };
}

describe('Set-Cookie and zone-wide fields', () => {
  it('site mode: only cookies scoped to the site itself are passed, and nothing is stored', async () => {
    const { px } = await setup();
    for (let i = 0; i < 2; i++) {
      const r = await get(px.port, 'shop.nyud.net', '/');
      expect(r.status).toBe(200);
      expect(r.headers['set-cookie']).toEqual(['host=1; Path=/', 'own=1; Domain=shop.nyud.net']);
      expect(r.headers['cache-status']).toContain('fwd=uri-miss');
    }
    // Unsafe methods are forwarded and filtered the same way.
    const post = await get(
      px.port,
      'shop.nyud.net',
      '/form',
      {},
      'POST',
      '127.0.0.1',
      Buffer.from('x'),
    );
    expect(post.headers['set-cookie']).toEqual(['host=1; Path=/', 'own=1; Domain=shop.nyud.net']);
  });

  it('Coralized names: no Set-Cookie at all, no Alt-Svc, miss or hit', async () => {
    const { origin, px } = await setup();
    for (let i = 0; i < 2; i++) {
      const r = await get(px.port, origin.coralHost, '/');
      expect(r.status).toBe(200);
      expect(r.headers['set-cookie']).toBeUndefined();
      expect(r.headers['alt-svc']).toBeUndefined();
    }
    expect(origin.hits).toHaveLength(1);
  });
});
