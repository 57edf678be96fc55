/**
 * Which holders a peer fetch may go to. A holder record comes from the index, where anyone who
 * can write a value could have put it: its `ip` and `httpPort` are never used. A holder is
 * reached only when its `nodeId` is a verified, live member of the fleet, and then at the address
 * the member was verified at (`FleetMembers.member`). The node package implements
 * `FleetMembers` over the DSHT's membership; tests use `InMemoryFleetMembers`.
 */
import type { Holder } from '../content-index.js';

export interface FleetMembers {
  /** The verified live member with this hex id: its proxy's address as verified, or undefined. */
  member(nodeId: string): { ip: string; httpPort: number } | undefined;
  /** True in keyed mode: holder records are authenticated, so their size and sha256 are trusted. */
  readonly recordsAuthenticated: boolean;
  /**
   * Every verified live member but this node, for the choice of a designated fetcher
   * (./rendezvous.ts); `near`: in this node's own (most specific) cluster. Without it, misses go
   * to the index and its claims. It may keep a member declared dead a moment longer (a death
   * that may be false must not move the choice); `member()` no longer lists such a member, and
   * an ask to it gets the short peer patience.
   */
  live?(): readonly LiveMember[];
  /**
   * How many times this member came back as this node saw it: a new life (a restart), or a
   * return after failure detection declared it dead or it left. It only grows; 0 for a member
   * never seen back. A member that failed a request and then came back is asked again at once
   * (../peer/penalties.ts). Absent: penalties run their whole time.
   */
  generation?(nodeId: string): number;
}

/** A verified live member as the rendezvous choice sees it. */
export interface LiveMember {
  /** Hex node id (40 digits, lowercase). */
  nodeId: string;
  ip: string;
  httpPort: number;
  /** In this node's own cluster (the most specific level it runs). */
  near: boolean;
}

/** A holder that may be asked: its record, and the member address it is reached at. */
export interface PeerTarget {
  holder: Holder;
  ip: string;
  httpPort: number;
}

export interface HolderChoice {
  /** Members to ask, in the index's order (nearest first), one per node and address. */
  targets: PeerTarget[];
  /** Holder records naming a node that is not a verified live member (skipped, never contacted). */
  notMembers: number;
}

/**
 * Map holder records to member addresses. Drops this node (by id or by its own address),
 * repeated nodes and addresses, and counts records whose node is not a member.
 */
export function chooseHolders(
  holders: readonly Holder[],
  members: FleetMembers,
  self: { nodeId: string; ip: string; httpPort: number },
): HolderChoice {
  const targets: PeerTarget[] = [];
  const seenIds = new Set<string>([self.nodeId.toLowerCase()]);
  const seenAddresses = new Set<string>([`${self.ip}|${self.httpPort}`]);
  let notMembers = 0;
  for (const holder of holders) {
    const id = holder.nodeId.toLowerCase();
    if (seenIds.has(id)) continue;
    seenIds.add(id);
    const m = members.member(id);
    if (!m) {
      notMembers++;
      continue;
    }
    const address = `${m.ip}|${m.httpPort}`;
    if (seenAddresses.has(address)) continue;
    seenAddresses.add(address);
    targets.push({ holder, ip: m.ip, httpPort: m.httpPort });
  }
  return { targets, notMembers };
}
