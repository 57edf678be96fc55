/**
 * Hot objects: small stored bodies kept in memory (lru-cache, byte budget) together with their
 * response header block, computed once. The hit path only adds Age and Cache-Status, and even that
 * block is rebuilt only when the age in whole seconds changes.
 */
import { LRUCache } from 'lru-cache';
import { CACHE_NAME } from '../constants.js';
import type { StoredMeta } from '../store/types.js';

export interface HotEntry {
  meta: StoredMeta;
  body: Buffer;
  /** Freshness lifetime (s). */
  lifetime: number;
  /** May the fast path serve it (no Vary, no Location to rewrite, no no-cache)? */
  fast: boolean;
  /** Header block without Age and Cache-Status, as a flat [name, value, ...] array. */
  headers: string[];
  /** `headers` plus Age and Cache-Status for age `blockAge`. */
  block: string[];
  blockAge: number;
}

export class HotCache {
  readonly #lru: LRUCache<string, HotEntry>;
  readonly maxObjectBytes: number;

  constructor(options: { budgetBytes: number; maxObjectBytes: number }) {
    this.maxObjectBytes = options.maxObjectBytes;
    this.#lru = new LRUCache<string, HotEntry>({
      maxSize: Math.max(1, options.budgetBytes),
      sizeCalculation: (e) => e.body.length + 256,
    });
  }

  get(key: string): HotEntry | undefined {
    return this.#lru.get(key);
  }

  put(
    meta: StoredMeta,
    body: Buffer,
    e: { lifetime: number; fast: boolean; headers: string[] },
  ): void {
    if (meta.size > this.maxObjectBytes || body.length !== meta.size) return;
    this.#lru.set(meta.key, { meta, body, ...e, block: [], blockAge: -1 });
  }

  delete(key: string): void {
    this.#lru.delete(key);
  }

  /** The full header block for a hit at `age` seconds. */
  static block(e: HotEntry, age: number): string[] {
    if (e.blockAge !== age) {
      e.block = e.headers.concat(
        'age',
        String(age),
        'cache-status',
        `${CACHE_NAME}; hit; ttl=${e.lifetime - age}`,
      );
      e.blockAge = age;
    }
    return e.block;
  }
}
