/** One contract, every store: run by memory-store.spec.ts and disk-store.spec.ts. */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { CacheStore, StoredMeta } from '../../src/store/types.js';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

export interface StoreHarness {
  /** A fresh, opened store with the given budget; `onRemove` receives removals. */
  create(
    budgetBytes: number,
    onRemove?: (key: string, primary: string, reason: string) => void,
  ): Promise<CacheStore>;
  /** Close and reopen the same store (persistent stores only). */
  reopen?(store: CacheStore, budgetBytes: number): Promise<CacheStore>;
}

/** A 20-byte urlKey (hex) from a short name. */
export function primaryOf(name: string): string {
  return createHash('sha1').update(name).digest('hex');
}

/** Variant key: `name` or `name|variant` → urlKey of name + 8 bytes of variant. */
export function keyOf(name: string): string {
  const [p, v = ''] = name.split('|');
  const secondary =
    v === '' ? '00'.repeat(8) : createHash('sha1').update(v).digest('hex').slice(0, 16);
  return primaryOf(p!) + secondary;
}

export function metaFor(name: string, body: Buffer, extra: Partial<StoredMeta> = {}): StoredMeta {
  const key = keyOf(name);
  return {
    key,
    primary: key.slice(0, 40),
    url: `http://origin.test/${name}`,
    status: 200,
    headers: { 'content-type': 'application/octet-stream', 'cache-control': 'max-age=60' },
    vary: [],
    varyValues: [],
    facts: { requestTime: 0, responseTime: 0, ageValue: 0, dateValue: undefined },
    size: body.length,
    sha256: createHash('sha256').update(body).digest('hex'),
    storedAt: 0,
    freshUntil: 60_000,
    ...extra,
  };
}

export async function put(
  store: CacheStore,
  name: string,
  body: Buffer,
  extra?: Partial<StoredMeta>,
): Promise<StoredMeta> {
  const w = store.begin();
  for (let i = 0; i < body.length; i += 1000) void w.write(body.subarray(i, i + 1000));
  const m = await w.commit(metaFor(name, body, extra));
  await w.release();
  return m;
}

async function streamToBuffer(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function keys(s: CacheStore): Promise<string[]> {
  const out: string[] = [];
  for await (const m of s.list()) out.push(m.key);
  return out.sort();
}

export function storeContract(name: string, h: StoreHarness): void {
  describe(`${name} — CacheStore contract`, () => {
    const open: CacheStore[] = [];
    const make = async (
      budget = 1 << 20,
      onRemove?: (key: string, primary: string, reason: string) => void,
    ) => {
      const s = await h.create(budget, onRemove);
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
      expect((await s.get(keyOf('a')))?.sha256).toBe(m.sha256);
      expect(s.usedBytes).toBe(5500);
      expect(s.count).toBe(1);
      expect(s.has(primaryOf('a'))).toBe(true);
      expect(s.has(primaryOf('b'))).toBe(false);
      expect(await keys(s)).toEqual([keyOf('a')]);
      const got = (await s.get(keyOf('a')))!;
      expect(got).toMatchObject({
        url: m.url,
        status: 200,
        headers: m.headers,
        freshUntil: 60_000,
      });
      expect((await s.readBody(got)).equals(body)).toBe(true);
      expect((await streamToBuffer(s.readStream(got, 10, 19))).equals(body.subarray(10, 20))).toBe(
        true,
      );
      expect(await collect(s.summaries())).toEqual([
        {
          primary: new Uint8Array(Buffer.from(primaryOf('a'), 'hex')),
          size: 5500,
          sha256: m.sha256,
          freshUntil: 60_000,
        },
      ]);
    });

    it('a body can be read back while it is written, before and after the commit', async () => {
      const s = await make();
      const w = s.begin();
      await w.write(Buffer.from('hello '));
      expect(w.written).toBe(6);
      expect((await w.read(0, 100)).toString()).toBe('hello ');
      await w.write(Buffer.from('world'));
      expect((await w.read(3, 5)).toString()).toBe('lo wo');
      expect((await w.read(6, 5)).toString()).toBe('world');
      await w.commit(metaFor('rw', Buffer.from('hello world')));
      expect((await w.read(0, 5)).toString()).toBe('hello');
      await w.release();
      await expect(w.read(0, 5)).rejects.toThrow();
      expect((await s.readBody((await s.get(keyOf('rw')))!)).toString()).toBe('hello world');
    });

    it('a released, uncommitted body is discarded', async () => {
      const s = await make();
      const w = s.begin();
      await w.write(Buffer.from('not kept'));
      await w.release();
      expect(s.count).toBe(0);
      expect(await keys(s)).toEqual([]);
    });

    it('groups variants by primary key, with null (absent) Vary values kept', async () => {
      const s = await make();
      await put(s, 'p|gzip', Buffer.from('gz'), {
        vary: ['accept-encoding'],
        varyValues: ['gzip'],
      });
      await put(s, 'p|none', Buffer.from('plain'), {
        vary: ['accept-encoding'],
        varyValues: [null],
      });
      await put(s, 'q', Buffer.from('other'));
      const v = await s.variants(primaryOf('p'));
      expect(v.map((m) => m.key).sort()).toEqual([keyOf('p|gzip'), keyOf('p|none')].sort());
      expect(v.find((m) => m.key === keyOf('p|none'))!.varyValues).toEqual([null]);
      expect(await s.variants(primaryOf('nope'))).toEqual([]);
    });

    it('a failed commit (size mismatch) and an abort leave nothing behind', async () => {
      const s = await make();
      const w = s.begin();
      void w.write(Buffer.from('short'));
      await expect(w.commit(metaFor('x', Buffer.from('longer body')))).rejects.toThrow();
      await w.release();
      const w2 = s.begin();
      void w2.write(Buffer.from('abc'));
      await w2.abort();
      await w2.release();
      expect(await s.get(keyOf('x'))).toBeUndefined();
      expect(await keys(s)).toEqual([]);
      expect(s.usedBytes).toBe(0);
    });

    it('replacing a key swaps the body atomically', async () => {
      const removed: string[] = [];
      const s = await make(1 << 20, (_k, _p, reason) => removed.push(reason));
      await put(s, 'k', Buffer.from('old body'));
      await put(s, 'k', Buffer.from('new'));
      expect((await s.readBody((await s.get(keyOf('k')))!)).toString()).toBe('new');
      expect(s.usedBytes).toBe(3);
      expect(await keys(s)).toHaveLength(1);
      expect(removed).toEqual(['replace']);
    });

    it('two concurrent commits for one key leave one consistent entry', async () => {
      const s = await make();
      const a = Buffer.alloc(3000, 1);
      const b = Buffer.alloc(5000, 2);
      await Promise.all([put(s, 'same', a), put(s, 'same', b)]);
      const m = (await s.get(keyOf('same')))!;
      const body = await s.readBody(m);
      expect(body.length).toBe(m.size);
      expect([a.length, b.length]).toContain(m.size);
      expect(s.usedBytes).toBe(m.size);
      expect(await keys(s)).toHaveLength(1);
      if (h.reopen) {
        const r = await h.reopen(s, 1 << 20);
        open.push(r);
        expect((await r.get(keyOf('same')))?.size).toBe(m.size);
        expect((await r.readBody((await r.get(keyOf('same')))!)).equals(body)).toBe(true);
      }
    });

    it('update replaces metadata but keeps the body facts; not a replaced entry', async () => {
      const s = await make();
      await put(s, 'u', Buffer.from('body'));
      const m = (await s.get(keyOf('u')))!;
      expect(
        await s.update({ ...m, headers: { ...m.headers, etag: '"v2"' }, size: 999, freshUntil: 5 }),
      ).toBe(true);
      const u = (await s.get(keyOf('u')))!;
      expect(u.headers['etag']).toBe('"v2"');
      expect(u.size).toBe(4);
      expect(u.freshUntil).toBe(5);
      expect((await collect(s.summaries()))[0]!.freshUntil).toBe(5);
      expect(await s.update({ ...m, key: keyOf('absent') })).toBe(false);
      expect(await s.get(keyOf('absent'))).toBeUndefined();
      // A metadata update for a body that has since been replaced is refused.
      await put(s, 'u', Buffer.from('newer body'), { storedAt: 1 });
      expect(await s.update({ ...m, headers: { stale: 'yes' } })).toBe(false);
      expect((await s.get(keyOf('u')))!.headers['stale']).toBeUndefined();
    });

    it('delete removes entry and body; deleteWhere removes by predicate', async () => {
      const s = await make();
      await put(s, 'd', Buffer.from('bye'));
      expect(await s.delete(keyOf('d'))).toBe(true);
      expect(await s.delete(keyOf('d'))).toBe(false);
      expect(await s.get(keyOf('d'))).toBeUndefined();
      expect(s.usedBytes).toBe(0);
      await put(s, 'img/1', Buffer.from('1'));
      await put(s, 'img/2', Buffer.from('2'));
      await put(s, 'css/1', Buffer.from('3'));
      const gone = await s.deleteWhere((m) => m.url.startsWith('http://origin.test/img/'));
      expect(gone.map((m) => m.url).sort()).toEqual([
        'http://origin.test/img/1',
        'http://origin.test/img/2',
      ]);
      expect(await keys(s)).toEqual([keyOf('css/1')]);
    });

    it('evicts least recently used entries to stay within the byte budget', async () => {
      const evicted: string[] = [];
      const s = await make(3000, (k, _p, reason) => {
        if (reason === 'evict') evicted.push(k);
      });
      await put(s, 'a', Buffer.alloc(1000));
      await put(s, 'b', Buffer.alloc(1000));
      await put(s, 'c', Buffer.alloc(1000));
      s.touch(keyOf('a')); // b is now the least recently used
      await put(s, 'd', Buffer.alloc(1000));
      expect(evicted).toEqual([keyOf('b')]);
      expect(await keys(s)).toEqual([keyOf('a'), keyOf('c'), keyOf('d')].sort());
      expect(s.usedBytes).toBeLessThanOrEqual(3000);
    });

    it('does not keep an object larger than the whole budget', async () => {
      const evicted: string[] = [];
      const s = await make(100, (k, _p, reason) => {
        if (reason === 'evict') evicted.push(k);
      });
      await put(s, 'small', Buffer.alloc(50));
      await put(s, 'huge', Buffer.alloc(500));
      expect(await s.get(keyOf('huge'))).toBeUndefined();
      expect(await s.get(keyOf('small'))).toBeDefined();
      expect(evicted).toEqual([keyOf('huge')]);
    });

    if (h.reopen) {
      it('survives a close and reopen', async () => {
        let s = await make();
        const body = Buffer.alloc(20000, 3);
        await put(s, 'persist', body, { headers: { etag: '"e"' } });
        s = await h.reopen!(s, 1 << 20);
        open.push(s);
        expect((await s.get(keyOf('persist')))?.headers['etag']).toBe('"e"');
        expect((await s.readBody((await s.get(keyOf('persist')))!)).equals(body)).toBe(true);
        expect(s.usedBytes).toBe(20000);
      });
    }
  });
}
