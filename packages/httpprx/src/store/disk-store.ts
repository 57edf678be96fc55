/**
 * Bodies in files, metadata in LevelDB, a compact directory in memory (./directory.ts).
 *
 * Layout under `dir`:
 *   tmp/<n>.part          bodies being written (n: the body's file number, hex)
 *   bodies/<xx>/<n>       complete bodies (renamed from tmp/ once fully written and fsynced)
 *   meta/                 LevelDB: variant key (28 bytes) → metadata record (./meta-codec.ts),
 *                         written only after the rename
 *
 * Crash safety: a metadata record is written only after its body file is complete and in place,
 * and a body file is removed only after its record is gone. So after a crash at any moment, the
 * worst left behind is a stray tmp file or an unreferenced body file. `open()` deletes both, and
 * drops any record whose file is missing or has the wrong size (belt and braces).
 *
 * Memory: per stored variant, one directory slot (about a hundred bytes in typed arrays); the
 * rest of the metadata is read from LevelDB when a request needs it.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Level } from 'level';
import { Directory, KEY_BYTES, PRIMARY_BYTES } from './directory.js';
import { decodeList, decodeMeta, decodePrefix, encodeMeta } from './meta-codec.js';
import type {
  BodyWriter,
  CacheStore,
  RemovalReason,
  StoreComponents,
  StoreOptions,
  StoredListing,
  StoredMeta,
  StoredSummary,
} from './types.js';

/**
 * How the store opens and renames body files (default `node:fs/promises`): the one place its
 * writes can fail with EMFILE, ENFILE or ENOSPC, so tests inject those failures here.
 */
export interface BodyFiles {
  open(path: string, flags: 'w' | 'w+'): Promise<FileHandle>;
  rename(from: string, to: string): Promise<void>;
}

export interface DiskStoreComponents extends StoreComponents {
  files?: BodyFiles;
}

export interface DiskStoreOptions extends StoreOptions {
  dir: string;
  /** LevelDB memtable of the metadata database (bytes). Default `META_DB_WRITE_BUFFER_BYTES`. */
  dbWriteBufferBytes?: number;
  /** LevelDB block cache of the metadata database (bytes). Default `META_DB_CACHE_BYTES`. */
  dbCacheBytes?: number;
}

/**
 * LevelDB's memtable for the metadata (its default is 4 MiB). A record is about 150 bytes, so
 * 1 MiB holds the last ~7,000 commits before they go to a table; a larger one only holds more of
 * them in memory, and keeps it (in malloc's heap) however idle the node is.
 */
export const META_DB_WRITE_BUFFER_BYTES = 1024 * 1024;
/**
 * LevelDB's block cache for the metadata (its default is 8 MiB). Requests find objects through the
 * in-memory directory and hot objects without reading LevelDB; a record is read once per full-path
 * hit of an object that is not hot, from a table file the OS keeps in its page cache.
 */
export const META_DB_CACHE_BYTES = 1024 * 1024;

/** Stats run in parallel at start-up. */
const OPEN_CONCURRENCY = 32;
/** Records read per step when listing. */
const LIST_BATCH = 1000;
/** Bodies up to this size are held in memory until their commit writes them in one go. */
const SPILL_BYTES = 64 * 1024;

async function hashFile(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(path)) h.update(c as Buffer);
  return h.digest('hex');
}

type MetaOp =
  { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

function fileName(n: number): string {
  return n.toString(16).padStart(12, '0');
}

/** Where body file `n` lives, relative to the store's directory. */
export function bodyPath(n: number): string {
  return join('bodies', (n % 256).toString(16).padStart(2, '0'), fileName(n));
}

function hexKey(hex: string, bytes: number): Uint8Array | undefined {
  if (hex.length !== bytes * 2) return undefined;
  const b = Buffer.from(hex, 'hex');
  return b.length === bytes ? b : undefined;
}

export class DiskStore implements CacheStore {
  readonly #dir: string;
  readonly #budget: number;
  readonly #dbOptions: { writeBufferSize: number; cacheSize: number };
  readonly #onRemove: StoreComponents['onRemove'];
  readonly #files: BodyFiles;
  #directory = new Directory();
  #db: Level<Uint8Array, Uint8Array> | undefined;
  #nextFile = 1;
  /** Metadata writes waiting for the next batch, and the batch being written. */
  #queue: Array<{
    ops: MetaOp[];
    after: Array<() => void>;
    resolve: () => void;
    reject: (e: unknown) => void;
  }> = [];
  #flushing: Promise<void> | undefined;
  /**
   * Records queued or being written, by key (hex; null: a deletion): the directory changes at
   * once, so a reader between that change and the batch's completion reads them here — without
   * it a lookup in that window found the object in the directory but not its record, and started
   * a second fetch of an object whose first fetch was just ending.
   */
  readonly #pending = new Map<string, Uint8Array | null>();

  constructor(components: DiskStoreComponents, options: DiskStoreOptions) {
    this.#dir = options.dir;
    this.#budget = options.budgetBytes;
    this.#dbOptions = {
      writeBufferSize: options.dbWriteBufferBytes ?? META_DB_WRITE_BUFFER_BYTES,
      cacheSize: options.dbCacheBytes ?? META_DB_CACHE_BYTES,
    };
    this.#onRemove = components.onRemove;
    this.#files = components.files ?? { open, rename };
  }

  async open(): Promise<void> {
    for (let i = 0; i < 256; i++) {
      await mkdir(join(this.#dir, 'bodies', i.toString(16).padStart(2, '0')), { recursive: true });
    }
    await rm(join(this.#dir, 'tmp'), { recursive: true, force: true });
    await mkdir(join(this.#dir, 'tmp'), { recursive: true });
    const db = new Level<Uint8Array, Uint8Array>(join(this.#dir, 'meta'), {
      keyEncoding: 'view',
      valueEncoding: 'view',
      ...this.#dbOptions,
    });
    await db.open();
    this.#db = db;
    // Read only each record's fixed prefix, check its file, index it; then order the LRU by the
    // time each was stored. Nothing per record is kept but its directory slot.
    const dir = new Directory(1024);
    let storedAt = new Float64Array(1024);
    const drop: Uint8Array[] = [];
    let pending: Array<Promise<void>> = [];
    let maxFile = 0;
    const it = db.iterator();
    try {
      for (;;) {
        const batch = await it.nextv(LIST_BATCH);
        if (batch.length === 0) break;
        for (const [key, value] of batch) {
          const p = decodePrefix(value);
          if (!p || key.length !== KEY_BYTES) {
            drop.push(key);
            continue;
          }
          maxFile = Math.max(maxFile, p.file);
          pending.push(
            this.#sizeOf(bodyPath(p.file)).then((size) => {
              if (size !== p.size) return void drop.push(key);
              const existing = dir.find(key);
              if (existing !== -1) dir.remove(existing);
              const slot = dir.insert(key, {
                size: p.size,
                file: p.file,
                freshUntil: p.freshUntil,
                verified: false,
              });
              if (slot >= storedAt.length) {
                const grown = new Float64Array(storedAt.length * 2);
                grown.set(storedAt);
                storedAt = grown;
              }
              storedAt[slot] = p.storedAt;
            }),
          );
          if (pending.length >= OPEN_CONCURRENCY) {
            await Promise.all(pending);
            pending = [];
          }
        }
      }
      await Promise.all(pending);
    } finally {
      await it.close();
    }
    if (drop.length > 0) await db.batch(drop.map((key) => ({ type: 'del' as const, key })));
    dir.orderBy(storedAt);
    const referenced = new Float64Array(dir.count);
    let r = 0;
    for (const slot of dir.slots()) referenced[r++] = dir.file(slot);
    referenced.sort();
    const isReferenced = (n: number) => {
      let lo = 0;
      let hi = referenced.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const v = referenced[mid]!;
        if (v === n) return true;
        if (v < n) lo = mid + 1;
        else hi = mid - 1;
      }
      return false;
    };
    this.#directory = dir;
    this.#nextFile = maxFile + 1;
    // Bodies nobody references (a crash between rename and metadata write, or before an unlink).
    for (const sub of await readdir(join(this.#dir, 'bodies'))) {
      for (const f of await readdir(join(this.#dir, 'bodies', sub))) {
        // Anything but a body this store names (an older layout's files included) goes.
        const n = /^[0-9a-f]{12}$/.test(f) ? Number.parseInt(f, 16) : -1;
        if (n >= 0) this.#nextFile = Math.max(this.#nextFile, n + 1);
        if (!isReferenced(n)) await unlink(join(this.#dir, 'bodies', sub, f)).catch(() => {});
      }
    }
  }

  async close(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    await this.#db?.close();
    this.#db = undefined;
  }

  get usedBytes(): number {
    return this.#directory.bytes;
  }

  get count(): number {
    return this.#directory.count;
  }

  has(primary: string): boolean {
    const p = hexKey(primary, PRIMARY_BYTES);
    return p !== undefined && this.#directory.first(p) !== -1;
  }

  variantKeys(primary: string): string[] {
    const p = hexKey(primary, PRIMARY_BYTES);
    const out: string[] = [];
    if (!p) return out;
    for (let s = this.#directory.first(p); s !== -1; s = this.#directory.nextVariant(s)) {
      out.push(Buffer.from(this.#directory.key(s)).toString('hex'));
    }
    return out;
  }

  async variants(primary: string): Promise<StoredMeta[]> {
    const p = hexKey(primary, PRIMARY_BYTES);
    const db = this.#db;
    if (!p || !db) return [];
    const keys: Uint8Array[] = [];
    for (let s = this.#directory.first(p); s !== -1; s = this.#directory.nextVariant(s)) {
      keys.push(this.#directory.key(s));
    }
    if (keys.length === 0) return [];
    // Taken before the read: a record not pending now is in the database before the read starts.
    const pending = keys.map((k) => this.#pendingValue(k));
    const values = await db.getMany(keys);
    const out: StoredMeta[] = [];
    values.forEach((read, i) => {
      const p = pending[i];
      const v = p === undefined ? read : p;
      const m = v ? decodeMeta(keys[i]!, v) : undefined;
      // A record changed while it was read is taken only if the directory still agrees.
      if (m && this.#current(m)) out.push(m);
    });
    return out;
  }

  async get(key: string): Promise<StoredMeta | undefined> {
    const k = hexKey(key, KEY_BYTES);
    const db = this.#db;
    if (!k || !db || this.#directory.find(k) === -1) return undefined;
    const p = this.#pendingValue(k);
    const v = p === undefined ? await db.get(k) : p;
    const m = v ? decodeMeta(k, v) : undefined;
    return m && this.#current(m) ? m : undefined;
  }

  /** Records in batches (a read iterator is much slower one entry at a time). */
  async *#records(): AsyncIterable<[Uint8Array, Uint8Array]> {
    const db = this.#db;
    if (!db) return;
    const it = db.iterator();
    try {
      for (;;) {
        const batch = await it.nextv(LIST_BATCH);
        if (batch.length === 0) return;
        for (const [key, value] of batch) {
          // A record changed or dropped while the listing runs is skipped.
          const s = this.#directory.find(key);
          const p = s === -1 ? undefined : decodePrefix(value);
          if (p && this.#directory.file(s) === p.file) yield [key, value];
        }
      }
    } finally {
      await it.close();
    }
  }

  async *list(): AsyncIterable<StoredMeta> {
    for await (const [key, value] of this.#records()) {
      const m = decodeMeta(key, value);
      if (m) yield m;
    }
  }

  async *listing(): AsyncIterable<StoredListing> {
    for await (const [key, value] of this.#records()) {
      const l = decodeList(value);
      if (!l) continue;
      const k = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
      yield {
        key: k.toString('hex'),
        primary: k.toString('hex', 0, PRIMARY_BYTES),
        url: l.url,
        status: l.status,
        size: l.size,
        sha256: Buffer.from(l.sha256).toString('hex'),
        storedAt: l.storedAt,
        freshUntil: l.freshUntil,
        contentType: l.contentType,
        vary: l.vary,
      };
    }
  }

  async *summaries(): AsyncIterable<StoredSummary> {
    // From the records (the directory keeps no SHA-256): only those the directory still holds.
    for await (const [key, value] of this.#records()) {
      const p = decodePrefix(value)!;
      yield {
        primary: Uint8Array.from(key.subarray(0, PRIMARY_BYTES)),
        size: p.size,
        sha256: Buffer.from(p.sha256).toString('hex'),
        freshUntil: p.freshUntil,
      };
    }
  }

  touch(key: string): void {
    const k = hexKey(key, KEY_BYTES);
    if (!k) return;
    const s = this.#directory.find(k);
    if (s !== -1) this.#directory.touch(s);
  }

  async readBody(meta: StoredMeta): Promise<Buffer> {
    const body = await readFile(join(this.#dir, bodyPath(meta.file ?? 0)));
    const k = hexKey(meta.key, KEY_BYTES);
    const s = k ? this.#directory.find(k) : -1;
    if (s !== -1 && !this.#directory.verified(s) && this.#directory.file(s) === meta.file) {
      const sha = createHash('sha256').update(body).digest('hex');
      if (!(await this.#checked(meta, sha))) {
        throw Object.assign(new Error('stored body does not match its SHA-256'), {
          code: 'EBADMSG',
        });
      }
    }
    return body;
  }

  /** Record a body's first check after start-up: verified, or dropped. */
  async #checked(meta: StoredMeta, sha: string): Promise<boolean> {
    const k = hexKey(meta.key, KEY_BYTES)!;
    const s = this.#directory.find(k);
    if (s === -1 || this.#directory.file(s) !== meta.file) return false;
    if (sha === meta.sha256) {
      this.#directory.setVerified(s, true);
      return true;
    }
    await this.delete(meta.key);
    return false;
  }

  readStream(meta: StoredMeta, start: number, end: number): Readable {
    return createReadStream(join(this.#dir, bodyPath(meta.file ?? 0)), { start, end });
  }

  begin(): BodyWriter {
    const files = this.#files;
    const file = this.#nextFile++;
    const tmp = join(this.#dir, 'tmp', fileName(file) + '.part');
    /** Small bodies stay in memory until the commit writes them at once: no file held open. */
    let chunks: Buffer[] | undefined = [];
    let starts: number[] = [];
    let fh: FileHandle | undefined;
    let failed: unknown;
    let written = 0;
    let state: 'open' | 'committing' | 'committed' | 'aborted' | 'released' = 'open';
    let committing: Promise<unknown> = Promise.resolve();
    let chain: Promise<void> = Promise.resolve();
    const writeAll = async (h: FileHandle, bufs: Buffer[], at: number) => {
      let pos = at;
      for (const b of bufs) {
        let off = 0;
        while (off < b.length) {
          const { bytesWritten } = await h.write(b, off, b.length - off, pos + off);
          off += bytesWritten;
        }
        pos += b.length;
      }
    };
    const fromMemory = (position: number, end: number): Buffer => {
      const c = chunks!;
      let lo = 0;
      let hi = c.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= position) lo = mid;
        else hi = mid - 1;
      }
      const parts: Buffer[] = [];
      for (let i = lo, pos = position; pos < end && i < c.length; i++) {
        const from = pos - starts[i]!;
        const to = Math.min(c[i]!.length, end - starts[i]!);
        parts.push(c[i]!.subarray(from, to));
        pos = starts[i]! + to;
      }
      return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    };
    const closeFile = async () => {
      await chain;
      const h = fh;
      fh = undefined;
      await h?.close().catch(() => {});
    };
    const commit = async (meta: StoredMeta): Promise<StoredMeta> => {
      if (state !== 'open') throw new Error(`writer already ${state}`);
      state = 'committing';
      await chain;
      const fail = async (e: unknown) => {
        state = 'aborted';
        await closeFile();
        await unlink(tmp).catch(() => {});
        throw e;
      };
      if (failed || written !== meta.size) {
        return fail(
          failed instanceof Error
            ? failed
            : new Error(`size mismatch: wrote ${written}, expected ${meta.size}`),
        );
      }
      const key = hexKey(meta.key, KEY_BYTES);
      if (!key || !this.#db)
        return fail(new Error(key ? 'store closed' : `bad variant key ${meta.key}`));
      const rel = bodyPath(file);
      try {
        // No fsync: a process crash leaves the page cache intact, and after a power loss a body
        // is checked against its SHA-256 the first time it is read (verify()). A small body is
        // written straight to its final name (nothing refers to it until its record exists).
        if (chunks) {
          const h = await files.open(join(this.#dir, rel), 'w');
          try {
            await writeAll(h, chunks, 0);
          } finally {
            await h.close();
          }
        } else {
          await files.rename(tmp, join(this.#dir, rel));
        }
      } catch (e) {
        await unlink(join(this.#dir, rel)).catch(() => {});
        return fail(e);
      }
      const stored: StoredMeta = { ...meta, file };
      // The directory changes now, in call order (so two commits for one key leave the later
      // one); the record follows in the next metadata batch; replaced and evicted files are
      // unlinked only once their records are gone.
      const ops: MetaOp[] = [{ type: 'put', key, value: encodeMeta(stored) }];
      const after: Array<() => void> = [];
      const old = this.#directory.find(key);
      if (old !== -1) {
        const oldFile = this.#directory.file(old);
        this.#directory.remove(old);
        after.push(() => this.#unlinkBody(oldFile));
        this.#onRemove?.(meta.key, meta.primary, 'replace');
      }
      this.#directory.insert(key, {
        size: stored.size,
        file,
        freshUntil: stored.freshUntil,
        verified: true,
      });
      this.#evict(key, ops, after);
      try {
        await this.#write(ops, after);
      } catch (e) {
        state = 'aborted';
        await closeFile();
        throw e;
      }
      state = 'committed';
      return stored;
    };
    return {
      get written() {
        return written;
      },
      write: (chunk) => {
        chain = chain.then(async () => {
          if (failed || state === 'aborted' || state === 'released') return;
          try {
            if (chunks && written + chunk.length > SPILL_BYTES) {
              // Too big to keep: from here on the body goes to its file as it arrives.
              fh = await files.open(tmp, 'w+');
              await writeAll(fh, chunks, 0);
              chunks = undefined;
              starts = [];
            }
            if (chunks) {
              chunks.push(chunk);
              starts.push(written);
            } else {
              await writeAll(fh!, [chunk], written);
            }
            written += chunk.length;
          } catch (e) {
            failed = e;
          }
        });
        return chain;
      },
      read: async (position, length, into) => {
        if (state === 'aborted' || state === 'released') throw new Error('body gone');
        const end = Math.min(written, position + length);
        if (chunks) return fromMemory(position, end);
        if (!fh) throw new Error('body gone');
        const n = Math.max(0, end - position);
        const buf = into && into.length >= n ? into.subarray(0, n) : Buffer.allocUnsafe(n);
        let got = 0;
        while (got < buf.length) {
          const { bytesRead } = await fh.read(buf, got, buf.length - got, position + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        return got === buf.length ? buf : buf.subarray(0, got);
      },
      commit: (meta) => {
        const run = commit(meta);
        committing = run.catch(() => {});
        return run;
      },
      abort: async () => {
        if (state === 'committed' || state === 'released') return;
        state = 'aborted';
        chunks = undefined;
        await closeFile();
        await unlink(tmp).catch(() => {});
      },
      release: async () => {
        await committing;
        if (state === 'released') return;
        const committed = state === 'committed';
        state = 'released';
        chunks = undefined;
        await closeFile();
        if (!committed) await unlink(tmp).catch(() => {});
      },
    };
  }

  async verify(meta: StoredMeta): Promise<boolean> {
    const k = hexKey(meta.key, KEY_BYTES);
    const s = k ? this.#directory.find(k) : -1;
    if (s === -1 || this.#directory.file(s) !== meta.file) return false;
    if (this.#directory.verified(s)) return true;
    let sha: string;
    try {
      sha = await hashFile(join(this.#dir, bodyPath(meta.file ?? 0)));
    } catch {
      sha = '';
    }
    return this.#checked(meta, sha);
  }

  async update(meta: StoredMeta): Promise<boolean> {
    const key = hexKey(meta.key, KEY_BYTES);
    if (!key || !this.#db) return false;
    // The stored size, file and SHA-256 are kept whatever `meta` says: the directory holds the
    // first two, the record the last.
    if (this.#directory.find(key) === -1) return false;
    const value = await this.#db.get(key);
    const p = value ? decodePrefix(value) : undefined;
    const s = this.#directory.find(key);
    if (!p || s === -1 || this.#directory.file(s) !== meta.file || p.file !== meta.file)
      return false;
    const next: StoredMeta = {
      ...meta,
      size: this.#directory.size(s),
      sha256: Buffer.from(p.sha256).toString('hex'),
      file: meta.file,
    };
    this.#directory.setFreshUntil(s, next.freshUntil);
    await this.#write([{ type: 'put', key, value: encodeMeta(next) }], []);
    return true;
  }

  async delete(key: string): Promise<boolean> {
    const ops: MetaOp[] = [];
    const after: Array<() => void> = [];
    if (!this.#remove(key, 'delete', ops, after)) return false;
    await this.#write(ops, after);
    return true;
  }

  async deleteWhere(match: (meta: StoredMeta) => boolean): Promise<StoredMeta[]> {
    const hits: StoredMeta[] = [];
    for await (const m of this.list()) if (match(m)) hits.push(m);
    const gone: StoredMeta[] = [];
    for (const m of hits) if (await this.delete(m.key)) gone.push(m);
    return gone;
  }

  /** Does the directory still hold this record's body? */
  #current(m: StoredMeta): boolean {
    const k = hexKey(m.key, KEY_BYTES);
    if (!k) return false;
    const s = this.#directory.find(k);
    return s !== -1 && this.#directory.file(s) === m.file;
  }

  /** Take a variant out of the directory now; its record goes in `ops`, its file in `after`. */
  #remove(key: string, reason: RemovalReason, ops: MetaOp[], after: Array<() => void>): boolean {
    const k = hexKey(key, KEY_BYTES);
    if (!k) return false;
    const s = this.#directory.find(k);
    if (s === -1) return false;
    const file = this.#directory.file(s);
    this.#directory.remove(s);
    ops.push({ type: 'del', key: k });
    after.push(() => this.#unlinkBody(file));
    this.#onRemove?.(key, key.slice(0, PRIMARY_BYTES * 2), reason);
    return true;
  }

  #unlinkBody(file: number): void {
    void unlink(join(this.#dir, bodyPath(file))).catch(() => {});
  }

  /**
   * Metadata writes, grouped: everything queued while a batch is being written goes in the next
   * one (in order), so commits are not limited by one LevelDB round trip each. `after` runs once
   * the batch holding `ops` is written (never if it fails: a file is unlinked only when no
   * record names it).
   */
  #write(ops: MetaOp[], after: Array<() => void>): Promise<void> {
    for (const op of ops) {
      this.#pending.set(Buffer.from(op.key).toString('hex'), op.type === 'put' ? op.value : null);
    }
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ ops, after, resolve, reject });
      this.#flushing ??= this.#flush().finally(() => {
        this.#flushing = undefined;
      });
    });
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0);
      const db = this.#db;
      const ops = batch.flatMap((b) => b.ops);
      try {
        if (!db) throw new Error('store closed');
        await db.batch(ops);
      } catch (e) {
        this.#settled(ops);
        for (const b of batch) b.reject(e);
        continue;
      }
      this.#settled(ops);
      for (const b of batch) {
        for (const a of b.after) a();
        b.resolve();
      }
    }
  }

  /** A queued or in-flight record (null: deleted), or undefined when none is pending. */
  #pendingValue(key: Uint8Array): Uint8Array | null | undefined {
    return this.#pending.size === 0
      ? undefined
      : this.#pending.get(Buffer.from(key).toString('hex'));
  }

  /** The batch of `ops` is written (or failed): what a later write did not replace is settled. */
  #settled(ops: MetaOp[]): void {
    for (const op of ops) {
      const k = Buffer.from(op.key).toString('hex');
      if (this.#pending.get(k) === (op.type === 'put' ? op.value : null)) this.#pending.delete(k);
    }
  }

  async #sizeOf(rel: string): Promise<number> {
    try {
      return (await stat(join(this.#dir, rel))).size;
    } catch {
      return -1;
    }
  }

  /** LRU eviction down to the budget; `kept` (just committed) goes last, or alone if too big. */
  #evict(kept: Uint8Array, ops: MetaOp[], after: Array<() => void>): void {
    const d = this.#directory;
    const keptSlot = d.find(kept);
    if (keptSlot !== -1 && d.size(keptSlot) > this.#budget) {
      this.#remove(Buffer.from(kept).toString('hex'), 'evict', ops, after);
    }
    while (d.bytes > this.#budget && d.count > 0) {
      const victim = d.oldest();
      // The kept one is the newest, and within the budget: it is the oldest only when alone.
      if (victim === d.find(kept)) break;
      this.#remove(Buffer.from(d.key(victim)).toString('hex'), 'evict', ops, after);
    }
  }
}
