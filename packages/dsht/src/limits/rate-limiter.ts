/**
 * Per-source token buckets for every request type: one bucket per (type, host) and one per
 * (type, network) (see address.ts), the network's `netMultiplier` times the host's. A request is
 * served only when both buckets hold a token. The kinds are the request types by default; another
 * set of kinds with limits of its own (`options.kinds`) makes a limiter for something else a
 * source can make a node send (the key notices of auth/key-notices.ts). Each host's and each network's buckets are one
 * record (a flat array of numbers) in a bounded LRU map, hosts and networks sharing the bound: a
 * record pushed out had not been used for longer than any other, so it had (nearly) refilled.
 *
 * Also a single global bucket (`GlobalBucket`) for replies to sources that have not completed a
 * round trip: it keeps no per-source state, so spoofed sources cannot make it grow.
 */
import type { Clock } from '@coral/runtime';
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

export interface SourceLimiterOptions<K extends string = RequestType> {
  /**
   * The kinds limited and their limits per host; default RATE_LIMITS (one per request type).
   * Required when `K` is not `RequestType`.
   */
  kinds?: Readonly<Record<K, RateLimit>>;
  /** Per-kind limits per host, merged over `kinds`. */
  limits?: Partial<Record<K, RateLimit>>;
  /** Network limit = this × host limit. Default NET_RATE_MULTIPLIER (8). */
  netMultiplier?: number;
  /** Buckets kept. Default RATE_LIMIT_ENTRIES. */
  maxEntries?: number;
}

/**
 * One source's (host's or network's) buckets, one per kind (request type): `state` holds each kind's
 * tokens and last refill time side by side (a flat array of numbers: no object per bucket). A
 * type never used reads as full (its time is -Infinity).
 */
interface SourceBuckets {
  state: number[];
  /**
   * When it was last moved to the most-recent end of the LRU map (it is moved when used at least a
   * second after that, so the last use is less than a second after `touched`).
   */
  touched: number;
}

export class SourceLimiter<K extends string = RequestType> {
  readonly limits: Record<K, RateLimit>;
  readonly netMultiplier: number;
  /** Each kind's slot in a source's state (kinds in the order of `limits`). */
  readonly #slot: Record<K, number>;
  /**
   * A new source's state: every kind full (time -Infinity). Copied with `slice()`, so each
   * record's array is exactly its size — pushing pair by pair left spare capacity in every one.
   */
  readonly #empty: readonly number[];
  #clock: Clock;
  #max: number;
  /** A record unused this long has every bucket full again (see #forgetIdle). */
  #idleMs: number;
  /** Hosts' and networks' buckets, each least recently used first (half the bound each). */
  #hosts = new Map<string, SourceBuckets>();
  #nets = new Map<string, SourceBuckets>();
  /** Requests refused, by kind. */
  readonly refused: Partial<Record<K, number>> = {};

  constructor(components: { clock: Clock }, options: SourceLimiterOptions<K> = {}) {
    this.#clock = components.clock;
    // K is RequestType when `kinds` is absent (see SourceLimiterOptions.kinds).
    const kinds = options.kinds ?? (RATE_LIMITS as Readonly<Record<K, RateLimit>>);
    this.limits = { ...kinds, ...options.limits };
    const names = Object.keys(kinds) as K[];
    this.#slot = Object.fromEntries(names.map((t, i) => [t, i])) as Record<K, number>;
    this.#empty = names.flatMap(() => [0, -Infinity]);
    this.netMultiplier = options.netMultiplier ?? NET_RATE_MULTIPLIER;
    this.#max = options.maxEntries ?? RATE_LIMIT_ENTRIES;
    // The longest time any bucket takes to refill from empty (a network's takes as long as a
    // host's), plus the second by which `touched` may lag the last use (see #source).
    let refill = 0;
    for (const t of names)
      refill = Math.max(refill, (this.limits[t].burst / this.limits[t].perSecond) * 1000);
    this.#idleMs = refill + 1_000;
  }

  /** Sources (hosts and networks) whose buckets are held. */
  get size(): number {
    return this.#hosts.size + this.#nets.size;
  }

  /** Whether any bucket exists for this source IP (for tests: refused requests create none). */
  tracks(ip: string): boolean {
    return this.#hosts.has(hostKey(ip));
  }

  /** Take a token for a `type` request from `ip`; false (and nothing taken) when either bucket is empty. */
  allow(type: K, ip: string): boolean {
    const limit = this.limits[type];
    const now = this.#clock.now();
    const slot = 2 * this.#slot[type];
    const m = this.netMultiplier;
    const host = this.#refill(
      this.#source(this.#hosts, hostKey(ip), now),
      slot,
      limit.burst,
      limit.perSecond,
      now,
    );
    const net = this.#refill(
      this.#source(this.#nets, netKey(ip), now),
      slot,
      limit.burst * m,
      limit.perSecond * m,
      now,
    );
    if (host.state[slot]! < 1 || net.state[slot]! < 1) {
      this.refused[type] = (this.refused[type] ?? 0) + 1;
      return false;
    }
    host.state[slot]!--;
    net.state[slot]!--;
    return true;
  }

  #refill(
    b: SourceBuckets,
    slot: number,
    burst: number,
    perSecond: number,
    now: number,
  ): SourceBuckets {
    const s = b.state;
    const at = s[slot + 1]!;
    s[slot] =
      at === -Infinity ? burst : Math.min(burst, s[slot]! + ((now - at) * perSecond) / 1000);
    s[slot + 1] = now;
    return b;
  }

  /** The buckets of a host or network, made full when first seen. */
  #source(map: Map<string, SourceBuckets>, key: string, now: number): SourceBuckets {
    let b = map.get(key);
    if (b) {
      // Least recently used first; moved at most once a second (cheap on a busy path).
      if (now - b.touched >= 1_000) {
        b.touched = now;
        map.delete(key);
        map.set(key, b);
      }
      return b;
    }
    b = { state: this.#empty.slice(), touched: now };
    this.#forgetIdle(map, now);
    if (map.size >= Math.max(1, this.#max >> 1)) map.delete(map.keys().next().value as string);
    map.set(key, b);
    return b;
  }

  /**
   * Drop up to two of the least recently used records whose every bucket has refilled: a record
   * idle for `#idleMs` reads exactly as a new one would (full), so forgetting it changes no
   * decision — it only keeps the map to the sources heard from in the last few seconds instead of
   * everyone a busy node (one near a hot key) ever heard from, up to the bound.
   */
  #forgetIdle(map: Map<string, SourceBuckets>, now: number): void {
    let n = 0;
    for (const [k, b] of map) {
      if (n++ >= 2 || now - b.touched < this.#idleMs) return;
      map.delete(k);
    }
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
