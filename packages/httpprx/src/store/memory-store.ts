import { Readable } from 'node:stream';
import type { BodyWriter, CacheStore, StoreComponents, StoreOptions, StoredMeta } from './types.js';

/** Everything in memory: used when no dataDir is configured, and as the reference for the contract. */
export class MemoryStore implements CacheStore {
  readonly #entries = new Map<string, { meta: StoredMeta; body: Buffer }>();
  readonly #byPrimary = new Map<string, Set<string>>();
  readonly #onEvict: ((m: StoredMeta) => void) | undefined;
  readonly #budget: number;
  #used = 0;

  constructor(components: StoreComponents, options: StoreOptions) {
    this.#onEvict = components.onEvict;
    this.#budget = options.budgetBytes;
  }

  async open(): Promise<void> {}
  async close(): Promise<void> {}

  get usedBytes(): number {
    return this.#used;
  }

  get(key: string): StoredMeta | undefined {
    return this.#entries.get(key)?.meta;
  }

  variants(primary: string): StoredMeta[] {
    const keys = this.#byPrimary.get(primary);
    if (!keys) return [];
    return [...keys].map((k) => this.#entries.get(k)!.meta);
  }

  list(): StoredMeta[] {
    return [...this.#entries.values()].map((e) => e.meta);
  }

  touch(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#entries.set(key, e);
  }

  async readBody(meta: StoredMeta): Promise<Buffer> {
    const e = this.#entries.get(meta.key);
    if (!e || e.meta !== meta) throw Object.assign(new Error('entry gone'), { code: 'ENOENT' });
    return e.body;
  }

  /** The body buffer itself, synchronously (hot path). */
  bodyOf(key: string): Buffer | undefined {
    return this.#entries.get(key)?.body;
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
    let aborted = false;
    return {
      write: (chunk) => {
        if (!aborted) chunks.push(chunk);
      },
      commit: async (meta) => {
        if (aborted) throw new Error('writer aborted');
        const body = Buffer.concat(chunks);
        if (body.length !== meta.size) {
          throw new Error(`size mismatch: wrote ${body.length}, expected ${meta.size}`);
        }
        this.#remove(meta.key);
        this.#entries.set(meta.key, { meta, body });
        let set = this.#byPrimary.get(meta.primary);
        if (!set) this.#byPrimary.set(meta.primary, (set = new Set()));
        set.add(meta.key);
        this.#used += body.length;
        this.#evict(meta.key);
        return meta;
      },
      abort: async () => {
        aborted = true;
        chunks.length = 0;
      },
    };
  }

  async update(meta: StoredMeta): Promise<void> {
    const e = this.#entries.get(meta.key);
    if (e) e.meta = { ...meta, size: e.meta.size, sha256: e.meta.sha256 };
  }

  async delete(key: string): Promise<boolean> {
    return this.#remove(key) !== undefined;
  }

  #remove(key: string): StoredMeta | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    this.#entries.delete(key);
    this.#used -= e.body.length;
    const set = this.#byPrimary.get(e.meta.primary);
    set?.delete(key);
    if (set?.size === 0) this.#byPrimary.delete(e.meta.primary);
    return e.meta;
  }

  #evict(keep: string): void {
    const k = this.#entries.get(keep);
    if (k && k.body.length > this.#budget) {
      this.#remove(keep);
      this.#onEvict?.(k.meta);
      return;
    }
    for (const key of this.#entries.keys()) {
      if (this.#used <= this.#budget) break;
      if (key === keep) continue;
      const meta = this.#remove(key);
      if (meta) this.#onEvict?.(meta);
    }
    if (this.#used > this.#budget) {
      const meta = this.#remove(keep);
      if (meta) this.#onEvict?.(meta);
    }
  }
}
