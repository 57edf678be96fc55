import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startOrigin, startProxy, until } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Progress {
  received: number;
  headers?: Record<string, unknown>;
  body?: Buffer;
  error?: Error;
}

function streamingGet(port: number, host: string, path: string, p: Progress): Promise<void> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path, headers: { host }, agent: false },
      (res) => {
        p.headers = res.headers;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          p.received += c.length;
        });
        res.on('end', () => {
          p.body = Buffer.concat(chunks);
          resolve();
        });
        res.on('error', (e) => {
          p.error = e;
          resolve();
        });
      },
    );
    req.on('error', (e) => {
      p.error = e;
      resolve();
    });
    req.end();
  });
}

describe('request coalescing (read-while-writer)', () => {
  it('100 concurrent misses: one origin request, bytes streamed to every waiter before the origin finishes, identical bodies', async () => {
    const body = Buffer.from(Array.from({ length: 256 * 1024 }, (_, i) => (i * 7) % 256));
    const half = 100 * 1024;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(body.length) });
      res.write(body.subarray(0, half));
      // Hold the rest back until the test says so.
      void released.then(() => res.end(body.subarray(half)));
    });
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const progress: Progress[] = Array.from({ length: 100 }, () => ({ received: 0 }));
    const done = progress.map((p) => streamingGet(px.port, origin.coralHost, '/big', p));
    // Every waiter gets the first half while the origin still holds the rest back.
    await until(
      () => progress.every((p) => p.received >= half),
      'first bytes at every waiter',
      30_000,
    );
    expect(progress.every((p) => p.body === undefined)).toBe(true);
    expect(origin.hits).toHaveLength(1);
    release();
    await Promise.all(done);
    expect(origin.hits).toHaveLength(1);
    for (const p of progress) {
      expect(p.error).toBeUndefined();
      expect(p.body!.equals(body)).toBe(true);
    }
    const collapsed = progress.filter((p) =>
      String(p.headers!['cache-status']).includes('collapsed'),
    );
    // All 100 were streaming before the object was complete: one started the fetch, 99 joined it.
    expect(collapsed).toHaveLength(99);
    // And it was stored once, whole.
    const list = await px.proxy.cacheList();
    expect(list).toHaveLength(1);
    expect(list[0]!.size).toBe(body.length);
  });

  it('a waiter that joins late gets the bytes that already passed, then the rest', async () => {
    const body = Buffer.alloc(64 * 1024, 5);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=600' });
      res.write(body.subarray(0, 1000));
      void released.then(() => res.end(body.subarray(1000)));
    });
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const first: Progress = { received: 0 };
    const d1 = streamingGet(px.port, origin.coralHost, '/x', first);
    await until(() => first.received >= 1000, 'first bytes');
    const late: Progress = { received: 0 };
    const d2 = streamingGet(px.port, origin.coralHost, '/x', late);
    await until(() => late.received >= 1000, 'replayed bytes at the late waiter');
    expect(String(late.headers!['cache-status'])).toMatch(/collapsed/);
    release();
    await Promise.all([d1, d2]);
    expect(first.body!.equals(body)).toBe(true);
    expect(late.body!.equals(body)).toBe(true);
    expect(origin.hits).toHaveLength(1);
  });

  it('a response that turns out private is not handed to the other waiters', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let n = 0;
    const origin = await startOrigin((_q, res) => {
      const mine = ++n;
      res.writeHead(200, { 'cache-control': 'private' });
      res.write(`for request ${mine};`);
      if (mine === 1) void released.then(() => res.end());
      else res.end();
    });
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const a: Progress = { received: 0 };
    const da = streamingGet(px.port, origin.coralHost, '/p', a);
    await until(() => a.received > 0, 'first response');
    const b: Progress = { received: 0 };
    await streamingGet(px.port, origin.coralHost, '/p', b);
    release();
    await da;
    expect(a.body!.toString()).toBe('for request 1;');
    expect(b.body!.toString()).toBe('for request 2;');
  });
});
