/**
 * Stale on origin failure (issue 31, item 4): once a cached page is past its freshness and the
 * origin is down, the proxy serves the stale copy for up to `staleOnErrorSeconds` (default 6 h)
 * instead of an error, unless the response forbids it (must-revalidate, proxy-revalidate,
 * s-maxage, no-cache: RFC 9111 §4.2.4), and an origin's own `stale-if-error` window takes
 * precedence. Over real sockets: the origin is stopped (connections refused) after its pages went
 * stale on the injected clock; a 5xx to the revalidation counts as a failure too (§4.3.3).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { STALE_ON_ERROR_SECONDS } from '../../src/constants.js';
import { get, httpDate, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Each path's Cache-Control; every page has an ETag, so a stale copy is revalidated. */
const PAGES: Record<string, string> = {
  '/plain': 'max-age=60',
  '/must': 'max-age=60, must-revalidate',
  '/proxy': 'max-age=60, proxy-revalidate',
  '/shared': 's-maxage=60',
  '/nocache': 'no-cache',
  '/own-window': 'max-age=60, stale-if-error=30',
  '/long-window': 'max-age=60, stale-if-error=86400',
};

async function setup(
  options: { staleOnErrorSeconds?: number } = {},
): Promise<{ px: ProxyHarness; origin: Origin; down: () => void }> {
  const px = await startProxy(options);
  let failing = false;
  const origin = await startOrigin((req, res) => {
    const path = req.url ?? '/';
    if (failing) {
      res.writeHead(503, { date: httpDate(px.clock.now()) });
      res.end('origin overloaded');
      return;
    }
    res.writeHead(200, {
      date: httpDate(px.clock.now()),
      etag: `"${path}"`,
      'cache-control': PAGES[path] ?? 'max-age=60',
    });
    res.end(`page ${path}`);
  });
  cleanups.push(
    () => px.close(),
    () => origin.close(),
  );
  for (const path of Object.keys(PAGES)) {
    expect((await get(px.port, origin.coralHost, path)).body.toString()).toBe(`page ${path}`);
  }
  return { px, origin, down: () => (failing = true) };
}

describe('the origin stopped after its pages went stale', () => {
  it('clients get the stale page (Cache-Status says so); must-revalidate pages get an error', async () => {
    const { px, origin } = await setup();
    await px.clock.advance(120_000); // 60 s past expiry
    await origin.close(); // connections refused from now on
    const ask = (path: string) => get(px.port, origin.coralHost, path);

    for (const path of ['/plain', '/long-window']) {
      for (let i = 0; i < 2; i++) {
        // The second time the origin's failure is negatively cached: stale all the same.
        const r = await ask(path);
        expect(r.status, path).toBe(200);
        expect(r.body.toString()).toBe(`page ${path}`);
        expect(r.headers['cache-status'], path).toBe(
          `Coral; fwd=stale; ttl=-60; detail=${path === '/plain' ? 'stale-on-error' : 'stale-if-error'}`,
        );
      }
    }
    // Forbidden by the response: an error, never the stale page (RFC 9111 §4.2.4, §5.2.2.2).
    for (const path of ['/must', '/proxy', '/shared']) {
      const r = await ask(path);
      expect(r.status, path).toBe(504);
      expect(r.headers['x-coral-error'], path).toBe('CORAL_REVALIDATION_FAILED');
    }
    const nc = await ask('/nocache');
    expect(nc.status).toBe(502);
    expect(nc.body.toString()).not.toContain('page /nocache');
    // The origin's own window (30 s) takes precedence over the operator's 6 h.
    const own = await ask('/own-window');
    expect(own.status).toBe(502);
    expect(own.headers['x-coral-error']).toMatch(/^CORAL_ORIGIN_(UNREACHABLE|NEGATIVE_CACHED)$/);
    // A client that asks for the origin's answer (no-cache) gets the error too.
    expect(
      (await get(px.port, origin.coralHost, '/plain', { 'cache-control': 'no-cache' })).status,
    ).toBe(502);
  });

  it('up to staleOnErrorSeconds past expiry, then the error', async () => {
    const { px, origin } = await setup();
    await origin.close();
    await px.clock.advance((60 + STALE_ON_ERROR_SECONDS - 1) * 1000);
    expect((await get(px.port, origin.coralHost, '/plain')).status).toBe(200);
    await px.clock.advance(2_000);
    expect((await get(px.port, origin.coralHost, '/plain')).status).toBe(502);
  });

  it('a 5xx answer to the revalidation counts as a failure (RFC 9111 §4.3.3)', async () => {
    const { px, origin, down } = await setup();
    await px.clock.advance(120_000);
    down();
    const r = await get(px.port, origin.coralHost, '/plain');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('page /plain');
    expect(r.headers['cache-status']).toBe(
      'Coral; fwd=stale; fwd-status=503; ttl=-60; detail=stale-on-error',
    );
    expect((await get(px.port, origin.coralHost, '/must')).status).toBe(503);
  });

  it('staleOnErrorSeconds: 0 turns it off', async () => {
    const { px, origin } = await setup({ staleOnErrorSeconds: 0 });
    await px.clock.advance(120_000);
    await origin.close();
    expect((await get(px.port, origin.coralHost, '/plain')).status).toBe(502);
    expect((await get(px.port, origin.coralHost, '/long-window')).status).toBe(200);
  });
});
