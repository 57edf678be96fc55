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

  /** A store-owned copy of `bytes` (a view into a slab when small). */
  copy(bytes: Uint8Array): Uint8Array {
    const n = bytes.length;
    if (n > SLAB_MAX_COPY) return bytes.slice();
    if (this.#used + n > this.#slab.length) {
      this.#slab = new Uint8Array(SLAB_BYTES);
      this.#used = 0;
    }
    const out = this.#slab.subarray(this.#used, this.#used + n);
    out.set(bytes);
    this.#used += n;
    return out;
  }
}

/**
 * Ids (publishers, copiers) by value, each held once with a reference count: 100,000 values from
 * one publisher share one 20-byte copy of its id.
 */
export class IdTable {
  #ids = new Map<string, { id: Uint8Array; refs: number }>();
  #slabs = new ByteSlabs();

  /** The shared copy of `id` (one more reference to it). */
  acquire(id: Uint8Array): Uint8Array {
    const k = latin1(id);
    const e = this.#ids.get(k);
    if (e) {
      e.refs++;
      return e.id;
    }
    const own = this.#slabs.copy(id);
    this.#ids.set(k, { id: own, refs: 1 });
    return own;
  }

  /** Drop one reference taken by `acquire`. */
  release(id: Uint8Array): void {
    const k = latin1(id);
    const e = this.#ids.get(k);
    if (e && --e.refs <= 0) this.#ids.delete(k);
  }

  /** Distinct ids held. */
  get size(): number {
    return this.#ids.size;
  }
}

function latin1(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');
}
