/** One contract, every store: run by memory-store.spec.ts and disk-store.spec.ts. */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { CacheStore, StoredMeta } from '../../src/store/types.js';

export interface StoreHarness {
  /** A fresh, opened store with the given budget; `onEvict` receives evictions. */
  create(budgetBytes: number, onEvict?: (m: StoredMeta) => void): Promise<CacheStore>;
  /** Close and reopen the same store (persistent stores only). */
  reopen?(store: CacheStore, budgetBytes: number): Promise<CacheStore>;
}

export function metaFor(key: string, body: Buffer, extra: Partial<StoredMeta> = {}): StoredMeta {
  return {
    key,
    primary: key.split('|')[0]!,
    url: `http://origin.test/${key}`,
    status: 200,
    headers: { 'content-type': 'application/octet-stream', 'cache-control': 'max-age=60' },
    vary: [],
    varyValues: [],
    facts: { requestTime: 0, responseTime: 0, ageValue: 0, dateValue: undefined },
    size: body.length,
    sha256: createHash('sha256').update(body).digest('hex'),
    storedAt: 0,
    ...extra,
  };
}

async function put(store: CacheStore, key: string, body: Buffer, extra?: Partial<StoredMeta>) {
  const w = store.begin();
  for (let i = 0; i < body.length; i += 1000) w.write(body.subarray(i, i + 1000));
  return w.commit(metaFor(key, body, extra));
}

async function streamToBuffer(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export function storeContract(name: string, h: StoreHarness): void {
  describe(`${name} — CacheStore contract`, () => {
    const open: CacheStore[] = [];
    const make = async (budget = 1 << 20, onEvict?: (m: StoredMeta) => void) => {
      const s = await h.create(budget, onEvict);
      open.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
    });

    it('stores, lists and reads back a body written in chunks', async () => {
      const s = await make();
      const body = Buffer.alloc(5500, 7);
      const m = await put(s, 'a', body);
      expect(s.get('a')?.sha256).toBe(m.sha256);
      expect(s.usedBytes).toBe(5500);
      expect(s.list().map((x) => x.key)).toEqual(['a']);
      expect((await s.readBody(s.get('a')!)).equals(body)).toBe(true);
      expect(
        (await streamToBuffer(s.readStream(s.get('a')!, 10, 19))).equals(body.subarray(10, 20)),
      ).toBe(true);
    });

    it('groups variants by primary key', async () => {
      const s = await make();
      await put(s, 'p|gzip', Buffer.from('gz'));
      await put(s, 'p|', Buffer.from('plain'));
      await put(s, 'q|', Buffer.from('other'));
      expect(
        s
          .variants('p')
          .map((m) => m.key)
          .sort(),
      ).toEqual(['p|', 'p|gzip']);
      expect(s.variants('nope')).toEqual([]);
    });

    it('a failed commit (size mismatch) and an abort leave nothing behind', async () => {
      const s = await make();
      const w = s.begin();
      w.write(Buffer.from('short'));
      await expect(w.commit(metaFor('x', Buffer.from('longer body')))).rejects.toThrow();
      const w2 = s.begin();
      w2.write(Buffer.from('abc'));
      await w2.abort();
      expect(s.get('x')).toBeUndefined();
      expect(s.list()).toEqual([]);
      expect(s.usedBytes).toBe(0);
    });

    it('replacing a key swaps the body atomically', async () => {
      const s = await make();
      await put(s, 'k', Buffer.from('old body'));
      await put(s, 'k', Buffer.from('new'));
      expect((await s.readBody(s.get('k')!)).toString()).toBe('new');
      expect(s.usedBytes).toBe(3);
      expect(s.list()).toHaveLength(1);
    });

    it('two concurrent commits for one key leave one consistent entry', async () => {
      const s = await make();
      const a = Buffer.alloc(3000, 1);
      const b = Buffer.alloc(5000, 2);
      await Promise.all([put(s, 'same', a), put(s, 'same', b)]);
      const m = s.get('same')!;
      const body = await s.readBody(m);
      expect(body.length).toBe(m.size);
      expect([a.length, b.length]).toContain(m.size);
      expect(s.usedBytes).toBe(m.size);
      expect(s.list()).toHaveLength(1);
      if (h.reopen) {
        const r = await h.reopen(s, 1 << 20);
        open.push(r);
        expect(r.get('same')?.size).toBe(m.size);
        expect((await r.readBody(r.get('same')!)).equals(body)).toBe(true);
      }
    });

    it('update replaces metadata but keeps the body facts', async () => {
      const s = await make();
      await put(s, 'u', Buffer.from('body'));
      const m = s.get('u')!;
      await s.update({ ...m, headers: { ...m.headers, etag: '"v2"' }, size: 999 });
      expect(s.get('u')?.headers['etag']).toBe('"v2"');
      expect(s.get('u')?.size).toBe(4);
      await s.update({ ...m, key: 'absent' });
      expect(s.get('absent')).toBeUndefined();
    });

    it('delete removes entry and body', async () => {
      const s = await make();
      await put(s, 'd', Buffer.from('bye'));
      expect(await s.delete('d')).toBe(true);
      expect(await s.delete('d')).toBe(false);
      expect(s.get('d')).toBeUndefined();
      expect(s.usedBytes).toBe(0);
    });

    it('evicts least recently used entries to stay within the byte budget', async () => {
      const evicted: string[] = [];
      const s = await make(3000, (m) => evicted.push(m.key));
      await put(s, 'a', Buffer.alloc(1000));
      await put(s, 'b', Buffer.alloc(1000));
      await put(s, 'c', Buffer.alloc(1000));
      s.touch('a'); // b is now the least recently used
      await put(s, 'd', Buffer.alloc(1000));
      expect(evicted).toEqual(['b']);
      expect(
        s
          .list()
          .map((m) => m.key)
          .sort(),
      ).toEqual(['a', 'c', 'd']);
      expect(s.usedBytes).toBeLessThanOrEqual(3000);
    });

    it('does not keep an object larger than the whole budget', async () => {
      const evicted: string[] = [];
      const s = await make(100, (m) => evicted.push(m.key));
      await put(s, 'small', Buffer.alloc(50));
      await put(s, 'huge', Buffer.alloc(500));
      expect(s.get('huge')).toBeUndefined();
      expect(s.get('small')).toBeDefined();
      expect(evicted).toEqual(['huge']);
    });

    if (h.reopen) {
      it('survives a close and reopen', async () => {
        let s = await make();
        const body = Buffer.alloc(20000, 3);
        await put(s, 'persist', body, { headers: { etag: '"e"' } });
        s = await h.reopen!(s, 1 << 20);
        open.push(s);
        expect(s.get('persist')?.headers['etag']).toBe('"e"');
        expect((await s.readBody(s.get('persist')!)).equals(body)).toBe(true);
        expect(s.usedBytes).toBe(20000);
      });
    }
  });
}
