/**
 * The DSHT's verified membership as the proxy's `FleetMembers`: a holder is reached only when its
 * node id is a verified live member of the DSHT (keyed mode: it authenticated with the fleet key;
 * open mode: it completed a round trip, within `maxIdsPerIp`), and then at the address it was
 * verified at and the HTTP port it advertised — never at an address taken from a holder record.
 * `live()` lists the same members for the choice of a designated fetcher; a member is `near` when
 * it is in this node's most specific cluster (the routing table of its highest level; with one
 * level every member is near).
 */
import type { FleetMembers, LiveMember } from '@coral/httpprx';

/** What this adapter reads from the DSHT (`Dsht.member`, `members`, `routes`, `levels`). */
export interface MemberSource {
  member(idHex: string): { ip: string; httpPort?: number } | undefined;
  members(): { id: string; ip: string; httpPort?: number }[];
  routes(level: number): { id: Uint8Array }[];
  readonly levels: number;
}

export class DshtFleetMembers implements FleetMembers {
  readonly recordsAuthenticated: boolean;
  readonly #dsht: MemberSource;

  /**
   * `keyed`: holder records were stored by authenticated members, so size and sha256 are trusted.
   * `designated: false` leaves out `live()`: misses go to the index and its claims.
   */
  constructor(dsht: MemberSource, keyed: boolean, options: { designated?: boolean } = {}) {
    this.#dsht = dsht;
    this.recordsAuthenticated = keyed;
    if (options.designated === false) this.live = undefined;
  }

  member(nodeId: string): { ip: string; httpPort: number } | undefined {
    const m = this.#dsht.member(nodeId);
    return m?.httpPort ? { ip: m.ip, httpPort: m.httpPort } : undefined;
  }

  live?: () => LiveMember[] = () => this.#live();

  #live(): LiveMember[] {
    const dsht = this.#dsht;
    const near =
      dsht.levels > 1
        ? new Set(dsht.routes(dsht.levels - 1).map((c) => Buffer.from(c.id).toString('hex')))
        : undefined;
    const out: LiveMember[] = [];
    for (const m of dsht.members()) {
      if (!m.httpPort) continue;
      out.push({ nodeId: m.id, ip: m.ip, httpPort: m.httpPort, near: near?.has(m.id) ?? true });
    }
    return out;
  }
}
