/**
 * One fetcher per object, by construction: rendezvous (highest random weight) hashing of the URL
 * key over the live members, as CARP and Traffic Server's consistent-hash parents do. Every node
 * that sees the same membership computes the same order, so a flash crowd on one URL reaches the
 * origin once: through the member designated in the requester's own cluster (`near`), which in
 * turn asks the member designated fleet-wide, which fetches from the origin and streams to every
 * asker. A member's weight for a key is SHA-1(node id ‖ key); ties (never in practice) go to the
 * lower id. When views of the membership disagree, the member asked does not consider itself
 * designated and refuses; the asker then falls back to the index and its claims
 * (../fetch/fetcher.ts). Keyed mode only: an ask makes the member fetch from the origin, so it is
 * taken only when its signature proves it comes from the fleet; open mode uses the index alone.
 */
import { createHash } from 'node:crypto';
import type { FleetMembers, LiveMember } from './members.js';

/** What a miss on this node does: fetch from the origin itself, or ask one member first. */
export type FetcherChoice = { kind: 'self' } | { kind: 'member'; member: LiveMember };

function weight(nodeId: string, key: Uint8Array): Buffer {
  return createHash('sha1').update(nodeId.toLowerCase(), 'hex').update(key).digest();
}

/** Does `a` (weight `wa`) outrank `b` (weight `wb`)? */
function outranks(wa: Buffer, a: string, wb: Buffer, b: string): boolean {
  const c = wa.compare(wb);
  return c > 0 || (c === 0 && a.toLowerCase() < b.toLowerCase());
}

/**
 * The highest-weight member for `key` among `members` and this node (`selfId`); undefined when
 * this node outranks them all.
 */
export function topMember(
  selfId: string,
  key: Uint8Array,
  members: Iterable<LiveMember>,
): LiveMember | undefined {
  let best: LiveMember | undefined;
  let bestWeight = weight(selfId, key);
  let bestId = selfId;
  for (const m of members) {
    const w = weight(m.nodeId, key);
    if (outranks(w, m.nodeId, bestWeight, bestId)) {
      best = m;
      bestWeight = w;
      bestId = m.nodeId;
    }
  }
  return best;
}

/**
 * The place of `selfId` in the rendezvous order of `ids` (itself included or not) for `key`: 0 when
 * no other id outranks it. The same order as the designated fetcher's, so the claims' head start
 * (the fallback) puts the designated member first too.
 */
export function rendezvousRank(selfId: string, key: Uint8Array, ids: Iterable<string>): number {
  const self = selfId.toLowerCase();
  const mine = weight(self, key);
  let rank = 0;
  for (const id of ids) {
    const other = id.toLowerCase();
    if (other !== self && outranks(weight(other, key), other, mine, self)) rank++;
  }
  return rank;
}

/**
 * The designated fetchers of `key` as this node sees them: `near`, the top member of its own
 * cluster (itself included); `global`, the top member of the whole fleet. Undefined without a
 * membership to choose from (no `live()`, or no other live member).
 */
export function designation(
  members: FleetMembers | undefined,
  selfId: string,
  key: Uint8Array,
): { near: LiveMember | undefined; global: LiveMember | undefined } | undefined {
  const self = selfId.toLowerCase();
  const live = members?.live?.().filter((m) => m.nodeId.toLowerCase() !== self);
  if (!live || live.length === 0) return undefined;
  return {
    near: topMember(
      selfId,
      key,
      live.filter((m) => m.near),
    ),
    global: topMember(selfId, key, live),
  };
}

/**
 * Whom a miss on this node asks: the member designated in its cluster; when that is this node,
 * the member designated fleet-wide; when that is this node too, nobody (it fetches from the
 * origin). Undefined when there is no membership to choose from.
 */
export function chooseFetcher(
  members: FleetMembers | undefined,
  selfId: string,
  key: Uint8Array,
): FetcherChoice | undefined {
  const d = designation(members, selfId, key);
  if (!d) return undefined;
  const member = d.near ?? d.global;
  return member ? { kind: 'member', member } : { kind: 'self' };
}

/**
 * Does this node consider itself designated for `key` (top of its cluster, or of the fleet)? A
 * member's ask for a key is honoured only then; otherwise the views disagree and it is refused.
 */
export function designatedHere(
  members: FleetMembers | undefined,
  selfId: string,
  key: Uint8Array,
): boolean {
  const d = designation(members, selfId, key);
  return d !== undefined && (d.near === undefined || d.global === undefined);
}
