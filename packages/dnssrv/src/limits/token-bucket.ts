/**
 * A token bucket on an injected clock: `take()` succeeds at most `burst` times at once and
 * `ratePerSecond` times a second on average. The global bounds on background work started by
 * queries (hint walks, resolver probes) use it, so no flood of queries can start that work faster.
 */
import type { Clock } from '@coral/runtime';

export class TokenBucket {
  readonly #clock: Clock;
  readonly #rate: number;
  readonly #burst: number;
  #tokens: number;
  #at: number;

  /** `ratePerSecond` ≤ 0 means "never": every take() fails. `burst` defaults to one second's worth. */
  constructor(clock: Clock, ratePerSecond: number, burst = ratePerSecond) {
    this.#clock = clock;
    this.#rate = Math.max(0, ratePerSecond);
    this.#burst = Math.max(this.#rate > 0 ? 1 : 0, burst);
    this.#tokens = this.#burst;
    this.#at = clock.now();
  }

  /** Take one token if there is one. */
  take(): boolean {
    const now = this.#clock.now();
    if (now > this.#at) {
      this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#at) / 1000) * this.#rate);
      this.#at = now;
    }
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
