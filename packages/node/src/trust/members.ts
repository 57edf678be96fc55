/**
 * The DSHT's verified membership as the proxy's `FleetMembers`: a holder is reached only when its
 * node id is a verified live member of the DSHT (keyed mode: it authenticated with the fleet key;
 * open mode: it completed a round trip, within `maxIdsPerIp`), and then at the address it was
 * verified at and the HTTP port it advertised — never at an address taken from a holder record.
 */
import type { FleetMembers } from '@coral/httpprx';

/** What this adapter reads from the DSHT (`Dsht.member`). */
export interface MemberSource {
  member(idHex: string): { ip: string; httpPort?: number } | undefined;
}

export class DshtFleetMembers implements FleetMembers {
  readonly recordsAuthenticated: boolean;
  readonly #dsht: MemberSource;

  /** `keyed`: holder records were stored by authenticated members, so size and sha256 are trusted. */
  constructor(dsht: MemberSource, keyed: boolean) {
    this.#dsht = dsht;
    this.recordsAuthenticated = keyed;
  }

  member(nodeId: string): { ip: string; httpPort: number } | undefined {
    const m = this.#dsht.member(nodeId);
    return m?.httpPort ? { ip: m.ip, httpPort: m.httpPort } : undefined;
  }
}
