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

const cache = new Map<string, { host: string; net: string }>();
const CACHE_MAX = 8_192;

function expandIPv6(ip: string): number[] | undefined {
  let s = ip;
  const pct = s.indexOf('%');
  if (pct >= 0) s = s.slice(0, pct);
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  const last = s.slice(lastColon + 1);
  if (last.includes('.')) {
    if (!isIPv4(last)) return undefined;
    const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
    tail = [(a << 8) | b, (c << 8) | d];
    s = s.slice(0, lastColon + 1) + '0';
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((h) => parseInt(h, 16));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  let groups: number[];
  if (halves.length === 2) {
    const fill = 8 - head.length - rest.length - (tail.length ? 1 : 0);
    groups = [...head, ...Array<number>(Math.max(0, fill)).fill(0), ...rest];
  } else groups = head;
  if (tail.length) groups = [...groups.slice(0, groups.length - 1), ...tail];
  if (groups.length !== 8 || groups.some((g) => !(g >= 0 && g <= 0xffff))) return undefined;
  return groups;
}

function compute(ip: string): { host: string; net: string } {
  if (isIPv4(ip)) {
    return { host: ip, net: ip.slice(0, ip.lastIndexOf('.')) + '.0/24' };
  }
  if (isIPv6(ip)) {
    const g = expandIPv6(ip);
    if (g) {
      // IPv4-mapped: ::ffff:a.b.c.d
      if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
        return compute(`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
      }
      const hex = g.map((x) => x.toString(16));
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
