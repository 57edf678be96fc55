import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { get, startOrigin, startProxy, until } from '../helpers/harness.js';

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

describe('who may join a fetch in flight (RFC 9111 §4)', () => {
  /** An origin that sends `first` bytes, then the rest when released; counts its requests. */
  async function heldOrigin(headers: Record<string, string>, body: Buffer, first: number) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'content-length': String(body.length), ...headers });
      res.write(body.subarray(0, first));
      void released.then(() => res.end(body.subarray(first)));
    });
    return { origin, release };
  }

  it('a request with no-cache does not join: it gets its own response from the origin (§5.2.1.4)', async () => {
    const body = Buffer.alloc(10_000, 1);
    const { origin, release } = await heldOrigin({ 'cache-control': 'max-age=600' }, body, 100);
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const a: Progress = { received: 0 };
    const da = streamingGet(px.port, origin.coralHost, '/nc', a);
    await until(() => a.received >= 100, 'first fetch under way');
    const b = get(px.port, origin.coralHost, '/nc', { 'cache-control': 'no-cache' });
    await until(() => origin.hits.length === 2, 'the no-cache request went to the origin itself');
    release();
    await da;
    const rb = await b;
    expect(rb.headers['cache-status']).not.toMatch(/collapsed/);
    expect(rb.body.equals(body)).toBe(true);
  });

  it('a response already stale is not handed to a joiner (§4.2)', async () => {
    const body = Buffer.alloc(10_000, 2);
    const { origin, release } = await heldOrigin({ 'cache-control': 'max-age=0' }, body, 100);
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const a: Progress = { received: 0 };
    const da = streamingGet(px.port, origin.coralHost, '/stale', a);
    await until(() => a.received >= 100, 'first fetch under way');
    const b = get(px.port, origin.coralHost, '/stale');
    await until(() => origin.hits.length === 2, 'the second request made its own fetch');
    release();
    await da;
    expect((await b).headers['cache-status']).not.toMatch(/collapsed/);
  });

  it('a Range joiner is answered 206 from the bytes as they arrive, before the origin finishes (RFC 9110 §14.2)', async () => {
    const body = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 11) % 256));
    const { origin, release } = await heldOrigin({ 'cache-control': 'max-age=600' }, body, 60_000);
    const px = await startProxy();
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    const a: Progress = { received: 0 };
    const da = streamingGet(px.port, origin.coralHost, '/r', a);
    await until(() => a.received >= 60_000, 'first part in');
    // Bytes already arrived: answered while the origin still holds the rest back.
    const early = await get(px.port, origin.coralHost, '/r', { range: 'bytes=1000-1999' });
    expect(early.status).toBe(206);
    expect(early.headers['content-range']).toBe('bytes 1000-1999/100000');
    expect(early.headers['cache-status']).toMatch(/collapsed/);
    expect(early.body.equals(body.subarray(1000, 2000))).toBe(true);
    expect(a.body).toBeUndefined();
    // Bytes still to come: the answer follows them.
    const late = get(px.port, origin.coralHost, '/r', { range: 'bytes=-500' });
    release();
    const rl = await late;
    expect(rl.status).toBe(206);
    expect(rl.body.equals(body.subarray(99_500))).toBe(true);
    await da;
    expect(origin.hits).toHaveLength(1);
  });

  it('a client that stops reading holds back neither the other clients nor the commit', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 3);
    const origin = await startOrigin((_q, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(body.length) });
      res.end(body);
    });
    const px = await startProxy({ dataDir: mkdtempSync(join(tmpdir(), 'coral-slow-')) });
    cleanups.push(
      () => origin.close(),
      () => px.close(),
    );
    // A client that reads the head and then nothing.
    const stalled = await new Promise<IncomingMessage>((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: px.port,
          path: '/big',
          headers: { host: origin.coralHost },
          agent: false,
        },
        (res) => {
          res.pause();
          resolve(res);
        },
      );
      req.end();
    });
    const fast = await get(px.port, origin.coralHost, '/big');
    expect(fast.body.equals(body)).toBe(true);
    await until(async () => (await px.proxy.cacheList()).length === 1, 'committed meanwhile');
    expect(origin.hits).toHaveLength(1);
    // The stalled one still gets every byte, from the file, when it reads again.
    const chunks: Buffer[] = [];
    stalled.on('data', (c: Buffer) => chunks.push(c));
    stalled.resume();
    await new Promise((r) => stalled.on('end', r));
    expect(Buffer.concat(chunks).equals(body)).toBe(true);
  });
});
