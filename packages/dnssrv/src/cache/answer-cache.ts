/**
 * The answer cache: answer templates (`wire/template.ts`) by family — the key a name shares with
 * every name answered the same way (all origins of a zone; a fixed name's own key) —, then by
 * variant (type, class, EDNS flavour, ECS bytes: see `variantKey` in the pipeline), then, for
 * answers that depend on the client, by location bucket. A lookup is two or three map reads; the
 * pipeline instantiates the template for each query's name.
 *
 * Bounded in entries (`maxEntries`, 10,000) and in bytes (`maxBytes`, 16 MiB, counting each
 * answer's bytes, its name and {@link ENTRY_OVERHEAD_BYTES} of bookkeeping), and evicted one entry
 * at a time, least recently used first — never cleared whole. The recency order is segmented
 * (SLRU, as in many CDN caches): a new entry starts in a probation segment and moves to the
 * protected one (up to 80 % of either bound) when it is used again; eviction takes the least
 * recently used probation entry first. So a flood of distinct one-off names (every name under the
 * zone answers) only ever displaces other one-off names, and names in use stay cached.
 *
 * The lists are intrusive (links on the entries), so a hit moves an entry with a few pointer
 * writes and allocates nothing. (A general-purpose LRU library keys entries by one value; here that
 * would mean building a composite key string on every query.)
 */
import type { Built } from '../answer/answer-builder.js';

/** Bytes charged per entry on top of its template and key: the entry, its map slots, its meta's share. */
export const ENTRY_OVERHEAD_BYTES = 256;
export const DEFAULT_ANSWER_CACHE_MAX_BYTES = 16 * 1024 * 1024;
/** Share of each bound the protected segment may hold. */
const PROTECTED_SHARE = 0.8;

export interface CacheEntry {
  built: Built;
  /** A hit after this starts a rebuild in the background. */
  refreshAt: number;
  /** Fresh until then ... */
  expiresAt: number;
  /** ... and served stale (while its rebuild runs) until then. */
  staleUntil: number;
  // Where the entry sits, for eviction.
  readonly name: string;
  readonly variant: number | string;
  /** Location bucket; undefined for an answer that does not depend on the client. */
  readonly bucket: string | undefined;
  /** Bytes charged to the cache for this entry. */
  size: number;
  prev: CacheEntry | undefined;
  next: CacheEntry | undefined;
  segment: 0 | 1; // 0 = probation, 1 = protected
}

export interface CacheTop {
  static?: CacheEntry;
  byBucket?: Map<string, CacheEntry>;
}

/** A doubly linked list through the entries, most recent first. */
class Lru {
  head: CacheEntry | undefined;
  tail: CacheEntry | undefined;
  count = 0;
  bytes = 0;

  unshift(e: CacheEntry): void {
    e.prev = undefined;
    e.next = this.head;
    if (this.head) this.head.prev = e;
    else this.tail = e;
    this.head = e;
    this.count++;
    this.bytes += e.size;
  }

  remove(e: CacheEntry): void {
    if (e.prev) e.prev.next = e.next;
    else this.head = e.next;
    if (e.next) e.next.prev = e.prev;
    else this.tail = e.prev;
    e.prev = e.next = undefined;
    this.count--;
    this.bytes -= e.size;
  }
}

export class AnswerCache {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #protectedEntries: number;
  readonly #protectedBytes: number;
  readonly #byName = new Map<string, Map<number | string, CacheTop>>();
  readonly #probation = new Lru();
  readonly #protected = new Lru();
  /** Entries evicted to make room. */
  evictions = 0;

  constructor(options: { maxEntries: number; maxBytes?: number }) {
    this.#maxEntries = Math.max(1, options.maxEntries);
    this.#maxBytes = Math.max(1, options.maxBytes ?? DEFAULT_ANSWER_CACHE_MAX_BYTES);
    this.#protectedEntries = Math.floor(this.#maxEntries * PROTECTED_SHARE);
    this.#protectedBytes = Math.floor(this.#maxBytes * PROTECTED_SHARE);
  }

  /** The variants cached for `name` under `variant`, if any (the hot path reads the entry itself). */
  top(name: string, variant: number | string): CacheTop | undefined {
    return this.#byName.get(name)?.get(variant);
  }

  /** An entry was served: it becomes the most recently used (and protected). */
  touch(e: CacheEntry): void {
    if (e.segment === 1) {
      if (this.#protected.head !== e) {
        this.#protected.remove(e);
        this.#protected.unshift(e);
      }
      return;
    }
    if (this.#protectedEntries === 0) {
      // Too small to segment: plain LRU in the probation list.
      if (this.#probation.head !== e) {
        this.#probation.remove(e);
        this.#probation.unshift(e);
      }
      return;
    }
    this.#probation.remove(e);
    e.segment = 1;
    this.#protected.unshift(e);
    // Demote the protected segment's least recent entries while it is over its share.
    while (
      this.#protected.count > this.#protectedEntries ||
      (this.#protected.bytes > this.#protectedBytes && this.#protected.count > 1)
    ) {
      const last = this.#protected.tail!;
      this.#protected.remove(last);
      last.segment = 0;
      this.#probation.unshift(last);
    }
  }

  /**
   * Store `built` for (name, variant, bucket), or update the entry there in place. Returns the
   * entry (already the most recently used); evicts least recently used entries over the bounds.
   */
  store(
    name: string,
    variant: number | string,
    bucket: string | undefined,
    built: Built,
    times: { refreshAt: number; expiresAt: number; staleUntil: number },
  ): CacheEntry {
    let variants = this.#byName.get(name);
    if (!variants) this.#byName.set(name, (variants = new Map<string | number, CacheTop>()));
    let top = variants.get(variant);
    if (!top) variants.set(variant, (top = {}));
    const old = bucket === undefined ? top.static : top.byBucket?.get(bucket);
    if (old) {
      // A rebuild: update the entry in place (it keeps its place in the recency order).
      const list = old.segment === 1 ? this.#protected : this.#probation;
      const size = sizeOf(name, built);
      list.bytes += size - old.size;
      old.size = size;
      old.built = built;
      old.refreshAt = times.refreshAt;
      old.expiresAt = times.expiresAt;
      old.staleUntil = times.staleUntil;
      this.touch(old);
      this.#evict(old);
      return old;
    }
    const entry: CacheEntry = {
      built,
      refreshAt: times.refreshAt,
      expiresAt: times.expiresAt,
      staleUntil: times.staleUntil,
      name,
      variant,
      bucket,
      size: sizeOf(name, built),
      prev: undefined,
      next: undefined,
      segment: 0,
    };
    if (bucket === undefined) top.static = entry;
    else (top.byBucket ??= new Map()).set(bucket, entry);
    this.#probation.unshift(entry);
    this.#evict(entry);
    return entry;
  }

  get entries(): number {
    return this.#probation.count + this.#protected.count;
  }

  get bytes(): number {
    return this.#probation.bytes + this.#protected.bytes;
  }

  /** Is this entry still in the cache (not evicted)? For tests. */
  has(name: string, variant: number | string, bucket?: string): boolean {
    const top = this.top(name, variant);
    return (bucket === undefined ? top?.static : top?.byBucket?.get(bucket)) !== undefined;
  }

  /** Evict least recently used entries (probation first) until within bounds; never `keep`. */
  #evict(keep: CacheEntry): void {
    while (this.entries > this.#maxEntries || this.bytes > this.#maxBytes) {
      let victim = this.#probation.tail;
      if (victim === keep) victim = victim.prev;
      victim ??= this.#protected.tail;
      if (victim === keep) victim = victim.prev;
      if (!victim) return; // only `keep` is left: a single answer larger than the byte bound
      this.#remove(victim);
      this.evictions++;
    }
  }

  #remove(e: CacheEntry): void {
    (e.segment === 1 ? this.#protected : this.#probation).remove(e);
    const variants = this.#byName.get(e.name);
    const top = variants?.get(e.variant);
    if (!variants || !top) return;
    if (e.bucket === undefined) {
      // Assigned, not deleted: `delete` would turn the object into a slow dictionary.
      if (top.static === e) top.static = undefined;
    } else if (top.byBucket?.get(e.bucket) === e) {
      top.byBucket.delete(e.bucket);
      if (top.byBucket.size === 0) top.byBucket = undefined;
    }
    if (!top.static && !top.byBucket) {
      variants.delete(e.variant);
      if (variants.size === 0) this.#byName.delete(e.name);
    }
  }
}

function sizeOf(name: string, built: Built): number {
  const t = built.template;
  return (
    t.body.length +
    t.header.length +
    2 * (t.bodySlots.length + t.answerSlots.length + t.zoneSlots.length) +
    2 * name.length +
    ENTRY_OVERHEAD_BYTES
  );
}
