/** A token bucket per client address, on the injected clock. */
import type { Clock } from '@coral/runtime';

export interface RateLimiterOptions {
  /** Sustained requests per second per client; 0 disables. */
  perSecond: number;
  /** Bucket size (burst). */
  burst: number;
  /** Forget idle clients beyond this many tracked addresses. */
  maxClients?: number;
}

export class RateLimiter {
  readonly #clock: Clock;
  readonly #rate: number;
  readonly #burst: number;
  readonly #max: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(components: { clock: Clock }, options: RateLimiterOptions) {
    this.#clock = components.clock;
    this.#rate = options.perSecond;
    this.#burst = Math.max(1, options.burst);
    this.#max = options.maxClients ?? 100_000;
  }

  get enabled(): boolean {
    return this.#rate > 0;
  }

  /** Take one token for `client`; false when it is over its rate. `now`: the clock, if read. */
  take(client: string, now = this.#clock.now()): boolean {
    if (this.#rate <= 0) return true;
    let b = this.#buckets.get(client);
    if (!b) {
      if (this.#buckets.size >= this.#max) this.#prune(now);
      b = { tokens: this.#burst, at: now };
      this.#buckets.set(client, b);
    } else if (now > b.at) {
      b.tokens = Math.min(this.#burst, b.tokens + ((now - b.at) / 1000) * this.#rate);
      b.at = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Seconds until `client` has a token again. */
  retryAfter(client: string): number {
    const b = this.#buckets.get(client);
    if (!b || this.#rate <= 0) return 0;
    return Math.max(1, Math.ceil((1 - b.tokens) / this.#rate));
  }

  #prune(now: number): void {
    for (const [k, b] of this.#buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.#rate >= this.#burst) this.#buckets.delete(k);
    }
    if (this.#buckets.size >= this.#max) this.#buckets.clear();
  }
}
