/** This node's place in the rendezvous order that designates a URL's fetcher (@coral/httpprx). */
import { rendezvousRank as rankAmong } from '@coral/httpprx';

/**
 * This node's place among the live proxies in the rendezvous (highest random weight) order for
 * `key` that also designates its fetcher (@coral/httpprx): 0 when no live node scores higher.
 * Every node computes the same order from the same set.
 */
export function rendezvousRank(selfId: string, key: Uint8Array, live: { id: string }[]): number {
  return rankAmong(
    selfId,
    key,
    live.map((n) => n.id),
  );
}
