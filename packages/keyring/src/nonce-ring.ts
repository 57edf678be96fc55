/**
 * The 8-byte nonces a `ReplayGuard` remembers, without an object or a string per nonce: a ring in
 * insertion order (each nonce as two 32-bit halves and its timestamp, in typed arrays) and an
 * open-addressing index into it (linear probing, deletion by backward shift, so no tombstones
 * build up). About 28 bytes per nonce where a `Map` from a latin1 string to a number takes about
 * 100 (the string, the entry, the table's spare and deleted slots). The ring doubles when full;
 * the owner bounds how many it holds. The probe sequence starts from a per-ring random seed.
 */
import { randomFillSync } from 'node:crypto';

/** Ring slots of a new ring (it doubles when full). */
const INITIAL_SLOTS = 64;

export class NonceRing {
  #hi = new Uint32Array(INITIAL_SLOTS);
  #lo = new Uint32Array(INITIAL_SLOTS);
  #ts = new Float64Array(INITIAL_SLOTS);
  /** Ring position of the oldest nonce. */
  #head = 0;
  #count = 0;
  /** Ring position + 1 per index slot (0: empty); twice the ring's size, a power of two. */
  #index = new Int32Array(2 * INITIAL_SLOTS);
  #seed = randomFillSync(new Uint32Array(1))[0]!;

  get size(): number {
    return this.#count;
  }

  /** Is the nonce (two 32-bit halves) held? */
  has(hi: number, lo: number): boolean {
    const index = this.#index;
    const mask = index.length - 1;
    for (let i = this.#home(hi, lo, mask); ; i = (i + 1) & mask) {
      const r = index[i]! - 1;
      if (r < 0) return false;
      if (this.#hi[r] === hi && this.#lo[r] === lo) return true;
    }
  }

  /** Remember a nonce not held (check `has` first) at the newest end. */
  add(hi: number, lo: number, ts: number): void {
    if (this.#count === this.#hi.length) this.#grow();
    const r = (this.#head + this.#count) % this.#hi.length;
    this.#hi[r] = hi >>> 0;
    this.#lo[r] = lo >>> 0;
    this.#ts[r] = ts;
    this.#count++;
    this.#insert(r);
  }

  /** Timestamp of the oldest nonce held (undefined when empty). */
  oldestTs(): number | undefined {
    return this.#count > 0 ? this.#ts[this.#head] : undefined;
  }

  /** Forget the oldest nonce; returns its timestamp. */
  removeOldest(): number | undefined {
    if (this.#count === 0) return undefined;
    const r = this.#head;
    this.#remove(r);
    this.#head = (r + 1) % this.#hi.length;
    this.#count--;
    return this.#ts[r];
  }

  #home(hi: number, lo: number, mask: number): number {
    let h = Math.imul(lo ^ this.#seed, 0x9e3779b1) ^ hi;
    h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
    return (h ^ (h >>> 13)) & mask;
  }

  #insert(r: number): void {
    const index = this.#index;
    const mask = index.length - 1;
    let i = this.#home(this.#hi[r]!, this.#lo[r]!, mask);
    while (index[i] !== 0) i = (i + 1) & mask;
    index[i] = r + 1;
  }

  /** Take ring position `r` out of the index, shifting back the entries probed past it. */
  #remove(r: number): void {
    const index = this.#index;
    const mask = index.length - 1;
    let i = this.#home(this.#hi[r]!, this.#lo[r]!, mask);
    while (index[i] !== r + 1) i = (i + 1) & mask;
    for (let j = (i + 1) & mask; index[j] !== 0; j = (j + 1) & mask) {
      const k = this.#home(this.#hi[index[j]! - 1]!, this.#lo[index[j]! - 1]!, mask);
      // Entry j may move to the hole at i when its home is not within (i, j] (cyclically).
      const between = i <= j ? k > i && k <= j : k > i || k <= j;
      if (!between) {
        index[i] = index[j]!;
        i = j;
      }
    }
    index[i] = 0;
  }

  #grow(): void {
    const old = this.#hi.length;
    const n = 2 * old;
    const hi = new Uint32Array(n);
    const lo = new Uint32Array(n);
    const ts = new Float64Array(n);
    for (let k = 0; k < this.#count; k++) {
      const r = (this.#head + k) % old;
      hi[k] = this.#hi[r]!;
      lo[k] = this.#lo[r]!;
      ts[k] = this.#ts[r]!;
    }
    this.#hi = hi;
    this.#lo = lo;
    this.#ts = ts;
    this.#head = 0;
    this.#index = new Int32Array(2 * n);
    for (let k = 0; k < this.#count; k++) this.#insert(k);
  }
}
