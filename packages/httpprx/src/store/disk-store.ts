/**
 * Bodies in files, metadata in LevelDB.
 *
 * Layout under `dir`:
 *   tmp/<random>.part      bodies being written
 *   bodies/<xx>/<random>   complete bodies (renamed from tmp/ once fully written and fsynced)
 *   meta/                  LevelDB: variant key → StoredMeta (JSON), written only after the rename
 *
 * Crash safety: a metadata record is written only after its body file is complete and in place,
 * and a body file is removed only after its record is gone. So after a crash at any moment, the
 * worst left behind is a stray tmp file or an unreferenced body file. `open()` deletes both, and
 * drops any record whose file is missing or has the wrong size (belt and braces).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Level } from 'level';
import type { BodyWriter, CacheStore, StoreComponents, StoreOptions, StoredMeta } from './types.js';

export interface DiskStoreOptions extends StoreOptions {
  dir: string;
}

export class DiskStore implements CacheStore {
  readonly #dir: string;
  readonly #budget: number;
  readonly #onEvict: ((m: StoredMeta) => void) | undefined;
  readonly #entries = new Map<string, StoredMeta>();
  readonly #byPrimary = new Map<string, Set<string>>();
  #db: Level<string, StoredMeta> | undefined;
  #used = 0;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(components: StoreComponents, options: DiskStoreOptions) {
    this.#dir = options.dir;
    this.#budget = options.budgetBytes;
    this.#onEvict = components.onEvict;
  }

  async open(): Promise<void> {
    await mkdir(join(this.#dir, 'bodies'), { recursive: true });
    await rm(join(this.#dir, 'tmp'), { recursive: true, force: true });
    await mkdir(join(this.#dir, 'tmp'), { recursive: true });
    const db = new Level<string, StoredMeta>(join(this.#dir, 'meta'), { valueEncoding: 'json' });
    await db.open();
    this.#db = db;
    const referenced = new Set<string>();
    const drop: string[] = [];
    for await (const [key, meta] of db.iterator()) {
      const ok = meta.file !== undefined && (await this.#sizeOf(meta.file)) === meta.size;
      if (!ok) {
        drop.push(key);
        continue;
      }
      referenced.add(meta.file!);
      this.#index(meta);
    }
    if (drop.length > 0) await db.batch(drop.map((key) => ({ type: 'del' as const, key })));
    // Bodies nobody references (a crash between rename and metadata write, or before an unlink).
    for (const sub of await readdir(join(this.#dir, 'bodies'))) {
      for (const f of await readdir(join(this.#dir, 'bodies', sub))) {
        const rel = join('bodies', sub, f);
        if (!referenced.has(rel)) await unlink(join(this.#dir, rel)).catch(() => {});
      }
    }
  }

  async close(): Promise<void> {
    await this.#db?.close();
    this.#db = undefined;
  }

  get usedBytes(): number {
    return this.#used;
  }

  get(key: string): StoredMeta | undefined {
    return this.#entries.get(key);
  }

  variants(primary: string): StoredMeta[] {
    const keys = this.#byPrimary.get(primary);
    return keys ? [...keys].map((k) => this.#entries.get(k)!) : [];
  }

  list(): StoredMeta[] {
    return [...this.#entries.values()];
  }

  touch(key: string): void {
    const m = this.#entries.get(key);
    if (!m) return;
    this.#entries.delete(key);
    this.#entries.set(key, m);
  }

  async readBody(meta: StoredMeta): Promise<Buffer> {
    return readFile(join(this.#dir, meta.file!));
  }

  readStream(meta: StoredMeta, start: number, end: number): Readable {
    return createReadStream(join(this.#dir, meta.file!), { start, end });
  }

  begin(): BodyWriter {
    const name = randomBytes(16).toString('hex');
    const tmp = join(this.#dir, 'tmp', name + '.part');
    let written = 0;
    let failed: unknown;
    let fh: FileHandle | undefined;
    let chain: Promise<void> = open(tmp, 'w').then((h) => {
      fh = h;
    });
    chain = chain.catch((e: unknown) => {
      failed = e;
    });
    let done = false;
    const cleanup = async () => {
      await chain;
      await fh?.close().catch(() => {});
      await unlink(tmp).catch(() => {});
    };
    return {
      write: (chunk) => {
        if (done || failed) return;
        chain = chain
          .then(async () => {
            if (failed || !fh) return;
            let off = 0;
            while (off < chunk.length) {
              const { bytesWritten } = await fh.write(chunk, off, chunk.length - off);
              off += bytesWritten;
            }
            written += chunk.length;
          })
          .catch((e: unknown) => {
            failed = e;
          });
      },
      commit: async (meta) => {
        if (done) throw new Error('writer already finished');
        done = true;
        await chain;
        if (failed || !fh || written !== meta.size) {
          await cleanup();
          throw failed instanceof Error
            ? failed
            : new Error(`size mismatch: wrote ${written}, expected ${meta.size}`);
        }
        try {
          await fh.sync();
          await fh.close();
          fh = undefined;
          const sub = name.slice(0, 2);
          await mkdir(join(this.#dir, 'bodies', sub), { recursive: true });
          const rel = join('bodies', sub, name);
          await rename(tmp, join(this.#dir, rel));
          const stored: StoredMeta = { ...meta, file: rel };
          // Metadata changes are serialized, so the record and the in-memory index always name
          // the same file even when two commits for one key race.
          return await this.#serial(async () => {
            const db = this.#db;
            if (!db) {
              await unlink(join(this.#dir, rel)).catch(() => {});
              throw new Error('store closed');
            }
            await db.put(meta.key, stored);
            const old = this.#unindex(meta.key);
            this.#index(stored);
            if (old?.file) await unlink(join(this.#dir, old.file)).catch(() => {});
            await this.#evict(meta.key);
            return stored;
          });
        } catch (e) {
          await cleanup();
          throw e;
        }
      },
      abort: async () => {
        done = true;
        await cleanup();
      },
    };
  }

  update(meta: StoredMeta): Promise<void> {
    return this.#serial(() => this.#update(meta));
  }

  async #update(meta: StoredMeta): Promise<void> {
    const cur = this.#entries.get(meta.key);
    if (!cur || !this.#db) return;
    const next = { ...meta, size: cur.size, sha256: cur.sha256, file: cur.file };
    await this.#db.put(meta.key, next);
    this.#unindex(meta.key);
    this.#index(next);
  }

  async delete(key: string): Promise<boolean> {
    const meta = this.#entries.get(key);
    if (!meta) return false;
    await this.#db?.del(key);
    this.#unindex(key);
    if (meta.file) await unlink(join(this.#dir, meta.file)).catch(() => {});
    return true;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn, fn);
    this.#chain = run.catch(() => {});
    return run;
  }

  async #sizeOf(rel: string): Promise<number> {
    try {
      return (await stat(join(this.#dir, rel))).size;
    } catch {
      return -1;
    }
  }

  #index(meta: StoredMeta): void {
    this.#entries.set(meta.key, meta);
    let set = this.#byPrimary.get(meta.primary);
    if (!set) this.#byPrimary.set(meta.primary, (set = new Set()));
    set.add(meta.key);
    this.#used += meta.size;
  }

  #unindex(key: string): StoredMeta | undefined {
    const meta = this.#entries.get(key);
    if (!meta) return undefined;
    this.#entries.delete(key);
    this.#used -= meta.size;
    const set = this.#byPrimary.get(meta.primary);
    set?.delete(key);
    if (set?.size === 0) this.#byPrimary.delete(meta.primary);
    return meta;
  }

  async #evict(keep: string): Promise<void> {
    const victims: StoredMeta[] = [];
    let used = this.#used;
    const kept = this.#entries.get(keep);
    if (kept && kept.size > this.#budget) {
      victims.push(kept);
      used = 0;
    }
    for (const [key, meta] of this.#entries) {
      if (used <= this.#budget) break;
      if (key === keep) continue;
      victims.push(meta);
      used -= meta.size;
    }
    if (used > this.#budget) {
      const k = this.#entries.get(keep);
      if (k) victims.push(k);
    }
    for (const v of victims) {
      await this.delete(v.key);
      this.#onEvict?.(v);
    }
  }
}
