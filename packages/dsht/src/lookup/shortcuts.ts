/**
 * What a node remembers of its own recent walks, per key: the i3 shortcut of gets (who answered)
 * and the placements of puts (where the value went). Entries expire, and at most `max` are kept —
 * the one set longest ago is dropped first.
 */
export class Shortcuts<V extends { expiresAt: number }> {
  readonly #max: number;
  /** Key (hex) → entry, in the order they were set (oldest first). */
  readonly #entries = new Map<string, V>();

  constructor(max: number) {
    this.#max = max;
  }

  get(hex: string): V | undefined {
    return this.#entries.get(hex);
  }

  delete(hex: string): void {
    this.#entries.delete(hex);
  }

  set(hex: string, v: V): void {
    this.#entries.delete(hex);
    this.#entries.set(hex, v);
    if (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** Drop the entries `drop` says to. */
  deleteWhere(drop: (v: V) => boolean): void {
    for (const [k, v] of this.#entries) if (drop(v)) this.#entries.delete(k);
  }

  /** Drop the expired entries (the maintenance sweep). */
  sweep(now: number): void {
    this.deleteWhere((v) => v.expiresAt <= now);
  }
}
