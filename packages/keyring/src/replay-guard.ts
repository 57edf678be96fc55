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
 *
 * Nonces of exactly 8 bytes (the DSHT's datagrams) are held in a `NonceRing` — typed arrays, no
 * object or string per nonce; any other nonce (a string, other lengths) in a `Map`. The bound and
 * the floor cover both together.
 */
import { systemClock, type Clock } from '@coral/runtime';
import { NonceRing } from './nonce-ring.js';
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
  /** Other nonces: nonce → timestamp, in insertion order. */
  #seen = new Map<string, number>();
  /** 8-byte nonces, in insertion order (made on first use). */
  #ring: NonceRing | undefined;
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
    return this.#seen.size + (this.#ring?.size ?? 0);
  }

  /** Timestamps at or below this are refused (raised when the memory overflows). */
  get floor(): number {
    return this.#floor;
  }

  /**
   * Judge a message and, when it is fresh, remember its nonce. `nonce` is any string or bytes;
   * no reference to the bytes is kept (8 bytes are copied into the ring, others keyed by their
   * latin1 string).
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
    if (typeof nonce !== 'string' && nonce.length === 8) {
      const hi = ((nonce[0]! << 24) | (nonce[1]! << 16) | (nonce[2]! << 8) | nonce[3]!) >>> 0;
      const lo = ((nonce[4]! << 24) | (nonce[5]! << 16) | (nonce[6]! << 8) | nonce[7]!) >>> 0;
      const ring = (this.#ring ??= new NonceRing());
      if (ring.has(hi, lo)) return 'replayed';
      if (this.size >= this.maxNonces) this.#forgetOne(now, ring.size > 0);
      ring.add(hi, lo, timestampMs);
    } else {
      const key = typeof nonce === 'string' ? nonce : Buffer.from(nonce).toString('latin1');
      if (this.#seen.has(key)) return 'replayed';
      if (this.size >= this.maxNonces) this.#forgetOne(now, this.#seen.size === 0);
      this.#seen.set(key, timestampMs);
    }
    if ((++this.#inserts & 63) === 0) this.#expireHead(now);
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
    const ring = this.#ring;
    if (!ring) return;
    for (let i = 0; i < 128; i++) {
      const ts = ring.oldestTs();
      if (ts === undefined || ts >= oldest) break;
      ring.removeOldest();
    }
  }

  /**
   * At the bound: forget the oldest-inserted nonce (of the ring or of the map), raising the floor
   * over it when it is still in the window — a nonce may only be forgotten behind a floor that
   * refuses it.
   */
  #forgetOne(now: number, fromRing: boolean): void {
    let ts: number | undefined;
    if (fromRing) ts = this.#ring!.removeOldest();
    else {
      const first = this.#seen.entries().next();
      if (first.done) return;
      this.#seen.delete(first.value[0]);
      ts = first.value[1];
    }
    if (ts !== undefined && ts >= now - this.windowMs && ts > this.#floor) this.#floor = ts;
  }
}
