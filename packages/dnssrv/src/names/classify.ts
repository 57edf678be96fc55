/**
 * What a question name is to this server. The fleet's own names come first — the configured
 * nameserver names — and everything else goes to the shared codec (`@coral/names`), so the DNS
 * server, the proxy and `coral-node coralize` read a Coralized name the same way.
 *
 * Order matters: a nameserver name such as `my-ns.nyud.net` is also the one-label spelling of the
 * origin `https://my.ns` (docs/names.md: a label with a lone hyphen decodes to a host), so it is
 * matched before the codec, and that origin cannot be Coralized under this zone.
 */
import { type CoralName, normalizeZone, parseCoralName } from '@coral/names';
import { DnsConfigError } from '../errors.js';
import type { NameserverConfig } from '../server/types.js';

export type NameClass =
  | Exclude<CoralName, { kind: 'apex' } | { kind: 'invalid' }>
  | { kind: 'apex'; zone: string }
  | { kind: 'invalid'; zone: string; reason: string }
  /** A configured nameserver of the fleet (`ns1.nyud.net`). */
  | { kind: 'nameserver'; zone: string | undefined; ns: NameserverConfig };

/** A zone as configured, in canonical form (lowercase A-labels); DNS_ERR_CONFIG when it is not one. */
export function canonicalZone(zone: string): string {
  try {
    return normalizeZone(zone);
  } catch (err) {
    throw new DnsConfigError(`zone ${JSON.stringify(zone)} is not a DNS name`, { cause: err });
  }
}

export class NameClassifier {
  readonly zones: readonly string[];
  readonly #nameservers = new Map<string, NameserverConfig>();

  constructor(zones: readonly string[], nameservers: readonly NameserverConfig[]) {
    this.zones = zones;
    for (const ns of nameservers) this.#nameservers.set(ns.name, ns);
  }

  /** The configured nameserver with this name (lowercase, no trailing dot), if any. */
  nameserver(name: string): NameserverConfig | undefined {
    return this.#nameservers.get(name);
  }

  /** The zone `name` is in (longest match), or undefined. */
  zoneOf(name: string): string | undefined {
    let best: string | undefined;
    for (const z of this.zones) {
      if ((name === z || name.endsWith(`.${z}`)) && (!best || z.length > best.length)) best = z;
    }
    return best;
  }

  /** Classify a question name (lowercase presentation form, as the wire decoder gives it). */
  classify(name: string): NameClass {
    const ns = this.#nameservers.get(name);
    if (ns) return { kind: 'nameserver', zone: this.zoneOf(name), ns };
    const r = parseCoralName(name, this.zones);
    if (r.kind === 'invalid') {
      return { kind: 'invalid', zone: r.zone, reason: `${r.code}: ${r.reason}` };
    }
    return r;
  }
}
