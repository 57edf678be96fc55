/**
 * The purges applied here lately, for the proxy's store-time check (`ProxyComponents.admit`): a
 * fetch that started before a matching purge was applied here and ends after it must not store
 * what the purge dropped — the purge's scan could not see a response that was not stored yet.
 */
import type { Clock } from '@coral/runtime';
import type { PurgeCandidate } from './match.js';

/**
 * How long, and how many, applied purges are kept in memory for the store-time check. A fetch is
 * bounded far below an hour (the origin's timeouts).
 */
export const RECENT_PURGES_MS = 60 * 60_000;
export const RECENT_PURGES_MAX = 10_000;

export class RecentPurges {
  readonly #clock: Clock;
  /** Oldest first, bounded by RECENT_PURGES_*. */
  readonly #recent: Array<{ appliedAt: number; match: (m: PurgeCandidate) => boolean }> = [];

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Remember an applied purge, before its scan of the store starts. */
  remember(match: (m: PurgeCandidate) => boolean): void {
    this.#recent.push({ appliedAt: this.#clock.now(), match });
    this.#forget();
  }

  /** False when a purge matching the response was applied here at or after its fetch started. */
  admits(c: {
    url: string;
    headers: Readonly<Record<string, string>>;
    fetchStartedAt: number;
  }): boolean {
    this.#forget();
    const m = { url: c.url, headers: { ...c.headers }, storedAt: c.fetchStartedAt };
    return !this.#recent.some((p) => p.appliedAt >= c.fetchStartedAt && p.match(m));
  }

  /** Drop the remembered purges beyond the bounds. */
  #forget(): void {
    const now = this.#clock.now();
    while (
      this.#recent.length > RECENT_PURGES_MAX ||
      (this.#recent[0] !== undefined && this.#recent[0].appliedAt < now - RECENT_PURGES_MS)
    ) {
      this.#recent.shift();
    }
  }
}
