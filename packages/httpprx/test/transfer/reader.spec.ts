/**
 * streamTransfer over real sockets: pieces read from the transfer's file go through one buffer
 * per client, reused only once the socket has taken the piece before, and every client gets its
 * bytes exactly, however slowly it reads.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, get, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DiskStore } from '../../src/store/disk-store.js';
import type { BodyWriter } from '../../src/store/types.js';
import { streamTransfer } from '../../src/transfer/reader.js';
import { READ_CHUNK_BYTES, Transfer } from '../../src/transfer/transfer.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function pattern(size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 131 + (i >> 10)) & 255;
  return b;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A finished transfer of `body` on disk, its file reads recorded (the `into` buffer each got). */
async function finishedTransfer(body: Buffer) {
  const store = new DiskStore(
    {},
    { dir: mkdtempSync(join(tmpdir(), 'coral-reader-')), budgetBytes: 1 << 30 },
  );
  await store.open();
  cleanups.push(() => store.close());
  const w = store.begin();
  const intos: (Buffer | undefined)[] = [];
  /** The latest write: the writer's writes land in order, so this one settles last. */
  let lastWrite: Promise<void> = Promise.resolve();
  const writer: BodyWriter = {
    get written() {
      return w.written;
    },
    write: (c) => (lastWrite = w.write(c)),
    read: (p, l, into) => {
      intos.push(into);
      return w.read(p, l, into);
    },
    commit: (m) => w.commit(m),
    abort: () => w.abort(),
    release: () => w.release(),
  };
  const t = new Transfer('k');
  t.attach(writer);
  for (let off = 0; off < body.length; off += 64 * 1024) {
    const wait = t.push(body.subarray(off, off + 64 * 1024));
    if (wait) await wait;
  }
  t.finish();
  await lastWrite; // every byte is in the file
  expect(w.written).toBe(body.length);
  return { t, intos };
}

/** A server streaming `t` to every client; the `into` buffers each response's reads used. */
async function serve(t: Transfer): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-length': String(t.received) });
    t.addReader();
    void streamTransfer(t, res, 0, undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(() => r())));
  return server;
}

/** GET the body, pausing `pauseMs` after each `every` bytes (a slow reader). */
function fetchSlowly(server: Server, every: number, pauseMs: number): Promise<Buffer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      const parts: Buffer[] = [];
      let since = 0;
      res.on('data', (c: Buffer) => {
        parts.push(c);
        since += c.length;
        if (since >= every) {
          since = 0;
          res.pause();
          setTimeout(() => res.resume(), pauseMs);
        }
      });
      res.on('end', () => resolve(Buffer.concat(parts)));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('streamTransfer', () => {
  it('reads a finished body from the file through one buffer per client, and every client gets its exact bytes', async () => {
    const body = pattern(3 * 1024 * 1024 + 777);
    const { t, intos } = await finishedTransfer(body);
    const server = await serve(t);
    const bodies = await Promise.all([
      fetchSlowly(server, 256 * 1024, 5),
      fetchSlowly(server, 512 * 1024, 2),
      fetchSlowly(server, 1 << 30, 0),
    ]);
    for (const b of bodies) expect(sha(b)).toBe(sha(body));
    const buffers = new Set(intos.filter((b) => b !== undefined).map((b) => b.buffer));
    // Three clients, each ~48 file reads: three buffers, each of one piece.
    expect(intos.length).toBeGreaterThan(3 * Math.floor(body.length / READ_CHUNK_BYTES) - 12);
    expect(buffers.size).toBe(3);
    for (const b of intos) expect(b?.length).toBe(READ_CHUNK_BYTES);
  });

  it('reuses a buffer only once the socket has taken the piece in it, even when writes return true before that', async () => {
    const body = pattern(1024 * 1024 + 5);
    const { t } = await finishedTransfer(body);
    // A socket that buffers up to 4 MiB (write() says go on) and takes each chunk 2 ms later.
    const taken: Buffer[] = [];
    const sink = new Writable({
      highWaterMark: 4 * 1024 * 1024,
      write(chunk: Buffer, _enc, done) {
        setTimeout(() => {
          taken.push(Buffer.from(chunk));
          done();
        }, 2);
      },
    });
    t.addReader();
    await streamTransfer(t, sink as unknown as ServerResponse, 0, undefined);
    await new Promise((r) => sink.once('finish', r));
    expect(sha(Buffer.concat(taken))).toBe(sha(body));
  });
});
