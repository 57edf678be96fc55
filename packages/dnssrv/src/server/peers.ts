/**
 * Per source address: its bytes, and one string for it. Node makes a new address string for every
 * datagram; the decision log keeps the last few hundred of them, so each scavenge would promote
 * the ones it finds there. The log and everything else get this one instead.
 */
import type { Peer } from '../answer/meta.js';
import { parseIp } from '../net/ip.js';

const MAX_PEERS = 4096;
const peers = new Map<string, { address: string; bytes: Uint8Array }>();

export function peerOf(address: string, port: number): Peer {
  let known = peers.get(address);
  if (!known) {
    known = { address, bytes: parseIp(address) ?? new Uint8Array(4) };
    if (peers.size >= MAX_PEERS) peers.clear();
    peers.set(address, known);
  }
  return { address: known.address, port, bytes: known.bytes };
}
