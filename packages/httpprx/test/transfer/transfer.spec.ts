import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DiskStore } from '../../src/store/disk-store.js';
import type { BodyWriter } from '../../src/store/types.js';
import { Transfer, WINDOW_BYTES, WRITE_HIGH_WATER_BYTES } from '../../src/transfer/transfer.js';

const stores: DiskStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

async function diskWriter(): Promise<BodyWriter> {
  const s = new DiskStore(
    {},
    { dir: mkdtempSync(join(tmpdir(), 'coral-transfer-')), budgetBytes: 1 << 30 },
  );
  await s.open();
  stores.push(s);
  return s.begin();
}

function pattern(size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + (i >> 8)) & 255;
  return b;
}

async function readAll(t: Transfer, from = 0): Promise<Buffer> {
  const parts: Buffer[] = [];
  let pos = from;
  for (;;) {
    if (pos >= t.readable) {
      if (t.finished && pos >= t.received) break;
      await t.changed();
      continue;
    }
    const piece = await t.read(pos, 64 * 1024);
    parts.push(Buffer.from(piece));
    pos += piece.length;
  }
  return Buffer.concat(parts);
}

describe('Transfer: read-while-write through the disk', () => {
  it('holds at most its window plus the bytes being written, whatever the body size; readers get every byte', async () => {
    const body = pattern(8 * 1024 * 1024 + 123);
    const t = new Transfer('k');
    t.attach(await diskWriter());
    t.addReader();
    const early = readAll(t); // a reader that starts with the transfer
    let peak = 0;
    for (let off = 0; off < body.length; off += 64 * 1024) {
      const wait = t.push(body.subarray(off, off + 64 * 1024));
      peak = Math.max(peak, t.memoryBytes);
      if (wait) await wait;
    }
    t.finish();
    expect(peak).toBeLessThanOrEqual(WINDOW_BYTES + WRITE_HIGH_WATER_BYTES + 64 * 1024);
    // A reader that comes at the end reads it all back from the file.
    const late = await readAll(t);
    expect(late.equals(body)).toBe(true);
    expect((await early).equals(body)).toBe(true);
    expect(t.memoryBytes).toBeLessThanOrEqual(WINDOW_BYTES + 64 * 1024);
    t.removeReader();
  });

  it('asks the upstream to wait while the writer is behind (backpressure)', async () => {
    const writes: Array<() => void> = [];
    let written = 0;
    const writer: BodyWriter = {
      get written() {
        return written;
      },
      write: (c) =>
        new Promise<void>((r) =>
          writes.push(() => {
            written += c.length;
            r();
          }),
        ),
      read: async () => Buffer.alloc(0),
      commit: async (m) => m,
      abort: async () => {},
      release: async () => {},
    };
    const t = new Transfer('k');
    t.attach(writer);
    const chunk = Buffer.alloc(256 * 1024);
    const waits: Array<Promise<void> | undefined> = [];
    for (let i = 0; i < 5; i++) waits.push(t.push(chunk));
    // Up to the high-water mark the upstream may go on; past it, it must wait.
    expect(waits.slice(0, 4).every((w) => w === undefined)).toBe(true);
    expect(waits[4]).toBeInstanceOf(Promise);
    let resumed = false;
    void waits[4]!.then(() => (resumed = true));
    writes.shift()!();
    writes.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(resumed).toBe(false); // still above half the mark
    writes.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(resumed).toBe(true);
  });

  it('a verified transfer holds its last byte back until finish(); fail() reaches every reader', async () => {
    const t = new Transfer('k');
    t.attach(await diskWriter(), { verify: true });
    void t.push(Buffer.from('abcdef'));
    expect(t.readable).toBe(5);
    t.finish();
    expect(t.readable).toBe(6);

    const u = new Transfer('k2');
    u.attach(await diskWriter(), { verify: true });
    void u.push(Buffer.from('abcdef'));
    const waiting = u.changed();
    u.fail(new Error('sha256 mismatch'));
    await waiting;
    expect(u.failed?.message).toBe('sha256 mismatch');
    expect(u.finished).toBe(true);
  });

  it('abandons the upstream when its last reader leaves mid-body, and releases the file once unread', async () => {
    const t = new Transfer('k');
    let released = false;
    const w = await diskWriter();
    const writer: BodyWriter = {
      get written() {
        return w.written;
      },
      write: (c) => w.write(c),
      read: (p, l) => w.read(p, l),
      commit: (m) => w.commit(m),
      abort: () => w.abort(),
      release: async () => {
        released = true;
        await w.release();
      },
    };
    t.attach(writer);
    let abandoned = false;
    t.abandon = () => (abandoned = true);
    t.addReader();
    void t.push(Buffer.from('partial'));
    t.removeReader();
    expect(abandoned).toBe(true);
    t.fail(new Error('abandoned'));
    expect(released).toBe(false);
    t.bodySettled();
    expect(released).toBe(true);
  });
});
