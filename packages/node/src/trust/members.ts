/**
 * The DSHT's verified membership as the proxy's `FleetMembers`: a holder is reached only when its
 * node id is a verified live member of the DSHT (keyed mode: it authenticated with the fleet key;
 * open mode: it completed a round trip, within `maxIdsPerIp`), and then at the address it was
 * verified at and the HTTP port it advertised — never at an address taken from a holder record.
 * `live()` lists the same members for the choice of a designated fetcher; a member is `near` when
 * it is in this node's most specific cluster (the routing table of its highest level; with one
 * level every member is near).
 *
 * The fetcher choice holds a member declared dead for a moment (`holdMs`, as route-flap damping
 * does): every node computes the designated fetcher from its own view, and a member falsely
 * declared dead (an overloaded machine answers probes late; it refutes as soon as it hears) would
 * otherwise have its objects fetched by another member while the death lasts. The hold starts
 * from the death itself, which failure detection spreads to every member within a gossip round,
 * so the members' views stay alike; a member that comes back or leaves (LEAVE) ends it at once.
 * An ask to a held member gets the short peer patience (it is dead by failure detection): one
 * that is really gone costs the asker a refused connection or that patience once, after which
 * the proxy's penalty skips it. `member()` (holders, peer lists) and DNS answers drop a dead
 * member at once as before.
 *
 * `generation()` counts each member's returns ('member-alive': back with a higher incarnation
 * after it was declared dead or left, as a restarted member is): the proxy forgives a member that
 * failed a request while it went away as soon as it is back (httpprx peer/penalties.ts).
 */
import type { FleetMembers, LiveMember } from '@coral/httpprx';
import type { Clock } from '@coral/runtime';

/** How long the fetcher choice keeps a member after failure detection declared it dead (ms). */
export const DESIGNATED_HOLD_MS = 5_000;
/** Members whose returns are counted (the oldest counted is forgotten first). */
export const GENERATIONS_MAX = 4_096;

/** A member change as the DSHT reports it (`Dsht` 'member-dead' / 'member-alive' / 'member-left'). */
export interface MemberEvent {
  id: string;
  ip: string;
  httpPort?: number;
}

/** What this adapter reads from the DSHT (`Dsht.member`, `members`, `routes`, `levels`, events). */
export interface MemberSource {
  member(idHex: string): { ip: string; httpPort?: number } | undefined;
  members(): { id: string; ip: string; httpPort?: number }[];
  routes(level: number): { id: Uint8Array }[];
  readonly levels: number;
  on?(
    event: 'member-dead' | 'member-alive' | 'member-left',
    listener: (change: MemberEvent) => void,
  ): unknown;
}

export interface FleetMembersOptions {
  /** `false` leaves out `live()`: misses go to the index and its claims. */
  designated?: boolean;
  /** Default {@link DESIGNATED_HOLD_MS}; 0 turns the hold off. */
  holdMs?: number;
  /** Needed for the hold; without it the choice sees the live members as they are. */
  clock?: Clock;
}

export class DshtFleetMembers implements FleetMembers {
  readonly recordsAuthenticated: boolean;
  readonly #dsht: MemberSource;
  readonly #clock: Clock | undefined;
  readonly #holdMs: number;
  /** Members declared dead within the hold: node id → the member and when the hold ends. */
  readonly #held = new Map<string, { member: LiveMember; until: number }>();
  /** With levels above 0: whether each member was near when last listed live. */
  readonly #near = new Map<string, boolean>();
  /** Returns seen per member (`generation`). */
  readonly #generations = new Map<string, number>();

  /** `keyed`: holder records were stored by authenticated members, so size and sha256 are trusted. */
  constructor(dsht: MemberSource, keyed: boolean, options: FleetMembersOptions = {}) {
    this.#dsht = dsht;
    this.recordsAuthenticated = keyed;
    this.#clock = options.clock;
    this.#holdMs = options.clock ? (options.holdMs ?? DESIGNATED_HOLD_MS) : 0;
    dsht.on?.('member-alive', (m) => this.#returned(m.id));
    if (options.designated === false) {
      this.live = undefined;
      return;
    }
    if (this.#holdMs > 0) {
      dsht.on?.('member-dead', (m) => this.#hold(m));
      dsht.on?.('member-alive', (m) => this.#held.delete(m.id));
      dsht.on?.('member-left', (m) => {
        this.#held.delete(m.id);
        this.#near.delete(m.id);
      });
    }
  }

  generation(nodeId: string): number {
    return this.#generations.get(nodeId.toLowerCase()) ?? 0;
  }

  #returned(id: string): void {
    const key = id.toLowerCase();
    const n = (this.#generations.get(key) ?? 0) + 1;
    this.#generations.delete(key);
    if (this.#generations.size >= GENERATIONS_MAX) {
      this.#generations.delete(this.#generations.keys().next().value!);
    }
    this.#generations.set(key, n);
  }

  member(nodeId: string): { ip: string; httpPort: number } | undefined {
    const m = this.#dsht.member(nodeId);
    return m?.httpPort ? { ip: m.ip, httpPort: m.httpPort } : undefined;
  }

  live?: () => LiveMember[] = () => {
    const live = this.#live();
    if (this.#held.size === 0) return live;
    const now = this.#clock!.now();
    for (const [id, h] of this.#held) {
      if (h.until <= now) this.#held.delete(id);
      else if (!live.some((m) => m.nodeId === id)) live.push(h.member);
    }
    return live;
  };

  #live(): LiveMember[] {
    const dsht = this.#dsht;
    const near =
      dsht.levels > 1
        ? new Set(dsht.routes(dsht.levels - 1).map((c) => Buffer.from(c.id).toString('hex')))
        : undefined;
    const out: LiveMember[] = [];
    for (const m of dsht.members()) {
      if (!m.httpPort) continue;
      const isNear = near?.has(m.id) ?? true;
      if (near) this.#near.set(m.id, isNear);
      out.push({ nodeId: m.id, ip: m.ip, httpPort: m.httpPort, near: isNear });
    }
    return out;
  }

  #hold(m: MemberEvent): void {
    if (!m.httpPort) return;
    const near = this.#dsht.levels > 1 ? (this.#near.get(m.id) ?? false) : true;
    this.#held.set(m.id, {
      member: { nodeId: m.id, ip: m.ip, httpPort: m.httpPort, near },
      until: this.#clock!.now() + this.#holdMs,
    });
  }
}
