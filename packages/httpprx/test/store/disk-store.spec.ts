import { mkdtempSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Level } from 'level';
import { DiskStore } from '../../src/store/disk-store.js';
import { encodeMeta } from '../../src/store/meta-codec.js';
import type { CacheStore } from '../../src/store/types.js';
import { keyOf, metaFor, put, storeContract } from './contract.js';

const dirs = new WeakMap<CacheStore, string>();

storeContract('DiskStore', {
  async create(budgetBytes, onRemove) {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore(onRemove ? { onRemove } : {}, { dir, budgetBytes });
    await s.open();
    dirs.set(s, dir);
    return s;
  },
  async reopen(store, budgetBytes) {
    const dir = dirs.get(store)!;
    await store.close();
    const s = new DiskStore({}, { dir, budgetBytes });
    await s.open();
    dirs.set(s, dir);
    return s;
  },
});

describe('DiskStore — recovery after a crash', () => {
  it('drops records whose file is missing or short, unreadable records, stray tmp and unreferenced files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s.open();
    const good = await put(s, 'good', Buffer.from('complete body'));
    await s.close();

    // Simulate what a crash could leave: a partial tmp file, an orphan body, a record without a
    // file, a record whose file is truncated, a record that does not decode.
    await writeFile(join(dir, 'tmp', '0000000000ff.part'), 'partial');
    await mkdir(join(dir, 'bodies', 'aa'), { recursive: true });
    await writeFile(join(dir, 'bodies', 'aa', '0000000000aa'), 'orphan');
    await writeFile(join(dir, 'bodies', 'ab', '0000000000ab'), 'abc').catch(async () => {
      await mkdir(join(dir, 'bodies', 'ab'), { recursive: true });
      await writeFile(join(dir, 'bodies', 'ab', '0000000000ab'), 'abc');
    });
    const db = new Level<Uint8Array, Uint8Array>(join(dir, 'meta'), {
      keyEncoding: 'view',
      valueEncoding: 'view',
    });
    const k = (name: string) => Buffer.from(keyOf(name), 'hex');
    await db.put(
      k('missing'),
      encodeMeta({ ...metaFor('missing', Buffer.from('xyz')), file: 0xdead }),
    );
    await db.put(
      k('short'),
      encodeMeta({ ...metaFor('short', Buffer.from('abcdef')), file: 0xab }),
    );
    await db.put(k('garbage'), new Uint8Array([9, 9, 9]));
    await db.close();

    const s2 = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s2.open();
    expect(s2.count).toBe(1);
    const m = (await s2.get(keyOf('good')))!;
    expect(m.file).toBe(good.file);
    expect((await s2.readBody(m)).toString()).toBe('complete body');
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
    expect(await readdir(join(dir, 'bodies', 'aa'))).toEqual([]);
    expect(await readdir(join(dir, 'bodies', 'ab'))).toEqual([]);
    // A new body never reuses a number seen on disk.
    const next = await put(s2, 'next', Buffer.from('n'));
    expect(next.file).toBeGreaterThan(0xdead);
    await s2.close();
    const db2 = new Level<Uint8Array, Uint8Array>(join(dir, 'meta'), {
      keyEncoding: 'view',
      valueEncoding: 'view',
    });
    const left = (await db2.keys().all()).map((x) => Buffer.from(x).toString('hex')).sort();
    expect(left).toEqual([keyOf('good'), keyOf('next')].sort());
    await db2.close();
  });
});

describe('DiskStore — bodies damaged behind its back (a power loss without fsync)', () => {
  it('a body kept from before start-up is checked against its SHA-256 on first read, and dropped when wrong', async () => {
    const { writeFile: write } = await import('node:fs/promises');
    const { bodyPath } = await import('../../src/store/disk-store.js');
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s.open();
    const good = await put(s, 'good', Buffer.from('the right bytes'));
    const bad = await put(s, 'bad', Buffer.from('the right bytes too'));
    await s.close();
    // Same size, other bytes: what a file system may show after a power cut.
    await write(join(dir, bodyPath(bad.file!)), Buffer.from('THE WRONG BYTES TOO'));
    const removed: string[] = [];
    const s2 = new DiskStore({ onRemove: (k) => removed.push(k) }, { dir, budgetBytes: 1 << 20 });
    await s2.open();
    expect(s2.count).toBe(2); // sizes match: nothing to see at start-up
    const g = (await s2.get(keyOf('good')))!;
    expect(await s2.verify(g)).toBe(true);
    expect((await s2.readBody(g)).toString()).toBe('the right bytes');
    const b = (await s2.get(keyOf('bad')))!;
    await expect(s2.readBody(b)).rejects.toMatchObject({ code: 'EBADMSG' });
    expect(await s2.get(keyOf('bad'))).toBeUndefined();
    expect(removed).toEqual([keyOf('bad')]);
    expect(good.sha256).not.toBe(bad.sha256);
    await s2.close();
  });

  it('bodies written since start-up are trusted without a second read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s.open();
    const big = Buffer.alloc(200_000, 9); // spills to its file while written
    const m = await put(s, 'big', big);
    expect(await s.verify(m)).toBe(true);
    expect((await s.readBody(m)).equals(big)).toBe(true);
    await s.close();
  });
});

describe('DiskStore — a directory left by the previous layout (JSON records, random file names)', () => {
  it('opens empty: old records and their files are dropped, numbering starts afresh', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    await mkdir(join(dir, 'bodies', 'ab'), { recursive: true });
    await writeFile(join(dir, 'bodies', 'ab', 'ab'.repeat(16)), 'old body');
    const old = new Level<string, unknown>(join(dir, 'meta'), { valueEncoding: 'json' });
    await old.put('0123456789abcdef0123456789abcdef01234567|', {
      file: 'bodies/ab/' + 'ab'.repeat(16),
      size: 8,
    });
    await old.close();
    const s = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s.open();
    expect(s.count).toBe(0);
    expect(await readdir(join(dir, 'bodies', 'ab'))).toEqual([]);
    const m = await put(s, 'new', Buffer.from('new body'));
    expect(m.file).toBe(1);
    await s.close();
  });
});

describe('DiskStore — reads between a commit and its metadata batch', () => {
  it('an object in the directory is readable at once: variants() and get() see records still waiting for their batch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore({}, { dir, budgetBytes: 1 << 24 });
    await s.open();
    const names = Array.from({ length: 40 }, (_, i) => `obj${i}`);
    let done = false;
    const commits = Promise.all(names.map((n) => put(s, n, Buffer.from(`body of ${n}`)))).then(
      () => (done = true),
    );
    // Each time a commit has put its object in the directory, read it back before its batch is
    // known to be written (the commits queue behind one another's batches).
    const seen = new Set<string>();
    const missing: string[] = [];
    while (!done || seen.size < names.length) {
      const reads: Promise<void>[] = [];
      for (const n of names) {
        if (seen.has(n) || !s.has(keyOf(n).slice(0, 40))) continue;
        seen.add(n);
        reads.push(
          Promise.all([s.variants(keyOf(n).slice(0, 40)), s.get(keyOf(n))]).then(([v, g]) => {
            if (v.length !== 1 || g === undefined) missing.push(n);
          }),
        );
      }
      await Promise.all(reads);
      if (!done) await new Promise((r) => setImmediate(r));
    }
    await commits;
    expect(missing).toEqual([]);
    await s.close();
  });
});
