/**
 * Smoothed RTT per peer (RFC 6298's SRTT / RTTVAR), giving each peer its own retransmission
 * timeout. Bounded: beyond the bound the peer first sampled is forgotten (its next request waits
 * the default timeout and starts a new estimate). Peers keep their place in the map when sampled
 * again: moving each to the end on every sample left an insertion-ordered map's table two to four
 * times its entries (deleted slots wait for a rehash).
 *
 * The estimates live in typed arrays, one slot per peer (the map holds the slot number): a node
 * keeps one for each of up to thousands of peers, and an object per peer with three floating-point
 * fields costs the heap about three times the 28 bytes of numbers it holds.
 */
import { resized } from '../typed-arrays.js';
export interface RttEstimate {
  srtt: number;
  rttvar: number;
  samples: number;
  last: number;
}

/** Slots the arrays start with (they grow by doubling up to the table's bound). */
const INITIAL_SLOTS = 16;

export class RttTable {
  /** peer → slot, first sampled first. */
  #peers = new Map<string, number>();
  #max: number;
  /** Per slot: srtt, rttvar, last sample. */
  #f = new Float64Array(3 * INITIAL_SLOTS);
  #samples = new Uint32Array(INITIAL_SLOTS);
  /** Slots handed out so far (freed ones are reused before new ones). */
  #used = 0;
  #free: number[] = [];

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#peers.size;
  }

  sample(peer: string, rttMs: number): void {
    const f = this.#f;
    let s = this.#peers.get(peer);
    if (s !== undefined) {
      const i = 3 * s;
      f[i + 1] = 0.75 * f[i + 1]! + 0.25 * Math.abs(f[i]! - rttMs);
      f[i] = 0.875 * f[i]! + 0.125 * rttMs;
      f[i + 2] = rttMs;
      this.#samples[s]!++;
    } else {
      if (this.#peers.size >= this.#max) {
        const oldest = this.#peers.keys().next().value;
        if (oldest !== undefined) {
          this.#free.push(this.#peers.get(oldest)!);
          this.#peers.delete(oldest);
        }
      }
      s = this.#slot();
      const i = 3 * s;
      this.#f[i] = rttMs;
      this.#f[i + 1] = rttMs / 2;
      this.#f[i + 2] = rttMs;
      this.#samples[s] = 1;
      this.#peers.set(peer, s);
    }
  }

  get(peer: string): RttEstimate | undefined {
    const s = this.#peers.get(peer);
    return s === undefined ? undefined : this.#estimate(s);
  }

  /** Retransmission timeout for a peer: srtt + 4·rttvar within bounds, `fallback` when unknown. */
  timeout(peer: string, fallback: number, min: number, max: number): number {
    const s = this.#peers.get(peer);
    if (s === undefined) return fallback;
    const f = this.#f;
    return Math.min(max, Math.max(min, f[3 * s]! + 4 * f[3 * s + 1]!));
  }

  /** Every peer and its estimate (a copy), first sampled first. */
  *entries(): IterableIterator<[string, RttEstimate]> {
    for (const [peer, s] of this.#peers) yield [peer, this.#estimate(s)];
  }

  #estimate(s: number): RttEstimate {
    const f = this.#f;
    return {
      srtt: f[3 * s]!,
      rttvar: f[3 * s + 1]!,
      samples: this.#samples[s]!,
      last: f[3 * s + 2]!,
    };
  }

  #slot(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    const s = this.#used++;
    if (s >= this.#samples.length) {
      const n = Math.min(2 * this.#samples.length, Math.max(this.#max, s + 1));
      this.#f = resized(this.#f, 3 * n);
      this.#samples = resized(this.#samples, n);
    }
    return s;
  }
}
