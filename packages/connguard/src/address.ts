/**
 * Who a connection belongs to: its client (an IPv4 address, an IPv6 /64) and its network (an
 * IPv4 /24, an IPv6 /56), as keys. IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a dual-stack
 * listener reports for IPv4 clients) is the IPv4 address, so a client does not get two budgets.
 * The input is a socket's `remoteAddress`: what the kernel reports, but parsed with care anyway.
 */

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

/** The 16-bit groups of an IPv6 address (8 of them), or undefined when it is not one. */
function ipv6Groups(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  const s = zone >= 0 ? text.slice(0, zone) : text;
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i]!;
      if (i === pieces.length - 1 && p.includes('.')) {
        const v4 = ipv4Octets(p);
        if (!v4) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-f]{1,4}$/i.test(p)) {
        out.push(parseInt(p, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  return [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
}

function ipv4Octets(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

/** The first `bits` bits of `bytes` as a key (`4:192.0.2.0/24`, `6:20010db8…/56`). */
function prefixOf(family: 4 | 6, bytes: number[], bits: number): string {
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    out.push(String(bytes[i]! & ((0xff << (8 - keep)) & 0xff)));
  }
  return `${family}:${out.join('.')}/${bits}`;
}

/**
 * The client and network keys of `remote`. Text that is no address (a socket already closed
 * reports `undefined`) gets keys of its own, shared by every such connection.
 */
export function clientKeys(
  remote: string | undefined,
  clientBits: FamilyBits,
  networkBits: FamilyBits,
): ClientKeys {
  const text = remote ?? '';
  const v4 = ipv4Octets(text);
  if (v4) return keys4(text, v4, clientBits, networkBits);
  const g = ipv6Groups(text);
  if (!g) return { address: text, client: `?:${text}`, network: `?:${text}` };
  // ::ffff:a.b.c.d — an IPv4 client on a dual-stack socket.
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    const o = [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff];
    return keys4(o.join('.'), o, clientBits, networkBits);
  }
  const bytes = g.flatMap((x) => [x >> 8, x & 0xff]);
  return {
    address: text.toLowerCase(),
    client: prefixOf(6, bytes, clientBits.ipv6),
    network: prefixOf(6, bytes, networkBits.ipv6),
  };
}

function keys4(address: string, o: number[], c: FamilyBits, n: FamilyBits): ClientKeys {
  return { address, client: prefixOf(4, o, c.ipv4), network: prefixOf(4, o, n.ipv4) };
}
