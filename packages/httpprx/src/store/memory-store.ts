import { Readable } from 'node:stream';
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
 * Everything in memory: used when no dataDir is configured, and as the reference for the contract.
 * Bodies being written are held in memory too (read back by in-flight readers), so with this store
 * an in-flight object costs its size in memory until it is committed or released.
 */
export class MemoryStore implements CacheStore {
  readonly #entries = new Map<string, { meta: StoredMeta; body: Buffer }>();
  readonly #byPrimary = new Map<string, Set<string>>();
  readonly #onRemove: StoreComponents['onRemove'];
  readonly #budget: number;
  #used = 0;

  constructor(components: StoreComponents, options: StoreOptions) {
    this.#onRemove = components.onRemove;
    this.#budget = options.budgetBytes;
  }

  async open(): Promise<void> {}
  async close(): Promise<void> {}

  get usedBytes(): number {
    return this.#used;
  }

  get count(): number {
    return this.#entries.size;
  }

  has(primary: string): boolean {
    return this.#byPrimary.has(primary);
  }

  variantKeys(primary: string): string[] {
    return [...(this.#byPrimary.get(primary) ?? [])];
  }

  async variants(primary: string): Promise<StoredMeta[]> {
    const keys = this.#byPrimary.get(primary);
    if (!keys) return [];
    return [...keys].map((k) => this.#entries.get(k)!.meta);
  }

  async get(key: string): Promise<StoredMeta | undefined> {
    return this.#entries.get(key)?.meta;
  }

  async *list(): AsyncIterable<StoredMeta> {
    for (const e of [...this.#entries.values()]) yield e.meta;
  }

  async *listing(): AsyncIterable<StoredListing> {
    for (const m of [...this.#entries.values()].map((e) => e.meta)) {
      yield {
        key: m.key,
        primary: m.primary,
        url: m.url,
        status: m.status,
        size: m.size,
        sha256: m.sha256,
        storedAt: m.storedAt,
        freshUntil: m.freshUntil,
        contentType: m.headers['content-type'],
        vary: m.vary,
      };
    }
  }

  async *summaries(): AsyncIterable<StoredSummary> {
    for (const { meta } of this.#entries.values()) {
      yield {
        primary: new Uint8Array(Buffer.from(meta.primary, 'hex')),
        size: meta.size,
        sha256: meta.sha256,
        freshUntil: meta.freshUntil,
      };
    }
  }

  touch(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#entries.set(key, e);
  }

  async readBody(meta: StoredMeta): Promise<Buffer> {
    const e = this.#entries.get(meta.key);
    if (!e || e.meta.sha256 !== meta.sha256)
      throw Object.assign(new Error('entry gone'), { code: 'ENOENT' });
    return e.body;
  }

  async verify(meta: StoredMeta): Promise<boolean> {
    return this.#entries.get(meta.key)?.meta.sha256 === meta.sha256;
  }

  readStream(meta: StoredMeta, start: number, end: number): Readable {
    const e = this.#entries.get(meta.key);
    if (!e) {
      const r = new Readable({ read() {} });
      process.nextTick(() => r.destroy(Object.assign(new Error('entry gone'), { code: 'ENOENT' })));
      return r;
    }
    return Readable.from([e.body.subarray(start, end + 1)]);
  }

  begin(): BodyWriter {
    const chunks: Buffer[] = [];
    /** Offset of each chunk in the body. */
    const starts: number[] = [];
    let written = 0;
    let gone = false;
    return {
      get written() {
        return written;
      },
      write: async (chunk) => {
        if (gone) return;
        chunks.push(chunk);
        starts.push(written);
        written += chunk.length;
      },
      read: async (position, length) => {
        if (gone) throw new Error('body gone');
        const end = Math.min(written, position + length);
        let lo = 0;
        let hi = chunks.length - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if (starts[mid]! <= position) lo = mid;
          else hi = mid - 1;
        }
        const parts: Buffer[] = [];
        for (let i = lo, pos = position; pos < end; i++) {
          const from = pos - starts[i]!;
          const to = Math.min(chunks[i]!.length, end - starts[i]!);
          parts.push(chunks[i]!.subarray(from, to));
          pos = starts[i]! + to;
        }
        return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      },
      commit: async (meta) => {
        if (gone) throw new Error('writer aborted');
        if (written !== meta.size) {
          throw new Error(`size mismatch: wrote ${written}, expected ${meta.size}`);
        }
        this.#put(meta, Buffer.concat(chunks, written));
        return meta;
      },
      abort: async () => {
        gone = true;
        chunks.length = 0;
      },
      release: async () => {
        gone = true;
        chunks.length = 0;
      },
    };
  }

  async update(meta: StoredMeta): Promise<boolean> {
    const e = this.#entries.get(meta.key);
    if (!e || e.meta.sha256 !== meta.sha256 || e.meta.storedAt !== meta.storedAt) return false;
    e.meta = { ...meta, size: e.meta.size, sha256: e.meta.sha256 };
    return true;
  }

  async delete(key: string): Promise<boolean> {
    return this.#remove(key, 'delete') !== undefined;
  }

  async deleteWhere(match: (meta: StoredMeta) => boolean): Promise<StoredMeta[]> {
    const gone: StoredMeta[] = [];
    for (const { meta } of [...this.#entries.values()]) {
      if (match(meta) && this.#remove(meta.key, 'delete')) gone.push(meta);
    }
    return gone;
  }

  #put(meta: StoredMeta, body: Buffer): void {
    this.#remove(meta.key, 'replace');
    this.#entries.set(meta.key, { meta, body });
    let set = this.#byPrimary.get(meta.primary);
    if (!set) this.#byPrimary.set(meta.primary, (set = new Set()));
    set.add(meta.key);
    this.#used += body.length;
    this.#evict(meta.key);
  }

  #remove(key: string, reason: RemovalReason): StoredMeta | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    this.#entries.delete(key);
    this.#used -= e.body.length;
    const set = this.#byPrimary.get(e.meta.primary);
    set?.delete(key);
    if (set?.size === 0) this.#byPrimary.delete(e.meta.primary);
    this.#onRemove?.(key, e.meta.primary, reason);
    return e.meta;
  }

  #evict(keep: string): void {
    const k = this.#entries.get(keep);
    if (k && k.body.length > this.#budget) {
      this.#remove(keep, 'evict');
      return;
    }
    for (const key of [...this.#entries.keys()]) {
      if (this.#used <= this.#budget) break;
      if (key === keep) continue;
      this.#remove(key, 'evict');
    }
  }
}
