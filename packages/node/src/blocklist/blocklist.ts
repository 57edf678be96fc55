/**
 * The origin domain blocklist (CoralCDN's NSDI'10 lesson: an open CDN must be able to stop
 * serving a site at once). A listed domain blocks itself and every name under it
 * (`example.com` blocks `www.example.com`, not `badexample.com`); an IP address blocks exactly
 * that address. Names are compared in their canonical form (lowercase A-labels, as @coral/names
 * decodes Coralized names), so `Bücher.Example` in the list blocks `xn--bcher-kva.example`.
 *
 * Sources: `proxy.blocklist` (a list) and `proxy.blocklistFile` (one domain per line, `#`
 * comments, blank lines ignored), both re-read on SIGHUP.
 */
import { isIP } from 'node:net';
import { canonicalHost } from '@coral/names';

export class Blocklist {
  /** Names: each blocks itself and every name under it. */
  readonly #names = new Set<string>();
  /** IP addresses: each blocks exactly itself. */
  readonly #ips = new Set<string>();

  /** `domains` must be canonical (see {@link parseDomain}). */
  constructor(domains: Iterable<string> = []) {
    for (const d of domains) (isIP(d) !== 0 ? this.#ips : this.#names).add(d);
  }

  get size(): number {
    return this.#names.size + this.#ips.size;
  }

  domains(): string[] {
    return [...this.#names, ...this.#ips].sort();
  }

  /** The listed domain that blocks `host` (canonical, as an origin host), or undefined. */
  match(host: string): string | undefined {
    if (this.size === 0) return undefined;
    let h = host.toLowerCase();
    if (h.endsWith('.')) h = h.slice(0, -1);
    const bare = h.replace(/^\[|\]$/g, '');
    if (isIP(bare) !== 0) return this.#ips.has(bare) ? bare : undefined;
    if (this.#names.has(h)) return h;
    for (let dot = h.indexOf('.'); dot >= 0; dot = h.indexOf('.', dot + 1)) {
      const parent = h.slice(dot + 1);
      if (this.#names.has(parent)) return parent;
    }
    return undefined;
  }
}

/**
 * One entry in canonical form: a DNS name (a leading `*.` or `.` is accepted and means the same:
 * the domain and everything under it) or an IP address. Throws with a message saying why not.
 */
export function parseDomain(entry: string): string {
  let s = entry.trim();
  if (s.startsWith('*.')) s = s.slice(2);
  else if (s.startsWith('.')) s = s.slice(1);
  const bare = s.replace(/^\[|\]$/g, '');
  if (isIP(bare) !== 0) return bare.toLowerCase();
  if (/[/:@\s]/.test(s)) throw new Error(`${JSON.stringify(entry)} is not a domain name`);
  try {
    // A single label (a whole top-level domain) is refused by canonicalHost.
    return canonicalHost(s);
  } catch (err) {
    throw new Error(`${JSON.stringify(entry)} is not a domain name: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * The entries of a blocklist file's text: one domain per line, `#` starts a comment. Every bad
 * line is reported (with its number), the good ones are kept.
 */
export function parseBlocklistText(text: string): { domains: string[]; problems: string[] } {
  const domains: string[] = [];
  const problems: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    try {
      domains.push(parseDomain(line));
    } catch (err) {
      problems.push(`line ${i + 1}: ${(err as Error).message}`);
    }
  });
  return { domains, problems };
}
