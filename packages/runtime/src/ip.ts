/**
 * IP addresses as bytes, the one parser of the project: IPv4 (dotted quad, no leading zeros),
 * IPv6 (RFC 4291 text forms, `%zone` ignored, a trailing dotted quad), IPv4-mapped IPv6 as its
 * IPv4 address, RFC 5952 text, CIDR prefixes and prefix keys. Pure functions, no I/O.
 *
 * ```ts
 * parseIp('::ffff:10.1.2.3');                       // Uint8Array [10, 1, 2, 3]
 * formatIp(parseIp('2001:0db8:0:0:1:0:0:1')!);      // '2001:db8::1:0:0:1'
 * prefixKey(parseIp('203.0.113.77')!, 24);          // '203.0.113.0/24'
 * cidrContains(parseCidr('10.0.0.0/8'), parseIp('10.2.3.4')!); // true
 * ```
 *
 * Users: dnssrv (views, ECS, probing per /24, rate limiting per prefix), the DSHT's per-source
 * limits (`hostKey`/`netKey`), the proxy's origin address policy, the names package's IPv4 test.
 */

/** A parsed CIDR block. `bytes` is the network address with host bits cleared. */
export interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
  text: string;
}

/** 4 bytes for IPv4 (and IPv4-mapped IPv6), 16 for IPv6; undefined when not an address. */
export function parseIp(text: string): Uint8Array | undefined {
  if (text.includes(':')) {
    const v6 = parseIPv6(text);
    if (!v6) return undefined;
    if (isV4Mapped(v6)) return v6.subarray(12, 16).slice();
    return v6;
  }
  return parseIPv4(text);
}

export function parseIPv4(text: string): Uint8Array | undefined {
  const out = new Uint8Array(4);
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46;
    if (c === 46) {
      if (digits === 0 || part > 3) return undefined;
      out[part++] = value;
      value = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && value === 0) return undefined; // no leading zeros
      value = value * 10 + (c - 48);
      digits++;
      if (value > 255) return undefined;
    } else {
      return undefined;
    }
  }
  return part === 4 ? out : undefined;
}

export function parseIPv6(input: string): Uint8Array | undefined {
  let text = input;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const out = new Uint8Array(16);
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parseGroups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const groups: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (!v4) return undefined;
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return undefined;
        groups.push(parseInt(p, 16));
      }
    }
    return groups;
  };
  const head = parseGroups(halves[0]!);
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  if (halves.length === 1 ? head.length !== 8 : head.length + tail.length > 7) return undefined;
  const groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  for (let g = 0; g < 8; g++) {
    out[2 * g] = groups[g]! >> 8;
    out[2 * g + 1] = groups[g]! & 0xff;
  }
  return out;
}

/** Is this 16-byte address IPv4-mapped (`::ffff:a.b.c.d`)? */
export function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** Text form: dotted quad for 4 bytes, RFC 5952 compressed form for 16. */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const groups = ipv6Groups(bytes);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** Copy of `bytes` with every bit after `prefix` cleared. */
export function maskBytes(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const bits = prefix - i * 8;
    if (bits >= 8) out[i] = bytes[i]!;
    else if (bits > 0) out[i] = bytes[i]! & (0xff << (8 - bits)) & 0xff;
  }
  return out;
}

/** The eight 16-bit groups of a 16-byte IPv6 address. */
export function ipv6Groups(bytes: Uint8Array): number[] {
  const groups: number[] = [];
  for (let g = 0; g < 8; g++) groups.push((bytes[2 * g]! << 8) | bytes[2 * g + 1]!);
  return groups;
}

/**
 * Parse `a.b.c.d/n` or `x::/n` (a bare address is a host route). A bad one throws the error that
 * `makeError` makes of the reason (a `TypeError` unless given: each package throws its own code).
 */
export function parseCidr(
  text: string,
  makeError: (message: string) => Error = (message) => new TypeError(message),
): Cidr {
  const slash = text.indexOf('/');
  const addr = slash >= 0 ? text.slice(0, slash) : text;
  const bytes = parseIp(addr);
  if (!bytes) throw makeError(`invalid CIDR "${text}": bad address`);
  const max = bytes.length * 8;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^[0-9]{1,3}$/.test(p) || Number(p) > max) {
      throw makeError(`invalid CIDR "${text}": prefix must be 0..${max}`);
    }
    prefix = Number(p);
    // An IPv4-mapped IPv6 CIDR (::ffff:10.0.0.0/104) becomes its IPv4 form.
    if (addr.includes(':') && bytes.length === 4) prefix = Math.max(0, prefix - 96);
  }
  const net = maskBytes(bytes, prefix);
  return {
    family: bytes.length === 4 ? 4 : 6,
    bytes: net,
    prefix,
    text: `${formatIp(net)}/${prefix}`,
  };
}

/** Does `cidr` contain the address `ip` (bytes from {@link parseIp})? */
export function cidrContains(cidr: Cidr, ip: Uint8Array): boolean {
  if (ip.length !== cidr.bytes.length) return false;
  const full = cidr.prefix >> 3;
  for (let i = 0; i < full; i++) if (ip[i] !== cidr.bytes[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (ip[full]! & mask) === cidr.bytes[full];
}

/** `"203.0.113.0/24"`-style key of the prefix of `ip` (bytes) of length `prefix`. */
export function prefixKey(ip: Uint8Array, prefix: number): string {
  return `${formatIp(maskBytes(ip, Math.min(prefix, ip.length * 8)))}/${Math.min(prefix, ip.length * 8)}`;
}
