import { afterEach, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { get, httpDate, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

let origin: Origin;
let px: ProxyHarness;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Origin whose responses are scripted per path; the clock of the proxy also dates the responses. */
async function setup(
  routes: Record<string, (req: IncomingMessage, res: ServerResponse, n: number) => void>,
  options = {},
) {
  px = await startProxy(options);
  const counts = new Map<string, number>();
  origin = await startOrigin((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    const h = routes[path];
    if (!h) {
      res.writeHead(404, { date: httpDate(px.clock.now()) });
      res.end('nope');
      return;
    }
    h(req, res, n);
  });
  cleanups.push(
    () => origin.close(),
    () => px.close(),
  );
}

const hitsFor = (path: string) => origin.hits.filter((h) => h.url === path).length;
const fetchP = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  get(px.port, origin.coralHost, path, headers, method);

function reply(extra: Record<string, string>, body = 'hello', status = 200) {
  return (_req: IncomingMessage, res: ServerResponse, n: number) => {
    res.writeHead(status, {
      date: httpDate(px.clock.now()),
      'content-type': 'text/plain',
      ...extra,
    });
    res.end(`${body} ${n}`);
  };
}

describe('freshness', () => {
  it('max-age: reused while fresh, refetched once stale', async () => {
    await setup({ '/a': reply({ 'cache-control': 'max-age=60' }) });
    const r1 = await fetchP('/a');
    expect(r1.status).toBe(200);
    expect(r1.body.toString()).toBe('hello 1');
    expect(r1.headers['cache-status']).toMatch(/fwd=uri-miss; fwd-status=200; stored/);
    expect(r1.headers['via']).toMatch(/coral-/);
    await px.clock.advance(30_000);
    const r2 = await fetchP('/a');
    expect(r2.body.toString()).toBe('hello 1');
    expect(r2.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(r2.headers['age']).toBe('30');
    expect(hitsFor('/a')).toBe(1);
    await px.clock.advance(31_000);
    const r3 = await fetchP('/a');
    expect(r3.body.toString()).toBe('hello 2');
    expect(hitsFor('/a')).toBe(2);
  });
});
