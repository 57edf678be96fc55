/**
 * Who a datagram's source is, for per-source limits and the one-identity-per-IP rule:
 *
 * - `hostKey(ip)`: one host — an IPv4 address, or an IPv6 /64 (one subscriber usually holds a
 *   whole /64, so counting its addresses one by one would be no limit at all);
 * - `netKey(ip)`: one network — an IPv4 /24, or an IPv6 /48.
 *
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) count as their IPv4 address.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { formatIp, ipv6Groups, isV4Mapped, parseIPv6 } from '@coral/runtime';

const cache = new Map<string, { host: string; net: string }>();
const CACHE_MAX = 8_192;

function compute(ip: string): { host: string; net: string } {
  if (isIPv4(ip)) {
    return { host: ip, net: ip.slice(0, ip.lastIndexOf('.')) + '.0/24' };
  }
  if (isIPv6(ip)) {
    const bytes = parseIPv6(ip);
    if (bytes) {
      if (isV4Mapped(bytes)) return compute(formatIp(bytes.subarray(12, 16)));
      const hex = ipv6Groups(bytes).map((x) => x.toString(16));
      return {
        host: hex.slice(0, 4).join(':') + '::/64',
        net: hex.slice(0, 3).join(':') + '::/48',
      };
    }
  }
  return { host: ip, net: ip };
}

function keysOf(ip: string): { host: string; net: string } {
  let k = cache.get(ip);
  if (!k) {
    k = compute(ip);
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(ip, k);
  }
  return k;
}

/** The host a source address belongs to (IPv4 address, IPv6 /64). */
export function hostKey(ip: string): string {
  // IPv4 (the common case, no ':') is its own host key: no table lookup on the datagram path.
  return ip.includes(':') ? keysOf(ip).host : ip;
}

/** The network a source address belongs to (IPv4 /24, IPv6 /48). */
export function netKey(ip: string): string {
  return keysOf(ip).net;
}
