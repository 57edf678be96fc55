/**
 * Replay protection for authenticated messages that carry a sender timestamp and a random nonce:
 * a message is fresh when its timestamp is within `windowMs` of this clock (either side: clocks
 * drift) and its nonce has not been seen. Check a message only after its MAC verified, or a
 * forger could fill the memory.
 *
 * Memory is bounded. Nonces are remembered until their timestamp leaves the window; when more
 * than `maxNonces` are held, the oldest remembered ones are forgotten and the guard raises a
 * *floor*: from then on a timestamp at or below the newest forgotten one is refused as stale.
 * A forgotten nonce can therefore never be replayed — under a flood the effective window just
 * shrinks (WireGuard's and IPsec's sliding windows make the same trade).
 */
import { systemClock, type Clock } from '@coral/testkit';
import { KEYRING_ERR_INVALID_ARGUMENT, KeyringError } from './errors.js';

/** Accepted distance between a message's timestamp and this clock, either way. */
export const REPLAY_WINDOW_MS = 60_000;
/** Nonces remembered at most. */
export const REPLAY_MAX_NONCES = 65_536;

export type ReplayVerdict = 'ok' | 'stale' | 'replayed';

export interface ReplayGuardComponents {
  clock?: Clock;
}

export interface ReplayGuardOptions {
  /** Default {@link REPLAY_WINDOW_MS} (60 s). */
  windowMs?: number;
  /** Default {@link REPLAY_MAX_NONCES} (65,536). */
  maxNonces?: number;
}

export class ReplayGuard {
  readonly windowMs: number;
  readonly maxNonces: number;
  #clock: Clock;
  /** nonce → timestamp, in insertion order. */
  #seen = new Map<string, number>();
  #floor = -Infinity;
  #inserts = 0;

  constructor(components: ReplayGuardComponents = {}, options: ReplayGuardOptions = {}) {
    this.#clock = components.clock ?? systemClock;
    this.windowMs = options.windowMs ?? REPLAY_WINDOW_MS;
    this.maxNonces = options.maxNonces ?? REPLAY_MAX_NONCES;
    if (!(this.windowMs > 0) || !Number.isInteger(this.maxNonces) || this.maxNonces < 1) {
      throw new KeyringError(
        KEYRING_ERR_INVALID_ARGUMENT,
        'ReplayGuard: windowMs must be > 0 and maxNonces an integer ≥ 1',
      );
    }
  }

  /** Nonces remembered now. */
  get size(): number {
    return this.#seen.size;
  }

  /** Timestamps at or below this are refused (raised when the memory overflows). */
  get floor(): number {
    return this.#floor;
  }

  /**
   * Judge a message and, when it is fresh, remember its nonce. `nonce` is any string or bytes
   * (bytes are keyed by their latin1 string, no copy of the buffer is kept).
   */
  check(timestampMs: number, nonce: string | Uint8Array): ReplayVerdict {
    const now = this.#clock.now();
    if (
      !Number.isFinite(timestampMs) ||
      timestampMs <= this.#floor ||
      Math.abs(timestampMs - now) > this.windowMs
    ) {
      return 'stale';
    }
    const key = typeof nonce === 'string' ? nonce : Buffer.from(nonce).toString('latin1');
    if (this.#seen.has(key)) return 'replayed';
    this.#seen.set(key, timestampMs);
    if (this.#seen.size > this.maxNonces) this.#prune(now);
    else if ((++this.#inserts & 63) === 0) this.#expireHead(now);
    return 'ok';
  }

  /** Every 64 inserts: forget up to 128 oldest-inserted nonces that left the window (keeps memory low). */
  #expireHead(now: number): void {
    const oldest = now - this.windowMs;
    let n = 0;
    for (const [k, ts] of this.#seen) {
      if (n++ >= 128 || ts >= oldest) break;
      this.#seen.delete(k);
    }
  }

  /** Forget the oldest-inserted nonces until within bounds, raising the floor over any still in the window. */
  #prune(now: number): void {
    const oldest = now - this.windowMs;
    for (const [k, ts] of this.#seen) {
      if (this.#seen.size <= this.maxNonces) break;
      this.#seen.delete(k);
      // A nonce still inside the window may only be forgotten behind a floor that refuses it.
      if (ts >= oldest && ts > this.#floor) this.#floor = ts;
    }
  }
}
