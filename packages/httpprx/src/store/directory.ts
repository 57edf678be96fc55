/**
 * The in-memory directory of a disk store: one compact slot per stored variant in typed arrays,
 * found by its binary key, in LRU order — about a hundred bytes per object and no JS object, string
 * or closure per URL (Traffic Server keeps its cache directory in RAM the same way and the headers
 * on disk). Everything else about an object (URL, headers, Vary values, age facts) stays in
 * LevelDB and is read when a request needs it.
 *
 * A slot holds the variant key (`KEY_BYTES`: the 20-byte urlKey, then the 8-byte secondary key),
 * body size, body file number (32 bits), the second its freshness ends (32 bits, for
 * re-announcements), whether its body was checked since start-up, and its links: previous/next in
 * LRU order (oldest first) and the next variant of the same URL — 57 bytes. The SHA-256 stays in
 * the LevelDB record (read when a re-announcement or an update needs it). An open
 * addressing hash table (linear probing, backward-shift deletion) maps a urlKey to its first
 * variant. Slot numbers are reused after removal; a caller must not keep one across an await.
 */
export const PRIMARY_BYTES = 20;
export const SECONDARY_BYTES = 8;
export const KEY_BYTES = PRIMARY_BYTES + SECONDARY_BYTES;

const NIL = -1;
/** Body file numbers fit 32 bits (a store makes fewer than 4 × 10⁹ files in its life). */
export const MAX_FILE = 0xffffffff;
/** Freshness ends are kept in whole seconds, up to the last second a Uint32 holds (2106). */
const MAX_FRESH_S = 0xffffffff;
/**
 * Capacity growth per step. A quarter rather than double: the arrays are 57 bytes a slot, and a
 * full directory at 100,000 objects holds 108,000 slots (6.2 MB) instead of 131,000 (7.5 MB);
 * the extra copies (each slot about four more times over the directory's growth) cost
 * milliseconds.
 */
const GROWTH = 1.25;

export interface SlotInfo {
  size: number;
  file: number;
  /**
   * Clock time (ms) at which the stored response stops being fresh; kept rounded down to the
   * second (clamped to 1970–2106).
   */
  freshUntil: number;
  /** Has its body been checked against its SHA-256 (or written) since start-up? */
  verified?: boolean;
}

/** A freshness end (ms) as the whole second it falls in, within what a Uint32 holds. */
function freshSeconds(ms: number): number {
  const s = Math.floor(ms / 1000);
  return s > 0 ? Math.min(s, MAX_FRESH_S) : 0;
}

export class Directory {
  #cap = 0;
  #keys = new Uint8Array(0);
  #size = new Float64Array(0);
  #file = new Uint32Array(0);
  /** Seconds. */
  #fresh = new Uint32Array(0);
  #verified = new Uint8Array(0);
  #prev = new Int32Array(0);
  #next = new Int32Array(0);
  #chain = new Int32Array(0);
  /** Free slots, linked through #next. */
  #free = NIL;
  #lruHead = NIL;
  #lruTail = NIL;
  /** urlKey → first variant slot (NIL = empty). Power-of-two size. */
  #table = new Int32Array(16).fill(NIL);
  #primaries = 0;
  #count = 0;
  #bytes = 0;

  constructor(initialCapacity = 64) {
    this.#grow(Math.max(1, initialCapacity));
  }

  /** Stored variants. */
  get count(): number {
    return this.#count;
  }

  /** Distinct URLs. */
  get primaries(): number {
    return this.#primaries;
  }

  /** Sum of body sizes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Bytes held by the directory's arrays (for tests and the admin API). */
  get footprint(): number {
    return (
      this.#keys.byteLength +
      this.#size.byteLength +
      this.#file.byteLength +
      this.#fresh.byteLength +
      this.#verified.byteLength +
      this.#prev.byteLength +
      this.#next.byteLength +
      this.#chain.byteLength +
      this.#table.byteLength
    );
  }

  // -------------------------------------------------------------------------------------------
  // Lookups

  /** First variant slot of a urlKey, or -1. */
  first(primary: Uint8Array): number {
    const i = this.#probe(primary);
    return i === NIL ? NIL : this.#table[i]!;
  }

  /** Next variant of the same URL after `slot`, or -1. */
  nextVariant(slot: number): number {
    return this.#chain[slot]!;
  }

  /** The slot of a variant key (28 bytes), or -1. */
  find(key: Uint8Array): number {
    for (let s = this.first(key.subarray(0, PRIMARY_BYTES)); s !== NIL; s = this.#chain[s]!) {
      if (this.#keyEquals(s, key, PRIMARY_BYTES, KEY_BYTES)) return s;
    }
    return NIL;
  }

  /** A copy of a slot's variant key. */
  key(slot: number): Uint8Array {
    return this.#keys.slice(slot * KEY_BYTES, (slot + 1) * KEY_BYTES);
  }

  info(slot: number): SlotInfo {
    return {
      size: this.#size[slot]!,
      file: this.#file[slot]!,
      freshUntil: this.#fresh[slot]! * 1000,
    };
  }

  size(slot: number): number {
    return this.#size[slot]!;
  }

  file(slot: number): number {
    return this.#file[slot]!;
  }

  /** Least recently used slot, or -1 when empty. */
  oldest(): number {
    return this.#lruHead;
  }

  /** Every slot, least recently used first (do not insert or remove while iterating). */
  *slots(): IterableIterator<number> {
    for (let s = this.#lruHead; s !== NIL; s = this.#next[s]!) yield s;
  }

  // -------------------------------------------------------------------------------------------
  // Changes

  /** Mark as most recently used. */
  touch(slot: number): void {
    if (slot === this.#lruTail) return;
    this.#unlinkLru(slot);
    this.#appendLru(slot);
  }

  verified(slot: number): boolean {
    return this.#verified[slot] === 1;
  }

  setVerified(slot: number, v: boolean): void {
    this.#verified[slot] = v ? 1 : 0;
  }

  setFreshUntil(slot: number, freshUntil: number): void {
    this.#fresh[slot] = freshSeconds(freshUntil);
  }

  /**
   * Insert a variant as most recently used. The key must not be present (remove the old slot
   * first). Returns its slot.
   */
  insert(key: Uint8Array, info: SlotInfo): number {
    if (key.length !== KEY_BYTES) throw new Error(`directory keys are ${KEY_BYTES} bytes`);
    if (this.#free === NIL) this.#grow(Math.ceil(this.#cap * GROWTH) + 1);
    const slot = this.#free;
    this.#free = this.#next[slot]!;
    this.#keys.set(key, slot * KEY_BYTES);
    if (!(info.file >= 0 && info.file <= MAX_FILE)) throw new Error(`bad body file ${info.file}`);
    this.#size[slot] = info.size;
    this.#file[slot] = info.file;
    this.#fresh[slot] = freshSeconds(info.freshUntil);
    this.#verified[slot] = info.verified === false ? 0 : 1;
    this.#appendLru(slot);
    // Chain it in front of the URL's other variants.
    const primary = key.subarray(0, PRIMARY_BYTES);
    let i = this.#probe(primary);
    if (i === NIL) {
      if ((this.#primaries + 1) * 2 > this.#table.length) this.#rehash(this.#table.length * 2);
      i = this.#emptyFor(primary);
      this.#table[i] = slot;
      this.#chain[slot] = NIL;
      this.#primaries++;
    } else {
      this.#chain[slot] = this.#table[i]!;
      this.#table[i] = slot;
    }
    this.#count++;
    this.#bytes += info.size;
    return slot;
  }

  /** Remove a slot. */
  remove(slot: number): void {
    const primary = this.#keys.subarray(slot * KEY_BYTES, slot * KEY_BYTES + PRIMARY_BYTES);
    const i = this.#probe(primary);
    if (i !== NIL) {
      if (this.#table[i] === slot) {
        const rest = this.#chain[slot]!;
        if (rest === NIL) this.#deleteAt(i);
        else this.#table[i] = rest;
      } else {
        for (let s = this.#table[i]!; s !== NIL; s = this.#chain[s]!) {
          if (this.#chain[s] === slot) {
            this.#chain[s] = this.#chain[slot]!;
            break;
          }
        }
      }
    }
    this.#unlinkLru(slot);
    this.#bytes -= this.#size[slot]!;
    this.#count--;
    this.#size[slot] = 0;
    this.#chain[slot] = NIL;
    this.#next[slot] = this.#free;
    this.#free = slot;
  }

  /** Re-link the LRU order by ascending `rank[slot]` (oldest first), e.g. the time stored. */
  orderBy(rank: Float64Array): void {
    const slots = Int32Array.from(this.slots());
    slots.sort((a, b) => (rank[a] ?? 0) - (rank[b] ?? 0));
    this.#lruHead = NIL;
    this.#lruTail = NIL;
    for (const s of slots) this.#appendLru(s);
  }

  // -------------------------------------------------------------------------------------------
  // Internals

  #grow(cap: number): void {
    const old = this.#cap;
    const copy = <T extends Uint8Array | Float64Array | Int32Array | Uint32Array>(
      a: T,
      n: number,
      make: (n: number) => T,
    ): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.#keys = copy(this.#keys, cap * KEY_BYTES, (n) => new Uint8Array(n));
    this.#size = copy(this.#size, cap, (n) => new Float64Array(n));
    this.#file = copy(this.#file, cap, (n) => new Uint32Array(n));
    this.#fresh = copy(this.#fresh, cap, (n) => new Uint32Array(n));
    this.#verified = copy(this.#verified, cap, (n) => new Uint8Array(n));
    this.#prev = copy(this.#prev, cap, (n) => new Int32Array(n));
    this.#next = copy(this.#next, cap, (n) => new Int32Array(n));
    this.#chain = copy(this.#chain, cap, (n) => new Int32Array(n));
    // New slots go on the free list, lowest first.
    for (let s = cap - 1; s >= old; s--) {
      this.#next[s] = this.#free;
      this.#chain[s] = NIL;
      this.#free = s;
    }
    this.#cap = cap;
  }

  #hash(primary: Uint8Array): number {
    // urlKeys are SHA-1 output: their first bytes are already uniform.
    return (primary[0]! | (primary[1]! << 8) | (primary[2]! << 16) | (primary[3]! << 24)) >>> 0;
  }

  #keyEquals(slot: number, key: Uint8Array, from: number, to: number): boolean {
    const base = slot * KEY_BYTES;
    for (let j = from; j < to; j++) if (this.#keys[base + j] !== key[j]) return false;
    return true;
  }

  /** Table index holding `primary`, or -1. */
  #probe(primary: Uint8Array): number {
    const mask = this.#table.length - 1;
    for (let i = this.#hash(primary) & mask; ; i = (i + 1) & mask) {
      const s = this.#table[i]!;
      if (s === NIL) return NIL;
      if (this.#keyEquals(s, primary, 0, PRIMARY_BYTES)) return i;
    }
  }

  #emptyFor(primary: Uint8Array): number {
    const mask = this.#table.length - 1;
    let i = this.#hash(primary) & mask;
    while (this.#table[i] !== NIL) i = (i + 1) & mask;
    return i;
  }

  /** Backward-shift deletion keeps every probe sequence unbroken without tombstones. */
  #deleteAt(i: number): void {
    const t = this.#table;
    const mask = t.length - 1;
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const s = t[j]!;
      if (s === NIL) break;
      const home =
        this.#hash(this.#keys.subarray(s * KEY_BYTES, s * KEY_BYTES + PRIMARY_BYTES)) & mask;
      // Move s into the hole unless its home lies cyclically in (hole, j].
      const inRange = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!inRange) {
        t[hole] = s;
        hole = j;
      }
    }
    t[hole] = NIL;
    this.#primaries--;
  }

  #rehash(size: number): void {
    const old = this.#table;
    this.#table = new Int32Array(size).fill(NIL);
    for (const s of old) {
      if (s === NIL) continue;
      const primary = this.#keys.subarray(s * KEY_BYTES, s * KEY_BYTES + PRIMARY_BYTES);
      this.#table[this.#emptyFor(primary)] = s;
    }
  }

  #appendLru(slot: number): void {
    this.#prev[slot] = this.#lruTail;
    this.#next[slot] = NIL;
    if (this.#lruTail !== NIL) this.#next[this.#lruTail] = slot;
    else this.#lruHead = slot;
    this.#lruTail = slot;
  }

  #unlinkLru(slot: number): void {
    const p = this.#prev[slot]!;
    const n = this.#next[slot]!;
    if (p !== NIL) this.#next[p] = n;
    else this.#lruHead = n;
    if (n !== NIL) this.#prev[n] = p;
    else this.#lruTail = p;
  }
}
