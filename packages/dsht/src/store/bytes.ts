/**
 * Store-owned bytes for the value store: small copies packed into shared slabs, and ids held once.
 *
 * A value handed to the store is often a view into a much larger buffer (a received datagram, an
 * encoder's shared output buffer): keeping the view keeps that whole buffer alive, so 100,000
 * values of ~100 bytes could pin tens of MB. The store copies each key and value into a slab of
 * its own instead; a slab is freed by the garbage collector once no value in it is left.
 */

/** Bytes per slab. */
export const SLAB_BYTES = 16 * 1024;
/** Copies larger than this get a buffer of their own instead of a slab's space. */
export const SLAB_MAX_COPY = 1024;

export class ByteSlabs {
  #slab = new Uint8Array(0);
  #used = 0;
  readonly #slabBytes: number;
  readonly #maxCopy: number;

  /** Slabs of `slabBytes` (default SLAB_BYTES); regions over `maxCopy` (SLAB_MAX_COPY) get their own. */
  constructor(options: { slabBytes?: number; maxCopy?: number } = {}) {
    this.#slabBytes = options.slabBytes ?? SLAB_BYTES;
    this.#maxCopy = options.maxCopy ?? SLAB_MAX_COPY;
  }

  /** A new region of `n` bytes, never handed out before (a view into a slab when small). */
  readonly alloc = (n: number): Uint8Array => {
    if (n > this.#maxCopy) return new Uint8Array(n);
    if (this.#used + n > this.#slab.length) {
      this.#slab = new Uint8Array(this.#slabBytes);
      this.#used = 0;
    }
    const out = this.#slab.subarray(this.#used, this.#used + n);
    this.#used += n;
    return out;
  };

  /** A store-owned copy of `bytes` (a view into a slab when small). */
  copy(bytes: Uint8Array): Uint8Array {
    const out = this.alloc(bytes.length);
    out.set(bytes);
    return out;
  }
}

/**
 * Ids (publishers, copiers) by value, each held once with a reference count and known by a small
 * number: 100,000 values from one publisher share one 20-byte copy of its id, and a value refers
 * to it by a 4-byte index instead of a pointer.
 */
export class IdTable {
  #index = new Map<string, number>();
  #ids: Array<Uint8Array | undefined> = [];
  #refs: number[] = [];
  #free: number[] = [];
  #slabs = new ByteSlabs();

  /** The index of `id` (one more reference to it). */
  acquire(id: Uint8Array): number {
    const k = latin1(id);
    const i = this.#index.get(k);
    if (i !== undefined) {
      this.#refs[i]!++;
      return i;
    }
    const n = this.#free.pop() ?? this.#ids.length;
    this.#ids[n] = this.#slabs.copy(id);
    this.#refs[n] = 1;
    this.#index.set(k, n);
    return n;
  }

  /** The shared copy of the id at `i`. */
  get(i: number): Uint8Array {
    return this.#ids[i]!;
  }

  /** Drop one reference taken by `acquire`. */
  release(i: number): void {
    if (--this.#refs[i]! > 0) return;
    this.#index.delete(latin1(this.#ids[i]!));
    this.#ids[i] = undefined;
    this.#free.push(i);
  }

  /** Distinct ids held. */
  get size(): number {
    return this.#index.size;
  }
}

/**
 * Source hosts (quota accounting) by a small number, with the values and bytes each holds; a
 * source is dropped when it holds nothing.
 */
export class SourceTable {
  #index = new Map<string, number>();
  #names: Array<string | undefined> = [];
  readonly values: number[] = [];
  readonly bytes: number[] = [];
  #free: number[] = [];

  /** The index of `source`, or -1 when it holds nothing. */
  find(source: string): number {
    return this.#index.get(source) ?? -1;
  }

  /** The index of `source`, added with nothing held when new. */
  add(source: string): number {
    const i = this.#index.get(source);
    if (i !== undefined) return i;
    const n = this.#free.pop() ?? this.#names.length;
    this.#names[n] = source;
    this.values[n] = 0;
    this.bytes[n] = 0;
    this.#index.set(source, n);
    return n;
  }

  name(i: number): string {
    return this.#names[i]!;
  }

  /** Count one value of `size` bytes in (`sign` 1) or out (-1); drops a source left empty. */
  count(i: number, size: number, sign: 1 | -1): void {
    this.values[i]! += sign;
    this.bytes[i]! += sign * size;
    if (this.values[i]! <= 0) {
      this.#index.delete(this.#names[i]!);
      this.#names[i] = undefined;
      this.#free.push(i);
    }
  }

  /** Every source holding values. */
  *entries(): IterableIterator<{ source: string; values: number; bytes: number }> {
    for (const [source, i] of this.#index)
      yield { source, values: this.values[i]!, bytes: this.bytes[i]! };
  }
}

function latin1(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');
}
