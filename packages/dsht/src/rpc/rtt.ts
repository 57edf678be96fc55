/**
 * Smoothed RTT per peer (RFC 6298's SRTT / RTTVAR), giving each peer its own retransmission
 * timeout. Bounded: the least recently used peers are forgotten.
 */
export interface RttEstimate {
  srtt: number;
  rttvar: number;
  samples: number;
  last: number;
}

export class RttTable {
  #peers = new Map<string, RttEstimate>();
  #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#peers.size;
  }

  sample(peer: string, rttMs: number): RttEstimate {
    let e = this.#peers.get(peer);
    if (e) {
      this.#peers.delete(peer);
      e.rttvar = 0.75 * e.rttvar + 0.25 * Math.abs(e.srtt - rttMs);
      e.srtt = 0.875 * e.srtt + 0.125 * rttMs;
      e.samples++;
      e.last = rttMs;
    } else {
      e = { srtt: rttMs, rttvar: rttMs / 2, samples: 1, last: rttMs };
      if (this.#peers.size >= this.#max) {
        const oldest = this.#peers.keys().next().value;
        if (oldest !== undefined) this.#peers.delete(oldest);
      }
    }
    this.#peers.set(peer, e);
    return e;
  }

  get(peer: string): RttEstimate | undefined {
    return this.#peers.get(peer);
  }

  /** Retransmission timeout for a peer: srtt + 4·rttvar within bounds, `fallback` when unknown. */
  timeout(peer: string, fallback: number, min: number, max: number): number {
    const e = this.#peers.get(peer);
    if (!e) return fallback;
    return Math.min(max, Math.max(min, e.srtt + 4 * e.rttvar));
  }

  entries(): IterableIterator<[string, RttEstimate]> {
    return this.#peers.entries();
  }
}
