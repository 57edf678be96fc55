/**
 * A robust per-peer round-trip-time estimator: the median of the last N samples.
 *
 * The median ignores the occasional queueing spike or retransmitted round trip that would drag
 * a mean (or an EWMA such as TCP's srtt) away from the path's real latency, which is what the
 * clustering decisions need. Samples older than `maxAgeMs` are aged out, so an estimate always
 * reflects the path as it is now; a peer whose samples have all aged out has no estimate. Pure:
 * time comes from the injected clock, nothing is scheduled.
 */
import type { Clock } from '@coral/runtime';
import { ClusterError, ERR_BAD_RTT, ERR_CLUSTER_OPTIONS } from './errors.js';

/** Samples kept per peer; the estimate is their median. */
export const RTT_WINDOW = 7;
/** Samples older than this are ignored and dropped (ms). */
export const RTT_MAX_AGE_MS = 30 * 60_000;
/** Peers tracked at most; the one sampled least recently is dropped first. */
export const RTT_MAX_PEERS = 4_096;

export interface RttEstimatorOptions {
  /** Samples kept per peer (default {@link RTT_WINDOW}). */
  window?: number;
  /** Age after which a sample is dropped, in ms (default {@link RTT_MAX_AGE_MS}). */
  maxAgeMs?: number;
  /** Peers tracked at most (default {@link RTT_MAX_PEERS}). */
  maxPeers?: number;
}

export interface RttEstimatorComponents {
  clock: Clock;
}

/** One peer's estimate, as shown by `snapshot()`. */
export interface RttEstimate {
  peerId: string;
  /** Median of the live samples (ms). */
  medianMs: number;
  /** Live samples behind the median. */
  samples: number;
  /** Clock time of the newest sample. */
  lastAt: number;
}

interface Samples {
  /** Sample values and times, oldest first. */
  values: number[];
  ats: number[];
  /** Median of all of `values`, computed on demand (undefined = stale). */
  median?: number | undefined;
}

export class RttEstimator {
  readonly window: number;
  readonly maxAgeMs: number;
  readonly maxPeers: number;
  readonly #clock: Clock;
  /** Insertion order = least recently sampled first (a sample re-inserts its peer). */
  readonly #peers = new Map<string, Samples>();

  constructor(components: RttEstimatorComponents, options: RttEstimatorOptions = {}) {
    this.#clock = components.clock;
    this.window = options.window ?? RTT_WINDOW;
    this.maxAgeMs = options.maxAgeMs ?? RTT_MAX_AGE_MS;
    this.maxPeers = options.maxPeers ?? RTT_MAX_PEERS;
    if (!Number.isInteger(this.window) || this.window < 1) {
      throw new ClusterError(
        ERR_CLUSTER_OPTIONS,
        `RTT window must be an integer ≥ 1, got ${this.window}`,
      );
    }
    if (!(this.maxAgeMs > 0)) {
      throw new ClusterError(ERR_CLUSTER_OPTIONS, `RTT maxAgeMs must be > 0, got ${this.maxAgeMs}`);
    }
    if (!Number.isInteger(this.maxPeers) || this.maxPeers < 1) {
      throw new ClusterError(
        ERR_CLUSTER_OPTIONS,
        `RTT maxPeers must be an integer ≥ 1, got ${this.maxPeers}`,
      );
    }
  }

  /** Record one round trip to `peerId`. Throws `DSHT_ERR_BAD_RTT` on a negative or non-finite value. */
  add(peerId: string, rttMs: number): void {
    if (typeof peerId !== 'string' || peerId.length === 0) {
      throw new ClusterError(ERR_BAD_RTT, 'RTT sample needs a non-empty peer id');
    }
    if (typeof rttMs !== 'number' || !Number.isFinite(rttMs) || rttMs < 0) {
      throw new ClusterError(
        ERR_BAD_RTT,
        `RTT sample for ${peerId} must be a finite number ≥ 0, got ${String(rttMs)}`,
      );
    }
    const now = this.#clock.now();
    let s = this.#peers.get(peerId);
    if (s) {
      this.#peers.delete(peerId);
    } else {
      s = { values: [], ats: [] };
    }
    s.values.push(rttMs);
    s.ats.push(now);
    s.median = undefined;
    if (s.values.length > this.window) {
      s.values.shift();
      s.ats.shift();
    }
    this.#peers.set(peerId, s);
    while (this.#peers.size > this.maxPeers) {
      const oldest = this.#peers.keys().next().value as string;
      this.#peers.delete(oldest);
    }
  }

  /** Median of the live samples, or undefined when there are none (or fewer than `minSamples`). */
  median(peerId: string, minSamples = 1): number | undefined {
    const s = this.#peers.get(peerId);
    if (!s) return undefined;
    if (s.ats[0]! >= this.#clock.now() - this.maxAgeMs) {
      // Fast path: nothing aged out, the cached median (if any) is still the median.
      if (s.values.length < minSamples) return undefined;
      return (s.median ??= medianOf(s.values));
    }
    const live = this.#live(peerId);
    if (live.length === 0 || live.length < minSamples) return undefined;
    return medianOf(live);
  }

  /**
   * Smallest live sample, or undefined. Delay only ever adds to a path's latency, so the minimum is
   * a lower bound of the path's RTT even from a single sample: one sample far above a threshold is
   * enough to know the peer is not under it.
   */
  minimum(peerId: string): number | undefined {
    const live = this.#live(peerId);
    return live.length === 0 ? undefined : Math.min(...live);
  }

  /** Number of live (not aged-out) samples for `peerId`. */
  sampleCount(peerId: string): number {
    const s = this.#peers.get(peerId);
    if (!s) return 0;
    const cutoff = this.#clock.now() - this.maxAgeMs;
    let i = 0;
    while (i < s.ats.length && s.ats[i]! < cutoff) i++;
    return s.ats.length - i;
  }

  /** Clock time of the newest live sample, or undefined. */
  lastSampleAt(peerId: string): number | undefined {
    const s = this.#peers.get(peerId);
    if (!s) return undefined;
    const at = s.ats[s.ats.length - 1];
    return at !== undefined && this.#clock.now() - at <= this.maxAgeMs ? at : undefined;
  }

  /** Drop everything known about `peerId`. */
  forget(peerId: string): void {
    this.#peers.delete(peerId);
  }

  /** Drop aged-out samples and peers left without samples; returns how many peers were dropped. */
  prune(): number {
    const cutoff = this.#clock.now() - this.maxAgeMs;
    let dropped = 0;
    for (const [peerId, s] of this.#peers) {
      let i = 0;
      while (i < s.ats.length && s.ats[i]! < cutoff) i++;
      if (i > 0) {
        s.values.splice(0, i);
        s.ats.splice(0, i);
        s.median = undefined;
      }
      if (s.values.length === 0) {
        this.#peers.delete(peerId);
        dropped++;
      }
    }
    return dropped;
  }

  /** Peers with at least one live sample. */
  peers(): string[] {
    return [...this.#peers.keys()].filter((p) => this.#live(p).length > 0);
  }

  get size(): number {
    return this.#peers.size;
  }

  /** Every live estimate, for admin pages and tests. */
  snapshot(): RttEstimate[] {
    const out: RttEstimate[] = [];
    for (const peerId of this.#peers.keys()) {
      const live = this.#live(peerId);
      if (live.length === 0) continue;
      out.push({
        peerId,
        medianMs: medianOf(live),
        samples: live.length,
        lastAt: this.lastSampleAt(peerId)!,
      });
    }
    return out;
  }

  #live(peerId: string): number[] {
    const s = this.#peers.get(peerId);
    if (!s) return [];
    const cutoff = this.#clock.now() - this.maxAgeMs;
    const out: number[] = [];
    for (let i = 0; i < s.values.length; i++) if (s.ats[i]! >= cutoff) out.push(s.values[i]!);
    return out;
  }
}

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function medianOf(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of an empty list');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
