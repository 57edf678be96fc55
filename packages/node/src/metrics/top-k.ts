/**
 * The heavy hitters of an unbounded stream in bounded memory: the Space-Saving sketch of Metwally,
 * Agrawal and El Abbadi ("Efficient Computation of Frequent and Top-k Elements in Data Streams",
 * ICDT 2005). It monitors at most `capacity` items. A new item, when the sketch is full, takes the
 * place of the item with the smallest count and inherits that count (+ its weight) as its
 * `error`: a count never under-estimates, over-estimates by at most `error`, and every item whose
 * true count exceeds total / capacity is monitored. A stream of distinct names (an attacker
 * requesting random URLs) therefore costs no memory beyond the capacity and cannot push out an
 * item that is really frequent.
 *
 * The counters sit in a binary min-heap indexed by a map, so each `add` costs O(log capacity).
 *
 *   const hot = new SpaceSaving<string>(100);
 *   hot.add('http://www.example.com/a.jpg');
 *   hot.top(10); // [{ item, count, error }], largest count first
 */

export interface HeavyHitter<T> {
  item: T;
  /** Estimated count: at least the true count, at most `error` more. */
  count: number;
  /** Bound on the over-estimate (the count the item inherited when it entered the sketch). */
  error: number;
}

interface Counter<T> {
  item: T;
  count: number;
  error: number;
  /** Position in the heap. */
  at: number;
}

export class SpaceSaving<T> {
  readonly capacity: number;
  readonly #heap: Counter<T>[] = [];
  readonly #index = new Map<T, Counter<T>>();
  #total = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
  }

  /** Sum of every weight added (the stream's length for unit weights). */
  get total(): number {
    return this.#total;
  }

  /** Items monitored now (at most `capacity`). */
  get size(): number {
    return this.#heap.length;
  }

  /** Count one occurrence of `item` (or `weight` of them; weights must be positive). */
  add(item: T, weight = 1): void {
    if (!(weight > 0) || !Number.isFinite(weight)) return;
    this.#total += weight;
    const known = this.#index.get(item);
    if (known) {
      known.count += weight;
      this.#down(known.at);
      return;
    }
    if (this.#heap.length < this.capacity) {
      const c: Counter<T> = { item, count: weight, error: 0, at: this.#heap.length };
      this.#heap.push(c);
      this.#index.set(item, c);
      this.#up(c.at);
      return;
    }
    // Full: the item with the smallest count gives its place (and its count, as error) away.
    const min = this.#heap[0]!;
    this.#index.delete(min.item);
    min.error = min.count;
    min.count += weight;
    min.item = item;
    this.#index.set(item, min);
    this.#down(0);
  }

  /** The estimate for one item, or undefined when it is not monitored. */
  get(item: T): HeavyHitter<T> | undefined {
    const c = this.#index.get(item);
    return c ? { item: c.item, count: c.count, error: c.error } : undefined;
  }

  /** The `n` largest counts, largest first (ties: the smaller error first). */
  top(n = this.capacity): HeavyHitter<T>[] {
    return this.#heap
      .map((c) => ({ item: c.item, count: c.count, error: c.error }))
      .sort((a, b) => b.count - a.count || a.error - b.error)
      .slice(0, Math.max(0, n));
  }

  clear(): void {
    this.#heap.length = 0;
    this.#index.clear();
    this.#total = 0;
  }

  #swap(i: number, j: number): void {
    const h = this.#heap;
    const a = h[i]!;
    const b = h[j]!;
    h[i] = b;
    h[j] = a;
    b.at = i;
    a.at = j;
  }

  #up(i: number): void {
    const h = this.#heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.count <= h[i]!.count) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const h = this.#heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < h.length && h[l]!.count < h[least]!.count) least = l;
      if (r < h.length && h[r]!.count < h[least]!.count) least = r;
      if (least === i) return;
      this.#swap(i, least);
      i = least;
    }
  }
}
