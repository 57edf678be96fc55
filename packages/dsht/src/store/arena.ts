/**
 * The value store's bytes (keys and values) appended into fixed-size chunks.
 *
 * A region is never written again once handed out, and a chunk never moves or grows, so a view
 * given out earlier stays valid for as long as it is held (it keeps its chunk alive). Unlike one
 * buffer grown by copying, the slack is at most one partly filled chunk (plus, per full chunk, the
 * tail that the next region did not fit in: under `MAX_REGION_BYTES`), and growing never holds
 * the old and the new copy at once. The first chunk is small (4 KiB: a simulation runs thousands
 * of stores holding a few values each) and each next one twice the last, up to 256 KiB, large
 * enough for malloc to map each on its own, so a dropped chunk goes back to the system instead of
 * leaving a hole in its heap.
 *
 * A region's address is one 32-bit number: chunk index × `ARENA_CHUNK_BYTES` + offset (a smaller
 * chunk uses the start of its range).
 */

/** Bytes per chunk (2^18). */
export const ARENA_CHUNK_BYTES = 1 << 18;
/** Largest region the arena holds (one chunk). */
export const MAX_REGION_BYTES = ARENA_CHUNK_BYTES;
/** Bytes of an arena's first chunk. */
const FIRST_CHUNK_BYTES = 4096;
/** Chunks an arena may have: addresses stay below 2^32. */
const MAX_CHUNKS = 2 ** 32 / ARENA_CHUNK_BYTES;

export class Arena {
  #chunks: Uint8Array[] = [];
  /** Bytes used in the last chunk, and its size. */
  #tail = 0;
  #last = 0;
  #capacity = 0;
  /** Bytes of regions handed out (live or dead). */
  used = 0;
  /** Bytes of regions no longer in use (the owner counts them; `compact` policy reads them). */
  dead = 0;

  /** Bytes of chunks allocated. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Copy `bytes` in; returns the region's address. `bytes` must fit one chunk. */
  append(bytes: Uint8Array): number {
    const n = bytes.length;
    if (n > MAX_REGION_BYTES) throw new RangeError(`arena region of ${n} bytes over one chunk`);
    if (this.#tail + n > this.#last) {
      if (this.#chunks.length >= MAX_CHUNKS) throw new RangeError('arena full (4 GiB)');
      const size = Math.min(
        ARENA_CHUNK_BYTES,
        Math.max(n, FIRST_CHUNK_BYTES * 2 ** this.#chunks.length),
      );
      this.#chunks.push(new Uint8Array(size));
      this.#tail = 0;
      this.#last = size;
      this.#capacity += size;
    }
    const c = this.#chunks.length - 1;
    const at = this.#tail;
    this.#chunks[c]!.set(bytes, at);
    this.#tail += n;
    this.used += n;
    return c * ARENA_CHUNK_BYTES + at;
  }

  /** A view of the region at `addr` (valid as long as it is held). */
  view(addr: number, len: number): Uint8Array {
    const off = addr % ARENA_CHUNK_BYTES;
    return this.#chunks[(addr - off) / ARENA_CHUNK_BYTES]!.subarray(off, off + len);
  }

  /** Do the region at `addr` and `bytes` hold the same bytes? */
  equals(addr: number, bytes: Uint8Array): boolean {
    const off = addr % ARENA_CHUNK_BYTES;
    const chunk = this.#chunks[(addr - off) / ARENA_CHUNK_BYTES]!;
    for (let i = 0; i < bytes.length; i++) if (chunk[off + i] !== bytes[i]) return false;
    return true;
  }
}
