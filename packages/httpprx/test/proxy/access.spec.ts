/**
 * `onAccess`: one access record per request, at its response's end — a miss from the origin, a
 * fast-path hit, a rate-limited request — with what only the proxy knows (the origin URL, the
 * cache kind's Cache-Status facts, where the body came from, the forward request's time). The
 * node's end-to-end test (packages/node/test/compose/access-log.spec.ts) covers peers, disk, 4xx,
 * 5xx and aborted transfers over a real fleet.
 */
import type { AccessRecord } from '@coral/accesslog';
import { afterEach, describe, expect, it } from 'vitest';
import { get, recordingMetrics, startOrigin, startProxy, until } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

let origin: Origin | undefined;
let px: ProxyHarness | undefined;
afterEach(async () => {
  await px?.close();
  await origin?.close();
  px = origin = undefined;
});

describe('onAccess', () => {
  it('hands over one record per request, miss then fast-path hit, with the proxy’s facts', async () => {
    origin = await startOrigin((_req, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=600', 'content-type': 'text/plain' });
      res.end('hello access log');
    });
    const records: AccessRecord[] = [];
    let heads = 0;
    const metrics = { ...recordingMetrics(), request: () => void heads++ };
    px = await startProxy({}, { onAccess: (r) => records.push(r), metrics });
    const host = origin.coralHost;
    expect((await get(px.port, host, '/a?x=1')).status).toBe(200);
    await until(() => records.length === 1, 'the miss record');
    await until(
      async () =>
        (await get(px!.port, host, '/a?x=1')).headers['cache-status']!.toString().includes('hit'),
      'a hit',
    );
    await until(() => records.length >= 2, 'the hit record');
    const [miss, hit] = records as [AccessRecord, AccessRecord];
    const originUrl = `http://origin.test:${origin.port}/a?x=1`;
    expect(miss).toMatchObject({
      method: 'GET',
      host,
      url: `http://${host}/a?x=1`,
      originUrl,
      status: 200,
      cache: { result: 'miss', fwd: 'uri-miss', fwdStatus: 200 },
      served: { from: 'origin' },
      aborted: false,
    });
    expect(miss.upstreamMs).toBeGreaterThanOrEqual(0);
    expect(hit).toMatchObject({
      originUrl,
      status: 200,
      cache: { result: 'hit', hit: true },
      served: { from: 'memory' },
    });
    expect(hit).not.toHaveProperty('upstreamMs');
    expect(hit.bytes).toBeGreaterThan('hello access log'.length);
    // The metrics the proxy was given still get every response head.
    expect(heads).toBeGreaterThanOrEqual(2);
  });

  it('records a request the rate limiter refuses, and nothing without onAccess', async () => {
    origin = await startOrigin((_req, res) => res.end('x'));
    const records: AccessRecord[] = [];
    px = await startProxy(
      { rateLimit: { perSecond: 1, burst: 1 } },
      { onAccess: (r) => records.push(r) },
    );
    await get(px.port, origin.coralHost, '/1');
    const refused = await get(px.port, origin.coralHost, '/2');
    expect(refused.status).toBe(429);
    await until(() => records.length === 2, 'two records');
    expect(records[1]).toMatchObject({
      status: 429,
      cache: { result: 'error', detail: 'CORAL_RATE_LIMITED' },
      served: { from: 'node' },
    });
    expect(records[1]).not.toHaveProperty('originUrl');
  });
});
