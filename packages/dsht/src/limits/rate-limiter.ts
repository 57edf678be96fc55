/**
 * Per-source token buckets for every request type: one bucket per (type, host) and one per
 * (type, network) (see address.ts), the network's `netMultiplier` times the host's. A request is
 * served only when both buckets hold a token. The buckets live in a bounded LRU map: a bucket
 * pushed out had not been used for longer than any other, so it had (nearly) refilled.
 *
 * Also a single global bucket (`GlobalBucket`) for replies to sources that have not completed a
 * round trip: it keeps no per-source state, so spoofed sources cannot make it grow.
 */
import type { Clock } from '@coral/testkit';
import { NET_RATE_MULTIPLIER, RATE_LIMITS, RATE_LIMIT_ENTRIES } from '../constants.js';
import type { RequestType } from '../wire/messages.js';
import { hostKey, netKey } from './address.js';

export interface RateLimit {
  /** Sustained requests per second. */
  perSecond: number;
  /** Bucket size: requests allowed at once after a quiet period. */
  burst: number;
}

export type RateLimits = Record<RequestType, RateLimit>;

export interface SourceLimiterOptions {
  /** Per-type limits per host (merged over RATE_LIMITS). */
  limits?: Partial<RateLimits>;
  /** Network limit = this × host limit. Default NET_RATE_MULTIPLIER (8). */
  netMultiplier?: number;
  /** Buckets kept. Default RATE_LIMIT_ENTRIES. */
  maxEntries?: number;
}

interface Bucket {
  tokens: number;
  at: number;
  /** When it was last moved to the most-recent end of the LRU map. */
  touched: number;
}

export class SourceLimiter {
  readonly limits: RateLimits;
  readonly netMultiplier: number;
  #clock: Clock;
  #max: number;
  #buckets = new Map<string, Bucket>();
  /** Requests refused, by type. */
  readonly refused: Partial<Record<RequestType, number>> = {};

  constructor(components: { clock: Clock }, options: SourceLimiterOptions = {}) {
    this.#clock = components.clock;
    this.limits = { ...RATE_LIMITS, ...options.limits };
    this.netMultiplier = options.netMultiplier ?? NET_RATE_MULTIPLIER;
    this.#max = options.maxEntries ?? RATE_LIMIT_ENTRIES;
  }

  /** Buckets held. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Whether any bucket exists for this source IP (for tests: refused requests create none). */
  tracks(ip: string): boolean {
    const h = `|${hostKey(ip)}`;
    for (const k of this.#buckets.keys()) if (k.endsWith(h)) return true;
    return false;
  }

  /** Take a token for a `type` request from `ip`; false (and nothing taken) when either bucket is empty. */
  allow(type: RequestType, ip: string): boolean {
    const limit = this.limits[type];
    const now = this.#clock.now();
    const host = this.#bucket(`${type}|${hostKey(ip)}`, limit.burst, limit.perSecond, now);
    const m = this.netMultiplier;
    const net = this.#bucket(`${type}|n:${netKey(ip)}`, limit.burst * m, limit.perSecond * m, now);
    if (host.tokens < 1 || net.tokens < 1) {
      this.refused[type] = (this.refused[type] ?? 0) + 1;
      return false;
    }
    host.tokens--;
    net.tokens--;
    return true;
  }

  #bucket(key: string, burst: number, perSecond: number, now: number): Bucket {
    let b = this.#buckets.get(key);
    if (b) {
      b.tokens = Math.min(burst, b.tokens + ((now - b.at) * perSecond) / 1000);
      b.at = now;
      // Least recently used first; moved at most once a second (cheap on a busy path).
      if (now - b.touched >= 1_000) {
        b.touched = now;
        this.#buckets.delete(key);
        this.#buckets.set(key, b);
      }
      return b;
    }
    b = { tokens: burst, at: now, touched: now };
    if (this.#buckets.size >= this.#max) {
      this.#buckets.delete(this.#buckets.keys().next().value as string);
    }
    this.#buckets.set(key, b);
    return b;
  }
}

/** One token bucket for everyone. */
export class GlobalBucket {
  #clock: Clock;
  #rate: number;
  #burst: number;
  #tokens: number;
  #at: number;
  refused = 0;

  constructor(components: { clock: Clock }, options: RateLimit) {
    this.#clock = components.clock;
    this.#rate = options.perSecond;
    this.#burst = options.burst;
    this.#tokens = options.burst;
    this.#at = components.clock.now();
  }

  take(): boolean {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#at) * this.#rate) / 1000);
    this.#at = now;
    if (this.#tokens < 1) {
      this.refused++;
      return false;
    }
    this.#tokens--;
    return true;
  }
}
