/**
 * The node-wide bandwidth caps through the proxy, over real sockets, driven by the injected clock:
 * a greedy origin domain with six concurrent downloads and a domain with one. Time moves only
 * when every unfinished download waits for its grant, so the shares below are the scheduler's,
 * whatever the machine's speed; no test here reads a wall clock.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OTHER_DOMAIN } from '../../src/fairness/fair-share.js';
import type { ProxyOptions } from '../../src/proxy/types.js';
import { get, startOrigin, startProxy, until } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const MiB = 1024 * 1024;
const CAP = 2 * MiB;
const STEP_MS = 100;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An origin serving `size` bytes at every path (storable). */
async function bigOrigin(ip: string, size: number): Promise<Origin> {
  const body = Buffer.alloc(size, 7);
  const o = await startOrigin((_q, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=3600', 'content-length': String(size) });
    res.end(body);
  }, ip);
  cleanups.push(() => o.close());
  return o;
}

interface Download {
  done: boolean;
  status?: number;
  bytes?: number;
}

function download(px: ProxyHarness, host: string, path: string): Download {
  const d: Download = { done: false };
  void get(px.port, host, path).then(
    (r) => Object.assign(d, { done: true, status: r.status, bytes: r.body.length }),
    (e: unknown) => Object.assign(d, { done: true, status: -1, error: String(e) }),
  );
  return d;
}

/**
 * Move the clock to its next timer (the share's next grant) each time every unfinished download
 * waits for a grant of `share`, until `stop()`: one grant at a time, so a download's next request
 * is always back in the queue before the next grant is decided. Returns the clock time it took (ms).
 */
async function drive(
  px: ProxyHarness,
  share: 'origin' | 'served',
  downloads: Download[],
  stop: () => boolean,
): Promise<number> {
  const start = px.clock.now();
  for (;;) {
    await until(
      () => stop() || px.proxy.traffic()[share].waiting === downloads.filter((d) => !d.done).length,
      'every download waits for its grant',
    );
    if (stop()) return px.clock.now() - start;
    await px.clock.advanceTo(px.clock.nextAt() ?? px.clock.now() + STEP_MS);
  }
}

const bytesOf = (px: ProxyHarness, share: 'origin' | 'served', domain: string) =>
  px.proxy.traffic(50)[share].domains.find((d) => d.domain === domain)?.bytes ?? 0;

async function proxyWith(options: Partial<ProxyOptions>): Promise<ProxyHarness> {
  const px = await startProxy(options);
  cleanups.push(() => px.close());
  return px;
}

describe('origin bandwidth cap, shared between origin domains', () => {
  it('one download of a second domain gets half the cap next to six greedy ones', async () => {
    const px = await proxyWith({ bandwidth: { originBytesPerSec: CAP } });
    const greedy = await bigOrigin('127.0.0.2', 2 * MiB);
    const lone = await bigOrigin('127.0.0.3', 2 * MiB);
    const gs = Array.from({ length: 6 }, (_, i) => download(px, greedy.coralHost, `/g${i}`));
    const l = download(px, `other.test.${lone.port}.nyud.net`, '/l');
    const all = [...gs, l];
    // Both domains backlogged until the lone download ends.
    const t = await drive(px, 'origin', all, () => l.done);
    expect(l.status).toBe(200);
    expect(l.bytes).toBe(2 * MiB);
    const g = bytesOf(px, 'origin', 'origin.test');
    const o = bytesOf(px, 'origin', 'other.test');
    expect(o).toBe(2 * MiB);
    // Max-min: equal shares while both wait (to within a chunk or two of socket reads).
    expect(Math.abs(g - o)).toBeLessThanOrEqual(256 * 1024);
    // At the cap meanwhile: about 4 MiB took about 2 s of the clock.
    expect(t).toBeGreaterThanOrEqual(((g + o - 2 * 256 * 1024) / CAP) * 1000);
    expect(
      px.proxy.traffic().origin.domains.find((d) => d.domain === 'other.test')!.throttledMs,
    ).toBeGreaterThan(0);
    // The greedy downloads finish too, complete.
    await drive(px, 'origin', all, () => all.every((d) => d.done));
    expect(gs.map((d) => [d.status, d.bytes])).toEqual(gs.map(() => [200, 2 * MiB]));
  });

  it('alone, a domain gets the whole cap', async () => {
    const px = await proxyWith({ bandwidth: { originBytesPerSec: CAP } });
    const lone = await bigOrigin('127.0.0.3', 4 * MiB);
    const l = download(px, `other.test.${lone.port}.nyud.net`, '/l');
    const t = await drive(px, 'origin', [l], () => l.done);
    expect(l.bytes).toBe(4 * MiB);
    // 4 MiB at 2 MiB/s: 2 s of the clock, less the initial burst, to within a step.
    expect(t).toBeGreaterThanOrEqual(1_800);
    expect(t).toBeLessThanOrEqual(2_000 + STEP_MS);
  });

  it('without a cap nothing waits, and bytes are still counted per domain', async () => {
    const px = await proxyWith({});
    const o = await bigOrigin('127.0.0.2', 1 * MiB);
    const r = await get(px.port, o.coralHost, '/x');
    expect(r.body.length).toBe(MiB);
    const t = px.proxy.traffic();
    expect(t.origin.capBytesPerSec).toBe(0);
    expect(t.origin.domains).toEqual([
      { domain: 'origin.test', bytes: MiB, throttledMs: 0 },
      { domain: OTHER_DOMAIN, bytes: 0, throttledMs: 0 },
    ]);
    expect(t.served.domains[0]).toEqual({ domain: 'origin.test', bytes: MiB, throttledMs: 0 });
  });
});

describe('served bandwidth cap', () => {
  it('stored objects (from disk): the second domain still gets half', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coral-fair-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const px = await proxyWith({ dataDir: dir, bandwidth: { servedBytesPerSec: CAP } });
    const greedy = await bigOrigin('127.0.0.2', 2 * MiB);
    const lone = await bigOrigin('127.0.0.3', 2 * MiB);
    const loneHost = `other.test.${lone.port}.nyud.net`;
    // Fill the cache (served under the cap too), one object at a time.
    for (const [host, path] of [
      ...Array.from({ length: 6 }, (_, i) => [greedy.coralHost, `/g${i}`] as const),
      [loneHost, '/l'] as const,
    ]) {
      const d = download(px, host, path);
      await drive(px, 'served', [d], () => d.done);
      expect([d.status, d.bytes, (d as { error?: string }).error]).toEqual([
        200,
        2 * MiB,
        undefined,
      ]);
    }
    const g0 = bytesOf(px, 'served', 'origin.test');
    const o0 = bytesOf(px, 'served', 'other.test');
    const gs = Array.from({ length: 6 }, (_, i) => download(px, greedy.coralHost, `/g${i}`));
    const l = download(px, loneHost, '/l');
    const all = [...gs, l];
    await drive(px, 'served', all, () => l.done);
    expect(l.bytes).toBe(2 * MiB);
    const g = bytesOf(px, 'served', 'origin.test') - g0;
    const o = bytesOf(px, 'served', 'other.test') - o0;
    expect(o).toBe(2 * MiB);
    expect(Math.abs(g - o)).toBeLessThanOrEqual(256 * 1024);
    await drive(px, 'served', all, () => all.every((d) => d.done));
    expect(gs.map((d) => d.bytes)).toEqual(gs.map(() => 2 * MiB));
    // Every one of them was a hit.
    expect(greedy.hits.length + lone.hits.length).toBe(7);
  });
});

describe('served bandwidth cap on hits from memory', () => {
  it('a hot hit the bucket cannot pay for waits its turn instead of taking the fast path', async () => {
    const px = await proxyWith({ bandwidth: { servedBytesPerSec: 64 * 1024 } });
    const o = await bigOrigin('127.0.0.2', 40 * 1024);
    const fetchOne = () => download(px, o.coralHost, '/hot');
    // The miss takes 40 KiB of the 64 KiB bucket.
    const miss = fetchOne();
    await until(() => miss.done, 'the miss');
    const waitOne = async () => {
      const d = fetchOne();
      await until(() => d.done || px.proxy.traffic().served.waiting === 1, 'the hit waits');
      expect(d.done).toBe(false);
      // 40 KiB more than the 24 KiB left: granted once the clock has refilled the difference.
      await drive(px, 'served', [d], () => d.done);
      expect([d.status, d.bytes]).toEqual([200, 40 * 1024]);
    };
    await waitOne(); // a hit on the full path (it also routes the fast path to the object)
    await waitOne(); // the fast path cannot pay: the full path waits
    expect(o.hits.length).toBe(1);
    expect(bytesOf(px, 'served', 'origin.test')).toBe(3 * 40 * 1024);
  });
});
