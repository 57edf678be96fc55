/**
 * IP addresses for the DNS server: `@coral/runtime`'s parser (views, ECS, probing per /24, rate
 * limiting per prefix), CIDRs that fail with DNS_ERR_CONFIG, and which IPv4 addresses are public.
 */
import { parseCidr as parseCidrWith, cidrContains, type Cidr } from '@coral/runtime';
import { DnsConfigError } from '../errors.js';

export {
  type Cidr,
  parseIp,
  parseIPv4,
  parseIPv6,
  formatIp,
  maskBytes,
  cidrContains,
  prefixKey,
} from '@coral/runtime';

/** Parse `a.b.c.d/n` or `x::/n` (a bare address is a host route). Throws DNS_ERR_CONFIG. */
export function parseCidr(text: string): Cidr {
  return parseCidrWith(text, (message) => new DnsConfigError(message));
}

/**
 * IPv4 ranges that are not public unicast destinations (RFC 6890's special-purpose registry:
 * "this network", private, shared CGN, loopback, link-local, IETF protocol assignments,
 * documentation, benchmarking, multicast, reserved, broadcast).
 */
const NON_PUBLIC_V4: readonly Cidr[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/3',
].map((c) => parseCidr(c));

/** Is this IPv4 address (4 bytes) a public unicast address? */
export function isPublicIPv4(ip: Uint8Array): boolean {
  return ip.length === 4 && !NON_PUBLIC_V4.some((c) => cidrContains(c, ip));
}
