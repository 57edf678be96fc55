/**
 * Members whose last transfer to us failed mid-body or did not match its announcement are skipped
 * for a while (`PEER_PENALTY_MS`), so the next request goes to another holder or the origin
 * instead of to the same fault. Bounded; on the injected clock.
 */
import type { Clock } from '@coral/runtime';

export class PeerPenalties {
  readonly #clock: Clock;
  readonly #ms: number;
  readonly #max: number;
  readonly #until = new Map<string, number>();

  constructor(components: { clock: Clock }, options: { penaltyMs: number; maxPeers?: number }) {
    this.#clock = components.clock;
    this.#ms = options.penaltyMs;
    this.#max = options.maxPeers ?? 1024;
  }

  penalize(nodeId: string): void {
    if (this.#ms <= 0) return;
    if (this.#until.size >= this.#max) {
      const now = this.#clock.now();
      for (const [k, t] of this.#until) if (t <= now) this.#until.delete(k);
      if (this.#until.size >= this.#max) this.#until.delete(this.#until.keys().next().value!);
    }
    this.#until.set(nodeId.toLowerCase(), this.#clock.now() + this.#ms);
  }

  penalized(nodeId: string): boolean {
    const t = this.#until.get(nodeId.toLowerCase());
    if (t === undefined) return false;
    if (t > this.#clock.now()) return true;
    this.#until.delete(nodeId.toLowerCase());
    return false;
  }
}
