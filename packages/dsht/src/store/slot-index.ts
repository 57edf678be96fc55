/**
 * An open-addressing hash table from (level, key bytes) to a slot number, in two typed arrays.
 *
 * The value store needs one entry per (level, key) it holds: 100,000s of them. A `Map` keyed by
 * a binary string costs a string (~40 bytes) per entry plus the map's own table (~30 bytes per
 * entry and growth slack) on the V8 heap; this table costs 8 bytes per bucket (the slot number and
 * its hash) at a load of at most 3/4, outside the heap, and no per-entry object.
 *
 * Linear probing; deletion shifts the following entries back (no tombstones, so a table that
 * sees many deletions stays as fast as a fresh one). The keys themselves stay with the owner:
 * `matches(slot, level, key)` compares. The hash is seeded with a per-table secret, so a stranger
 * choosing keys cannot aim them at one run of buckets.
 */
import { randomFillSync } from 'node:crypto';

/** Answers "does slot `s` hold (level, key)?" for the table (the owner keeps the keys). */
export interface SlotKeys {
  matches(s: number, level: number, key: Uint8Array): boolean;
}

/** murmur3's 32-bit finaliser: spreads every input bit over the result (unsigned). */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const EMPTY = -1;
/** Buckets of a table's first allocation. */
const MIN_BUCKETS = 64;
const NO_I32 = new Int32Array(0);
const NO_U32 = new Uint32Array(0);

export class SlotIndex {
  readonly #keys: SlotKeys;
  readonly #seed: number;
  #slots = NO_I32;
  #hashes = NO_U32;
  #mask = -1;
  #size = 0;

  constructor(keys: SlotKeys, options: { seed?: number } = {}) {
    this.#keys = keys;
    this.#seed = options.seed ?? randomFillSync(new Uint32Array(1))[0]!;
  }

  get size(): number {
    return this.#size;
  }

  /** Buckets allocated. */
  get capacity(): number {
    return this.#slots.length;
  }

  /** Seeded hash of (level, key): FNV-1a over the bytes, then murmur3's finaliser. */
  hash(level: number, key: Uint8Array): number {
    let h = Math.imul(this.#seed ^ level ^ 0x811c9dc5, 0x01000193);
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key[i]!, 0x01000193);
    return fmix32(h);
  }

  /** The slot holding (level, key), or -1. */
  find(level: number, key: Uint8Array): number {
    if (this.#size === 0) return EMPTY;
    const h = this.hash(level, key);
    for (let i = h & this.#mask; ; i = (i + 1) & this.#mask) {
      const s = this.#slots[i]!;
      if (s === EMPTY) return EMPTY;
      if (this.#hashes[i] === h && this.#keys.matches(s, level, key)) return s;
    }
  }

  /** Add slot `s` for (level, key), which must not be in the table. */
  insert(level: number, key: Uint8Array, s: number): void {
    if ((this.#size + 1) * 4 > this.#slots.length * 3) this.#resize();
    this.#place(this.hash(level, key), s);
    this.#size++;
  }

  /** Remove the entry of (level, key); returns its slot or -1. */
  remove(level: number, key: Uint8Array): number {
    if (this.#size === 0) return EMPTY;
    const h = this.hash(level, key);
    const mask = this.#mask;
    let i = h & mask;
    for (; ; i = (i + 1) & mask) {
      const s = this.#slots[i]!;
      if (s === EMPTY) return EMPTY;
      if (this.#hashes[i] === h && this.#keys.matches(s, level, key)) break;
    }
    const removed = this.#slots[i]!;
    // Backward shift: move each following entry of the run into the hole when the hole lies
    // between its home bucket and where it sits, so that every entry stays reachable from home.
    for (let j = (i + 1) & mask; this.#slots[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.#hashes[j]! & mask;
      if (((j - home) & mask) >= ((j - i) & mask)) {
        this.#slots[i] = this.#slots[j]!;
        this.#hashes[i] = this.#hashes[j]!;
        i = j;
      }
    }
    this.#slots[i] = EMPTY;
    this.#hashes[i] = 0;
    this.#size--;
    return removed;
  }

  #place(h: number, s: number): void {
    let i = h & this.#mask;
    while (this.#slots[i] !== EMPTY) i = (i + 1) & this.#mask;
    this.#slots[i] = s;
    this.#hashes[i] = h;
  }

  #resize(): void {
    const oldSlots = this.#slots;
    const oldHashes = this.#hashes;
    const n = Math.max(MIN_BUCKETS, oldSlots.length * 2);
    this.#slots = new Int32Array(n).fill(EMPTY);
    this.#hashes = new Uint32Array(n);
    this.#mask = n - 1;
    for (let i = 0; i < oldSlots.length; i++)
      if (oldSlots[i] !== EMPTY) this.#place(oldHashes[i]!, oldSlots[i]!);
  }
}
