/**
 * The one filter between the directory and an answer. Every way of locating the client (views,
 * ECS and resolver hints — also when served from the hint cache —, RTT clusters, random) hands its
 * candidates through {@link admitCandidates} before any of them is answered with:
 *
 * - **live**: a node the directory says is not live right now (`NodeDirectory.isLive`) is dropped,
 *   whichever method returned it;
 * - **addressable**: its addresses must parse (IPv4 dotted quad; IPv6, written canonically, as the
 *   wire encoder expects); a node with neither is dropped, a malformed one of the two is ignored;
 * - **one identity per address**: a node whose id, or any of whose addresses, was already named by
 *   an earlier candidate is dropped. An IPv4-mapped IPv6 address counts as its IPv4 address. So a
 *   directory holding 100 identities on one IP yields that IP once, in A and in AAAA answers alike,
 *   and A and AAAA answers name the same proxies.
 *
 * Pure apart from the `isLive` callback; runs only when an answer is built, never on a cache hit.
 */
import { formatIp, parseIp, parseIPv4 } from '../net/ip.js';
import type { NodeInfo } from '../node-directory.js';

/**
 * How many candidates to ask the directory for, per answer record wanted: duplicates and dead
 * nodes are dropped here, and the answer should still be full when a few are.
 */
export const CANDIDATE_OVERSAMPLE = 3;

/** Up to `count` nodes of `candidates`, in order, that pass the filter above. */
export function admitCandidates(
  candidates: Iterable<NodeInfo>,
  count: number,
  isLive: ((id: string) => boolean) | undefined,
): NodeInfo[] {
  const out: NodeInfo[] = [];
  if (count <= 0) return out;
  const seen = new Set<string>();
  for (const n of candidates) {
    if (out.length >= count) break;
    if (!n || typeof n.id !== 'string' || seen.has(n.id)) continue;
    if (isLive && !isLive(n.id)) continue;
    const v4 = n.ipv4 !== undefined ? canonicalIPv4(n.ipv4) : undefined;
    const v6 = n.ipv6 !== undefined ? canonicalIPv6(n.ipv6) : undefined;
    if (v4 === undefined && v6?.text === undefined) continue;
    // The key an address is known by: an IPv4-mapped IPv6 address is its IPv4 address.
    const v6Key = v6 !== undefined ? v6.key : undefined;
    if ((v4 !== undefined && seen.has(v4)) || (v6Key !== undefined && seen.has(v6Key))) continue;
    seen.add(n.id);
    if (v4 !== undefined) seen.add(v4);
    if (v6Key !== undefined) seen.add(v6Key);
    const ipv6 = v6?.text;
    out.push(v4 === n.ipv4 && ipv6 === n.ipv6 ? n : rewrite(n, v4, ipv6));
  }
  return out;
}

function canonicalIPv4(text: string): string | undefined {
  if (typeof text !== 'string') return undefined;
  const b = parseIPv4(text);
  return b ? formatIp(b) : undefined;
}

/**
 * An IPv6 proxy address in canonical text (`text`; undefined when it is IPv4-mapped: that is no
 * IPv6 proxy) and the key it is deduplicated by.
 */
function canonicalIPv6(text: string): { text: string | undefined; key: string } | undefined {
  if (typeof text !== 'string' || !text.includes(':')) return undefined;
  const b = parseIp(text); // 4 bytes when IPv4-mapped
  if (!b) return undefined;
  const key = formatIp(b);
  return { text: b.length === 16 ? key : undefined, key };
}

function rewrite(n: NodeInfo, ipv4: string | undefined, ipv6: string | undefined): NodeInfo {
  const out: NodeInfo = { id: n.id, httpPort: n.httpPort };
  if (ipv4 !== undefined) out.ipv4 = ipv4;
  if (ipv6 !== undefined) out.ipv6 = ipv6;
  if (n.region !== undefined) out.region = n.region;
  return out;
}
