/** What the message handlers may read and change: the tables per level and the value store. */
import type { Contact } from '../../contact.js';
import type { RoutingTable } from '../../routing-table/routing-table.js';
import type { ValueStore } from '../../store/value-store.js';
import { WireErrorCode, type Response } from '../../wire/messages.js';

export interface HandlerContext {
  /** The routing table of a level, undefined when this node does not run that level. */
  table(level: number): RoutingTable | undefined;
  store: ValueStore;
  /** Contacts per FIND_NODE answer. */
  k: number;
  /** Contacts per GET / STORE_PROBE answer (the data-path walks). */
  walkContacts: number;
}

/** Where a request came from, as the RPC layer established it. */
export interface RequestSource {
  /** The source's host (IPv4 address, IPv6 /64): the unit of store quotas. */
  host: string;
  /** The request carried a valid write token (a round trip with this address is proven). */
  verified: boolean;
}

export function badLevel(level: number): Response {
  return { type: 'ERROR', code: WireErrorCode.BAD_LEVEL, message: `level ${level} not served` };
}

/** The k closest contacts of `table` to `target`, not including the requester. */
export function closerContacts(
  table: RoutingTable,
  target: Uint8Array,
  requester: Contact,
  k: number,
): Contact[] {
  const ip = requester.ip;
  const port = requester.port;
  return table.closest(target, k, (c) => c.ip === ip && c.port === port);
}
