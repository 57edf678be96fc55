/**
 * Which origin addresses the proxy may connect to.
 *
 * A CDN node fetches whatever origin a URL names, so without a policy anyone could make it fetch
 * `http://169.254.169.254/` (cloud metadata) or an admin page on 10.0.0.1. The connector resolves a
 * name once, runs every address through {@link filterAddresses} BEFORE any connection attempt, and
 * dials only the addresses that passed. It never resolves the name again between the check and the
 * connect, so a DNS answer that changes in between (DNS rebinding) cannot slip a refused address in.
 *
 * Pure functions over address strings; no I/O.
 */
import { isIPv4, isIPv6 } from 'node:net';
import {
  ipv6Groups,
  parseIPv4 as parseIPv4Bytes,
  parseIPv6 as parseIPv6Bytes,
} from '@coral/runtime';

import type { RefusedAddress } from './errors.js';

/** What an address is, as far as the policy cares. */
export type AddressClass =
  | 'public'
  /** 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32: not routed, but not anyone's network either. */
  | 'documentation'
  /** 127/8, ::1 */
  | 'loopback'
  /** 10/8, 172.16/12, 192.168/16 (RFC 1918) */
  | 'private'
  /** 100.64/10 (RFC 6598 shared address space, carrier-grade NAT) */
  | 'cgnat'
  /** 169.254/16 (incl. 169.254.169.254, the cloud metadata service), fe80::/10 */
  | 'link-local'
  /** 0/8, :: */
  | 'unspecified'
  /** 224/4, ff00::/8 */
  | 'multicast'
  /** fc00::/7 (RFC 4193) */
  | 'unique-local'
  /** fec0::/10 (deprecated site-local, still private in practice) */
  | 'site-local'
  /** 198.18/15 (RFC 2544 benchmarking) */
  | 'benchmarking'
  /** 240/4, 255.255.255.255, 192.0.0/24, ::/96 IPv4-compatible, 100::/64 discard, 64:ff9b:1::/48 */
  | 'reserved';

/** Classes refused unless `allowPrivate` is set: everything that is not a reachable public host. */
export const DEFAULT_REFUSED_CLASSES: ReadonlySet<AddressClass> = new Set<AddressClass>([
  'loopback',
  'private',
  'cgnat',
  'link-local',
  'unspecified',
  'multicast',
  'unique-local',
  'site-local',
  'benchmarking',
  'reserved',
]);

/**
 * Classes refused even when `allowPrivate` is set: connecting to them is never meaningful
 * (0.0.0.0 and :: reach the local host on Linux, which `allowPrivate` is not meant to open by
 * accident; multicast and broadcast are not TCP destinations).
 */
export const ALWAYS_REFUSED_CLASSES: ReadonlySet<AddressClass> = new Set<AddressClass>([
  'unspecified',
  'multicast',
]);

/** Parse dotted-quad IPv4 into a 32-bit unsigned integer, or undefined when not IPv4. */
export function parseIPv4(address: string): number | undefined {
  if (!isIPv4(address)) return undefined;
  const b = parseIPv4Bytes(address);
  return b && ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
}

/**
 * Parse an IPv6 address (with `::` compression, an optional trailing dotted quad and an optional
 * `%zone`) into its eight 16-bit groups, or undefined when not IPv6.
 */
export function parseIPv6(address: string): number[] | undefined {
  const pct = address.indexOf('%');
  if (!isIPv6(pct >= 0 ? address.slice(0, pct) : address)) return undefined;
  const b = parseIPv6Bytes(address);
  return b && ipv6Groups(b);
}

function inV4(ip: number, base: string, bits: number): boolean {
  const b = parseIPv4(base)!;
  if (bits === 0) return true;
  const mask = bits === 32 ? 0xffffffff : (~(0xffffffff >>> bits) >>> 0) >>> 0;
  return (ip & mask) >>> 0 === (b & mask) >>> 0;
}

/** Classify a 32-bit IPv4 address. */
export function classifyIPv4(ip: number): AddressClass {
  if (inV4(ip, '0.0.0.0', 8)) return 'unspecified';
  if (inV4(ip, '127.0.0.0', 8)) return 'loopback';
  if (inV4(ip, '10.0.0.0', 8) || inV4(ip, '172.16.0.0', 12) || inV4(ip, '192.168.0.0', 16)) {
    return 'private';
  }
  if (inV4(ip, '100.64.0.0', 10)) return 'cgnat';
  if (inV4(ip, '169.254.0.0', 16)) return 'link-local';
  if (inV4(ip, '224.0.0.0', 4)) return 'multicast';
  if (inV4(ip, '240.0.0.0', 4)) return 'reserved'; // includes 255.255.255.255
  if (inV4(ip, '192.0.0.0', 24)) return 'reserved';
  if (inV4(ip, '198.18.0.0', 15)) return 'benchmarking';
  if (inV4(ip, '192.0.2.0', 24) || inV4(ip, '198.51.100.0', 24) || inV4(ip, '203.0.113.0', 24)) {
    return 'documentation';
  }
  return 'public';
}

/** Classify IPv6 groups; embedded IPv4 (mapped, NAT64, 6to4) is classified as the IPv4 it carries. */
export function classifyIPv6(g: readonly number[]): AddressClass {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const v4Tail = ((g6 << 16) | g7) >>> 0;
  const zeroTo = (n: number): boolean => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(8)) return 'unspecified';
  if (zeroTo(7) && g7 === 1) return 'loopback';
  // ::ffff:a.b.c.d — IPv4-mapped: connecting to it reaches the IPv4 address.
  if (zeroTo(5) && g5 === 0xffff) return classifyIPv4(v4Tail);
  // ::ffff:0:a.b.c.d — IPv4-translated (SIIT).
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return classifyIPv4(v4Tail);
  // ::a.b.c.d — deprecated IPv4-compatible.
  if (zeroTo(6)) return 'reserved';
  // 64:ff9b::/96 — well-known NAT64 prefix: a refused IPv4 behind it is still refused.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return classifyIPv4(v4Tail);
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'reserved'; // 64:ff9b:1::/48 local NAT64
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return 'reserved'; // 100::/64 discard
  // 2002::/16 — 6to4: the IPv4 gateway sits in groups 1-2.
  if (g0 === 0x2002) {
    const inner = classifyIPv4(((g1 << 16) | g2) >>> 0);
    return inner === 'public' || inner === 'documentation' ? 'public' : inner;
  }
  if (g0 === 0x2001 && g1 === 0xdb8) return 'documentation';
  if ((g0 & 0xfe00) === 0xfc00) return 'unique-local';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'site-local';
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  return 'public';
}

/** Classify an IPv4 or IPv6 address string. Throws a TypeError for a string that is neither. */
export function classifyAddress(address: string): AddressClass {
  const v4 = parseIPv4(address);
  if (v4 !== undefined) return classifyIPv4(v4);
  const v6 = parseIPv6(address);
  if (v6 !== undefined) return classifyIPv6(v6);
  throw new TypeError(`not an IP address: ${JSON.stringify(address)}`);
}

export interface AddressPolicyOptions {
  /**
   * Allow loopback, private, CGNAT, link-local, unique-local and reserved origins (default false).
   * Unspecified (0.0.0.0, ::) and multicast addresses stay refused.
   */
  allowPrivate?: boolean;
}

/** Whether the policy lets the connector dial `address`. */
export function isAddressAllowed(address: string, opts: AddressPolicyOptions = {}): boolean {
  let cls: AddressClass;
  try {
    cls = classifyAddress(address);
  } catch {
    return false; // not an IP literal: nothing to dial safely
  }
  if (ALWAYS_REFUSED_CLASSES.has(cls)) return false;
  return opts.allowPrivate === true || !DEFAULT_REFUSED_CLASSES.has(cls);
}

/**
 * Split resolved addresses into those the connector may dial (order kept) and those it must not,
 * each refused one with its class. Call this on the one resolution whose result you then dial.
 */
export function filterAddresses<A extends { address: string; family: 4 | 6 }>(
  addresses: readonly A[],
  opts: AddressPolicyOptions = {},
): { allowed: A[]; refused: RefusedAddress[] } {
  const allowed: A[] = [];
  const refused: RefusedAddress[] = [];
  for (const a of addresses) {
    if (isAddressAllowed(a.address, opts)) {
      allowed.push(a);
    } else {
      let cls: string;
      try {
        cls = classifyAddress(a.address);
      } catch {
        cls = 'invalid';
      }
      refused.push({ address: a.address, family: a.family, class: cls });
    }
  }
  return { allowed, refused };
}
