import { mkdtempSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { CoralProxy } from '../../src/proxy/coral-proxy.js';
import type { ProxyMetrics } from '../../src/proxy/types.js';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import { urlKey } from '../../src/mapping/coral-name.js';
import { T0, get, startOrigin, startProxy, until } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const big = Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 11) % 256));

describe('disk-backed proxy', () => {
  it('serves large objects and ranges from files, survives a restart, evicts by budget and withdraws', async () => {
    const origin = await startOrigin((req, res) => {
      const n = Number((req.url ?? '').slice(1));
      res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(big.length) });
      res.end(n === 0 ? big : Buffer.alloc(big.length, n));
    });
    cleanups.push(() => origin.close());
    const dataDir = mkdtempSync(join(tmpdir(), 'coral-px-'));
    const clock = new ManualClock(T0);
    const index = new InMemoryContentIndex({ clock });
    const opts = { dataDir, diskBudgetBytes: 7 * 1024 * 1024, hotObjectMaxBytes: 1024 };
    let px = await startProxy(opts, { clock, index });
    expect((await get(px.port, origin.coralHost, '/0')).body.equals(big)).toBe(true);
    // (The client has the whole body before the file is committed; wait for the commit.)
    const listed = async () => (await px.proxy.cacheList()).length;
    await until(async () => (await listed()) > 0, 'the object committed');
    const r = await get(px.port, origin.coralHost, '/0', { range: 'bytes=1000000-1000099' });
    expect(r.status).toBe(206);
    expect(r.body.equals(big.subarray(1_000_000, 1_000_100))).toBe(true);
    await px.close();
    const before = index.log.length;
    px = await startProxy(opts, { clock, index });
    cleanups.push(() => px.close());
    // The restarted proxy announces what it kept on disk, on its new port.
    const again0 = index.log.slice(before).find((e) => e.op === 'announce');
    expect(again0?.holder).toMatchObject({
      state: 'complete',
      httpPort: px.port,
      size: big.length,
    });
    const again = await get(px.port, origin.coralHost, '/0');
    expect(again.headers['cache-status']).toMatch(/hit/);
    expect(again.body.equals(big)).toBe(true);
    expect(origin.hits).toHaveLength(1);
    // Two more 3 MiB objects do not fit in 7 MiB: the least recently used (/0) goes, and is withdrawn.
    await get(px.port, origin.coralHost, '/1');
    await get(px.port, origin.coralHost, '/2');
    await until(() => index.log.some((e) => e.op === 'withdraw'), 'withdraw after eviction');
    // The eviction happens inside /2's commit, before its record is written: wait for that too.
    await until(async () => (await listed()) === 2, '/2 committed');
    const urls = (await px.proxy.cacheList()).map((e) => new URL(e.url).pathname).sort();
    expect(urls).toEqual(['/1', '/2']);
    const k0 = Buffer.from(urlKey(`http://origin.test:${origin.port}/0`)).toString('hex');
    expect(index.log.find((e) => e.op === 'withdraw')!.key).toBe(k0);
  });
});

describe('lifecycle, metrics and mounting', () => {
  it('close() lets an in-flight response finish, then refuses new connections', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60' });
      res.write('first;');
      void released.then(() => res.end('last'));
    });
    cleanups.push(() => origin.close());
    const px = await startProxy();
    let received = '';
    const done = new Promise<string>((resolve, reject) => {
      request(
        { host: '127.0.0.1', port: px.port, headers: { host: origin.coralHost }, agent: false },
        (res) => {
          res.on('data', (c: Buffer) => (received += c.toString()));
          res.on('end', () => resolve(received));
          res.on('error', reject);
        },
      ).end();
    });
    await until(() => received.length > 0, 'first bytes');
    const closed = px.proxy.close();
    await expect(get(px.port, origin.coralHost, '/other')).rejects.toThrow();
    release();
    expect(await done).toBe('first;last');
    await closed;
  });

  it('reports every response to the metrics sink', async () => {
    const seen: string[] = [];
    const metrics: ProxyMetrics = {
      request: (cs, m, s) => seen.push(`${cs} ${m} ${s}`),
      originFetch: (b, ok) => seen.push(`origin ${b} ${ok}`),
      peerFetch: (b, ok) => seen.push(`peer ${b} ${ok}`),
      rateLimited: () => seen.push('limited'),
    };
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60', 'content-length': '5' });
      res.end('hello');
    });
    const px = await startProxy({ rateLimit: { perSecond: 1, burst: 3 } }, { metrics });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    await get(px.port, origin.coralHost, '/');
    await get(px.port, origin.coralHost, '/');
    await get(px.port, 'elsewhere.example', '/');
    await get(px.port, origin.coralHost, '/');
    expect(seen).toEqual([
      'miss GET 200',
      'origin 5 true',
      'hit GET 200',
      'error GET 403',
      'limited',
      'error GET 429',
    ]);
  });

  it('handler mounts on any http.Server; purge drops the object', async () => {
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60' });
      res.end('x');
    });
    const clock = new ManualClock(T0);
    const proxy = new CoralProxy(
      { index: new InMemoryContentIndex({ clock }), clock },
      {
        allowPrivateOrigins: true,
        hosts: { 'origin.test': ['127.0.0.2'] },
        self: { nodeId: 'f0'.repeat(20), ip: '127.0.0.1', httpPort: 1 },
      },
    );
    await proxy.open();
    const server = createServer(proxy.handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(
      () => origin.close(),
      () => proxy.close(),
      () => new Promise<void>((r) => server.close(() => r())),
    );
    const port = (server.address() as AddressInfo).port;
    await get(port, origin.coralHost, '/');
    expect((await get(port, origin.coralHost, '/')).headers['cache-status']).toMatch(/hit/);
    expect(await proxy.purge(`http://origin.test:${origin.port}/`)).toBe(true);
    expect((await get(port, origin.coralHost, '/')).headers['cache-status']).toMatch(/uri-miss/);
    expect(origin.hits).toHaveLength(2);
    await expect(proxy.purge('ftp://nope/')).rejects.toMatchObject({ code: 'CORAL_BAD_URL' });
  });

  it('purgeAndWithdraw withdraws once and answers after the withdrawal, saying when it failed', async () => {
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=600' });
      res.end('body');
    });
    const clock = new ManualClock(T0);
    const index = new InMemoryContentIndex({ clock });
    // The index's withdrawals wait until the test lets them go, or fail.
    let release: (() => void) | undefined;
    let fail = false;
    const withdraw = index.withdraw.bind(index);
    index.withdraw = async (key: Uint8Array, nodeId?: string) => {
      await new Promise<void>((r) => (release = r));
      if (fail) throw new Error('no member answered');
      await withdraw(key, nodeId);
    };
    const px = await startProxy({}, { clock, index });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const url = `http://origin.test:${origin.port}/a`;
    await get(px.port, origin.coralHost, '/a');
    await until(async () => (await px.proxy.cacheList()).length > 0, 'the object committed');
    const withdrawals = () => index.log.filter((e) => e.op === 'withdraw').length;

    let answered = false;
    const purge = px.proxy.purgeAndWithdraw(url).then((r) => ((answered = true), r));
    await until(async () => release !== undefined, 'the withdrawal started');
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false); // not before the index took the withdrawal
    release!();
    expect(await purge).toEqual({ purged: true, withdrawn: true });
    expect(withdrawals()).toBe(1);
    expect(await index.lookup(urlKey(url))).toEqual([]);

    release = undefined;
    fail = true;
    const again = px.proxy.purgeAndWithdraw(url);
    await until(async () => release !== undefined, 'the second withdrawal started');
    release!();
    expect(await again).toEqual({ purged: false, withdrawn: false });
    expect(withdrawals()).toBe(1);
  });

  it('an uncacheable transfer whose only client leaves is stopped upstream', async () => {
    let originSawClose = false;
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'private' });
      res.write(Buffer.alloc(10_000, 1));
      res.on('close', () => (originSawClose = true)); // never ends on its own
    });
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    await new Promise<void>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port: px.port, headers: { host: origin.coralHost }, agent: false },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => {});
      req.end();
    });
    await until(() => originSawClose, 'origin connection closed by the proxy');
  });
});
