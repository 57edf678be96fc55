/**
 * A short memory of failures: after an origin's DNS lookup or connection fails, further requests
 * for it fail at once for a few seconds instead of each paying the full timeout and adding load to
 * an origin that is already in trouble. Time comes from the injected clock.
 */
import { systemClock } from '@coral/runtime';
import type { Clock } from '@coral/runtime';

/** How long a failure is remembered by default. */
export const DEFAULT_NEGATIVE_TTL_MS = 5_000;
/** How many keys are remembered at most (oldest dropped first). */
export const DEFAULT_NEGATIVE_MAX_ENTRIES = 1_024;

export interface NegativeEntry<E = unknown> {
  error: E;
  /** Clock time at which the entry stops counting. */
  expiresAt: number;
  /** Milliseconds left until then. */
  retryAfterMs: number;
}

export interface NegativeCacheOptions {
  /** Time a failure is remembered, ms (default {@link DEFAULT_NEGATIVE_TTL_MS}). */
  ttlMs?: number;
  /** Bound on remembered keys (default {@link DEFAULT_NEGATIVE_MAX_ENTRIES}). */
  maxEntries?: number;
}

export class NegativeCache<E = unknown> {
  readonly #clock: Clock;
  readonly ttlMs: number;
  readonly maxEntries: number;
  readonly #entries = new Map<string, { error: E; expiresAt: number }>();

  constructor(components: { clock?: Clock } = {}, options: NegativeCacheOptions = {}) {
    this.#clock = components.clock ?? systemClock;
    this.ttlMs = options.ttlMs ?? DEFAULT_NEGATIVE_TTL_MS;
    this.maxEntries = options.maxEntries ?? DEFAULT_NEGATIVE_MAX_ENTRIES;
    if (!(this.ttlMs >= 0) || !Number.isFinite(this.ttlMs)) {
      throw new RangeError(`negative cache ttlMs must be a finite number >= 0, got ${this.ttlMs}`);
    }
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 0) {
      throw new RangeError(`negative cache maxEntries must be an integer >= 0`);
    }
  }

  /** The remembered failure for `key`, or undefined when none or expired. */
  get(key: string): NegativeEntry<E> | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    const left = e.expiresAt - this.#clock.now();
    if (left <= 0) {
      this.#entries.delete(key);
      return undefined;
    }
    return { error: e.error, expiresAt: e.expiresAt, retryAfterMs: left };
  }

  /** Remember that `key` failed with `error` for `ttlMs` (default: the cache's TTL). */
  set(key: string, error: E, ttlMs: number = this.ttlMs): void {
    if (ttlMs <= 0 || this.maxEntries === 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { error, expiresAt: this.#clock.now() + ttlMs });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }

  delete(key: string): boolean {
    return this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Keys currently stored (expired ones may still be counted until read). */
  get size(): number {
    return this.#entries.size;
  }
}
