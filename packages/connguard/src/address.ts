/**
 * Who a connection belongs to: its client (an IPv4 address, an IPv6 /64) and its network (an
 * IPv4 /24, an IPv6 /56), as keys. IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a dual-stack
 * listener reports for IPv4 clients) is the IPv4 address, so a client does not get two budgets.
 * The input is a socket's `remoteAddress`: what the kernel reports, but parsed with care anyway,
 * by the project's one IP parser (@coral/runtime).
 */
import { formatIp, parseIp, prefixKey } from '@coral/runtime';

/** Prefix lengths per family. */
export interface FamilyBits {
  ipv4: number;
  ipv6: number;
}

/** The keys of one remote address: `address` is the normalised text (IPv4 for mapped IPv6). */
export interface ClientKeys {
  address: string;
  client: string;
  network: string;
}

/**
 * The client and network keys of `remote` (`192.0.2.0/24`, `2001:db8::/56`: the two families'
 * keys never meet). Text that is no address (a socket already closed reports `undefined`) gets
 * keys of its own, shared by every such connection.
 */
export function clientKeys(
  remote: string | undefined,
  clientBits: FamilyBits,
  networkBits: FamilyBits,
): ClientKeys {
  const text = remote ?? '';
  const ip = parseIp(text); // an IPv4-mapped IPv6 address comes back as its 4 IPv4 bytes
  if (!ip) return { address: text, client: `?:${text}`, network: `?:${text}` };
  const v4 = ip.length === 4;
  return {
    address: formatIp(ip),
    client: prefixKey(ip, v4 ? clientBits.ipv4 : clientBits.ipv6),
    network: prefixKey(ip, v4 ? networkBits.ipv4 : networkBits.ipv6),
  };
}
