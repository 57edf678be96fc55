/**
 * Members whose last transfer to us failed or did not match its announcement are skipped for a
 * while (`PEER_PENALTY_MS`), so the next request goes to another holder or the origin instead of
 * to the same fault. Bounded; on the injected clock.
 *
 * A member that was merely unreachable (no answer, a refused or reset connection, a body cut
 * short or stalled: what a member shutting down or restarting does to a request in flight) is
 * forgiven when the membership sees it come back (`FleetMembers.generation` grew: a new life, or
 * a return after it was declared dead or left): without that, a restarted member was skipped for
 * a minute after it was back and live, and its objects fetched from the origin a second time. A
 * member forgiven once is not forgiven again for `PEER_PENALTY_LIFT_WINDOW_MS`: one that flaps (or
 * restarts on purpose) serves every later penalty in that window whole. A penalty for wrong
 * bytes, a wrong size or hash (`integrity`) is never lifted by a return: a restart does not make
 * a liar honest.
 */
import type { Clock } from '@coral/runtime';

/** Why a member is skipped: it did not answer (`unreachable`) or its answer was wrong (`integrity`). */
export type PenaltyCause = 'unreachable' | 'integrity';

interface Penalty {
  until: number;
  cause: PenaltyCause;
  /** The member's generation when it was penalized (undefined: the membership counts none). */
  generation: number | undefined;
}

export interface PeerPenaltiesComponents {
  clock: Clock;
  /** The member's generation (`FleetMembers.generation`): a return lifts an `unreachable` penalty. */
  generation?: (nodeId: string) => number | undefined;
}

export interface PeerPenaltiesOptions {
  penaltyMs: number;
  /** After a lift, no other lift for this long (ms). */
  liftWindowMs?: number;
  /** Members remembered (penalties, and the time of their last lift). Default 1024. */
  maxPeers?: number;
}

export class PeerPenalties {
  readonly #clock: Clock;
  readonly #generation: PeerPenaltiesComponents['generation'];
  readonly #ms: number;
  readonly #liftWindowMs: number;
  readonly #max: number;
  readonly #penalties = new Map<string, Penalty>();
  /** When each member was last forgiven by a return. */
  readonly #lifted = new Map<string, number>();

  constructor(components: PeerPenaltiesComponents, options: PeerPenaltiesOptions) {
    this.#clock = components.clock;
    this.#generation = components.generation;
    this.#ms = options.penaltyMs;
    this.#liftWindowMs = options.liftWindowMs ?? 0;
    this.#max = options.maxPeers ?? 1024;
  }

  penalize(nodeId: string, cause: PenaltyCause = 'unreachable'): void {
    if (this.#ms <= 0) return;
    const id = nodeId.toLowerCase();
    const now = this.#clock.now();
    if (this.#penalties.size >= this.#max && !this.#penalties.has(id)) {
      for (const [k, p] of this.#penalties) if (p.until <= now) this.#penalties.delete(k);
      if (this.#penalties.size >= this.#max) {
        this.#penalties.delete(this.#penalties.keys().next().value!);
      }
    }
    const before = this.#penalties.get(id);
    this.#penalties.set(id, {
      until: now + this.#ms,
      // A member penalized for a lie stays penalized for a lie until its penalty ends.
      cause: before && before.until > now && before.cause === 'integrity' ? 'integrity' : cause,
      generation: this.#generation?.(id),
    });
  }

  penalized(nodeId: string): boolean {
    const id = nodeId.toLowerCase();
    const p = this.#penalties.get(id);
    if (p === undefined) return false;
    const now = this.#clock.now();
    if (p.until <= now) {
      this.#penalties.delete(id);
      return false;
    }
    if (p.cause === 'unreachable' && this.#returned(id, p, now)) {
      this.#penalties.delete(id);
      this.#lifted.delete(id);
      if (this.#lifted.size >= this.#max) this.#lifted.delete(this.#lifted.keys().next().value!);
      this.#lifted.set(id, now);
      return false;
    }
    return true;
  }

  /** Did the member come back since its penalty, and may it be forgiven for that now? */
  #returned(id: string, p: Penalty, now: number): boolean {
    if (p.generation === undefined) return false;
    const g = this.#generation?.(id);
    if (g === undefined || g <= p.generation) return false;
    const last = this.#lifted.get(id);
    return last === undefined || now - last >= this.#liftWindowMs;
  }
}
