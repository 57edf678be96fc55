/**
 * The response-time histograms (metrics/latency.ts) over a real proxy on loopback, its http and
 * https listeners, a real origin and real clients: each response is observed once, under its
 * cache result and protocol, and the time to first byte and the duration are the times between
 * the three points the timer reads (request head parsed, response head written, last byte
 * written). The timer's clock is a counter that moves one millisecond per reading, so the times
 * are exact and no test waits on real time for them.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoralProxy, InMemoryContentIndex } from '@coral/httpprx';
import { issueCert, makeTestCa, waitFor, type TestCa } from '@coral/testkit';
import { CoralMetrics } from '../../src/metrics/metrics.js';

let ticks = 0;
const metrics = new CoralMetrics({ defaultMetrics: false, monotonic: { now: () => ++ticks } });
let origin: Server;
let originPort = 0;
let proxy: CoralProxy;
let port = 0;
let tlsPort = 0;
let ca: TestCa;

beforeAll(async () => {
  origin = createServer((req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': '5' });
    res.end('hello');
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.2', r));
  originPort = (origin.address() as AddressInfo).port;
  proxy = new CoralProxy(
    { index: new InMemoryContentIndex(), metrics: metrics.proxy },
    {
      allowPrivateOrigins: true,
      hosts: { 'origin.test': ['127.0.0.2'] },
      self: { nodeId: 'ab'.repeat(20), ip: '127.0.0.1', httpPort: 0 },
      rateLimit: { perSecond: 0 },
    },
  );
  port = (await proxy.listen(0, '127.0.0.1')).port;
  ca = await makeTestCa();
  const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
  tlsPort = (await proxy.listenTls({ cert: leaf.chain, key: leaf.key, port: 0, host: '127.0.0.1' }))
    .port;
  metrics.timeProxy([
    { host: '127.0.0.1', port },
    { host: '127.0.0.1', port: tlsPort },
  ]);
});

afterAll(async () => {
  metrics.close();
  await proxy?.close();
  await new Promise((r) => origin?.close(r));
});

/** One GET through the proxy, its body read to the end. */
function fetchVia(
  host: string,
  path: string,
  tls = false,
): Promise<{ status: number; cs: string }> {
  return new Promise((resolve, reject) => {
    const opts = { host: '127.0.0.1', path, headers: { host }, agent: false };
    const done = (res: IncomingMessage) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, cs: String(res.headers['cache-status'] ?? '') }),
      );
    };
    const req = tls
      ? httpsRequest({ ...opts, port: tlsPort, ca: ca.cert, servername: 'x.nyud.net' }, done)
      : request({ ...opts, port }, done);
    req.on('error', reject);
    req.end();
  });
}

/** The samples of one metric family: labels (as a JSON-able record) → value. */
async function samples(
  name: string,
): Promise<Array<{ labels: Record<string, string>; value: number }>> {
  const out = [];
  for (const line of (await metrics.text()).split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)) labels[k!] = v!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

const count = async (family: string, labels: Record<string, string> = {}) =>
  (await samples(`${family}_count`))
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);

/** Wait until `n` responses have finished (each is observed after its last byte is written). */
const finished = (n: number) =>
  waitFor(async () => (await count('coral_http_request_duration_seconds')) === n, {
    what: `${n} responses observed`,
    limitMs: 10_000,
    everyMs: 5,
  });

/** The `le` of the lowest bucket that holds an observation with these labels. */
async function bucketOf(family: string, labels: Record<string, string>): Promise<string> {
  const rows = (await samples(`${family}_bucket`)).filter((s) =>
    Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return rows.find((r) => r.value > 0)!.labels['le']!;
}

describe('response-time histograms', () => {
  it('observe every proxy response once, by cache result and protocol, with exact times', async () => {
    const host = `origin.test.${originPort}.nyud.net`;
    expect((await fetchVia(host, '/a')).cs).toMatch(/fwd=uri-miss/);
    await finished(1);
    await waitFor(async () => (await proxy.cacheList()).length === 1, { what: '/a committed' });
    expect((await fetchVia(host, '/a')).cs).toMatch(/hit/);
    await finished(2);
    // Again: now from the fast path (the first hit routed the hot object).
    expect((await fetchVia(host, '/a')).cs).toMatch(/hit/);
    await finished(3);
    expect(await metrics.registry.getSingleMetricAsString('coral_http_fast_hits_total')).toMatch(
      / 1$/m,
    );
    // Not a Coralized name: the proxy refuses it (403, its error page), over http and over https.
    expect((await fetchVia('www.example.com', '/')).status).toBe(403);
    await finished(4);
    expect((await fetchVia('www.example.com', '/', true)).status).toBe(403);
    await finished(5);

    const ttfb = 'coral_http_time_to_first_byte_seconds';
    const total = 'coral_http_request_duration_seconds';
    for (const [result, protocol, n] of [
      ['miss', 'http', 1],
      ['hit', 'http', 2],
      ['error', 'http', 1],
      ['error', 'https', 1],
    ] as const) {
      const labels = { cache_result: result, protocol };
      expect(await count(ttfb, labels), `${result} ${protocol}`).toBe(n);
      expect(await count(total, labels), `${result} ${protocol}`).toBe(n);
      // Three readings per response: 1 ms to the head, 2 ms to the last byte.
      expect(await bucketOf(ttfb, labels)).toBe('0.001');
      expect(await bucketOf(total, labels)).toBe('0.0025');
    }
    expect(await count(total, { cache_result: 'peer' })).toBe(0);
    expect(ticks).toBe(5 * 3);
    // The responses' sums, in seconds.
    const sum = (await samples(`${total}_sum`)).reduce((a, s) => a + s.value, 0);
    expect(sum).toBeCloseTo(5 * 0.002, 9);
  });

  it('times nothing of the other servers of the process', async () => {
    const other = createServer((_req, res) => res.end('x'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const before = ticks;
    await new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: (other.address() as AddressInfo).port, agent: false },
        (res) => res.resume().on('end', resolve),
      );
      req.on('error', reject);
      req.end();
    });
    await new Promise((r) => other.close(r));
    expect(ticks).toBe(before);
  });
});
