import { mkdtempSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Level } from 'level';
import { DiskStore } from '../../src/store/disk-store.js';
import type { CacheStore, StoredMeta } from '../../src/store/types.js';
import { metaFor, storeContract } from './contract.js';

const dirs = new WeakMap<CacheStore, string>();

storeContract('DiskStore', {
  async create(budgetBytes, onEvict) {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore({ onEvict }, { dir, budgetBytes });
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
  it('drops records whose file is missing or short, and removes stray tmp and unreferenced files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coral-disk-'));
    const s = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s.open();
    const w = s.begin();
    w.write(Buffer.from('complete body'));
    await w.commit(metaFor('good', Buffer.from('complete body')));
    await s.close();

    // Simulate what a crash could leave: a partial tmp file, an orphan body, a record without a
    // file and a record whose file is truncated.
    await writeFile(join(dir, 'tmp', 'dead.part'), 'partial');
    await mkdir(join(dir, 'bodies', 'zz'), { recursive: true });
    await writeFile(join(dir, 'bodies', 'zz', 'orphan'), 'orphan');
    await writeFile(join(dir, 'bodies', 'zz', 'short'), 'abc');
    const db = new Level<string, StoredMeta>(join(dir, 'meta'), { valueEncoding: 'json' });
    await db.put('missing', { ...metaFor('missing', Buffer.from('xyz')), file: 'bodies/zz/none' });
    await db.put('short', { ...metaFor('short', Buffer.from('abcdef')), file: 'bodies/zz/short' });
    await db.close();

    const s2 = new DiskStore({}, { dir, budgetBytes: 1 << 20 });
    await s2.open();
    expect(s2.list().map((m) => m.key)).toEqual(['good']);
    expect((await s2.readBody(s2.get('good')!)).toString()).toBe('complete body');
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
    expect(await readdir(join(dir, 'bodies', 'zz'))).toEqual([]);
    await s2.close();
    const db2 = new Level<string, StoredMeta>(join(dir, 'meta'), { valueEncoding: 'json' });
    expect(await db2.keys().all()).toEqual(['good']);
    await db2.close();
  });
});
