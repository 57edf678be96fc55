/**
 * What a question name is to this server. The fleet's own names come first — the configured
 * nameserver names, and the per-member nameserver names of the delegated sub-zones — and
 * everything else goes to the shared codec (`@coral/names`), so the DNS server, the proxy and
 * `coral-node coralize` read a Coralized name the same way.
 *
 * Order matters: a nameserver name such as `my-ns.nyud.net` is also the one-label spelling of the
 * origin `https://my.ns` (docs/names.md: a label with a lone hyphen decodes to a host), so it is
 * matched before the codec, and that origin cannot be Coralized under this zone.
 *
 * Each zone has sub-zones, one per cluster level (`l0.<zone>`, `l1.l0.<zone>`, `l2.l1.l0.<zone>`:
 * see delegation/). They are always read as zones (the codec gets them too; the longest zone
 * wins), so `www.example.com.l2.l1.l0.nyud.net` is the same origin as `www.example.com.nyud.net`.
 *
 * Results are memoised per name (bounded, oldest forgotten first): the codec costs a few µs a name
 * (tens for IDN labels), a memo hit a map lookup. Every name carries the key of the answers it
 * shares with other names (`family`): all origins of one (sub-)zone share their answers' shape.
 */
import { normalizeZone, parseCoralName } from '@coral/names';
import { DnsConfigError } from '../errors.js';
import type { NameserverConfig } from '../types.js';

/** A served zone and its delegation sub-zones. */
export interface ZoneInfo {
  index: number;
  /** Canonical name (`nyud.net`). */
  name: string;
  /** Sub-zone of each level: `l0.<zone>`, `l1.l0.<zone>`, ... (index = level). */
  subZones: readonly string[];
}

/** `level` -1 is the zone itself; 0.. the sub-zone of that cluster level. */
export type NameClass =
  | { kind: 'outside' }
  | {
      kind: 'origin';
      family: string;
      zone: ZoneInfo;
      level: number;
      form: 'legacy' | 'one-label';
      scheme: 'http' | 'https';
      host: string;
      port: number;
    }
  | { kind: 'invalid'; family: string; zone: ZoneInfo; level: number; reason: string }
  | { kind: 'apex'; family: string; zone: ZoneInfo; level: number }
  | { kind: 'acme-challenge'; zone: ZoneInfo; level: number }
  /** A configured nameserver of the fleet (`ns1.nyud.net`). */
  | { kind: 'nameserver'; family: string; zone: ZoneInfo | undefined; ns: NameserverConfig }
  /** A member's nameserver name in a sub-zone: `ns<40 hex id>.<sub-zone>`. */
  | { kind: 'member'; family: string; zone: ZoneInfo; level: number; id: string };

/** Memoised names (oldest forgotten first). */
export const DEFAULT_NAME_MEMO_SIZE = 20_000;
/** Label of a member's nameserver name: `ns` and its node id. */
const MEMBER_LABEL = /^ns([0-9a-f]{40})$/;

/** A zone as configured, in canonical form (lowercase A-labels); DNS_ERR_CONFIG when it is not one. */
export function canonicalZone(zone: string): string {
  try {
    return normalizeZone(zone);
  } catch (err) {
    throw new DnsConfigError(`zone ${JSON.stringify(zone)} is not a DNS name`, { cause: err });
  }
}

/** The name of sub-zone `level` of `zone`: `l2.l1.l0.<zone>` for level 2. */
export function subZoneName(zone: string, level: number): string {
  const labels: string[] = [];
  for (let l = level; l >= 0; l--) labels.push(`l${l}`);
  return `${labels.join('.')}.${zone}`;
}

/** The name of a member's nameserver in a sub-zone. */
export function memberNameserverName(id: string, subZone: string): string {
  return `ns${id}.${subZone}`;
}

export class NameClassifier {
  readonly zones: readonly ZoneInfo[];
  readonly #codecZones: string[];
  readonly #byZoneName = new Map<string, { zone: ZoneInfo; level: number }>();
  readonly #nameservers = new Map<string, NameserverConfig>();
  readonly #memo = new Map<string, NameClass>();
  readonly #memoSize: number;

  constructor(
    zones: readonly string[],
    nameservers: readonly NameserverConfig[],
    options: { levels: number; memoSize?: number },
  ) {
    this.zones = zones.map((name, index) => ({
      index,
      name,
      subZones: Array.from({ length: Math.max(0, options.levels) }, (_, l) => subZoneName(name, l)),
    }));
    this.#codecZones = [];
    for (const z of this.zones) {
      this.#byZoneName.set(z.name, { zone: z, level: -1 });
      this.#codecZones.push(z.name);
      z.subZones.forEach((s, level) => {
        // A configured zone that is also another's sub-zone stays a zone of its own.
        if (!this.#byZoneName.has(s)) this.#byZoneName.set(s, { zone: z, level });
        this.#codecZones.push(s);
      });
    }
    for (const ns of nameservers) this.#nameservers.set(ns.name, ns);
    this.#memoSize = Math.max(1, options.memoSize ?? DEFAULT_NAME_MEMO_SIZE);
  }

  /** Names memoised. */
  get size(): number {
    return this.#memo.size;
  }

  /** The configured nameserver with this name (lowercase, no trailing dot), if any. */
  nameserver(name: string): NameserverConfig | undefined {
    return this.#nameservers.get(name);
  }

  /** The (sub-)zone `name` is in (longest match), with its level, or undefined. */
  zoneOf(name: string): { zone: ZoneInfo; level: number; name: string } | undefined {
    for (let n = name; ;) {
      const hit = this.#byZoneName.get(n);
      if (hit) return { ...hit, name: n };
      const dot = n.indexOf('.');
      if (dot < 0) return undefined;
      n = n.slice(dot + 1);
    }
  }

  /** Classify a question name (lowercase presentation form, as the wire decoder gives it). */
  classify(name: string): NameClass {
    const known = this.#memo.get(name);
    if (known) return known;
    const c = this.#classify(name);
    if (this.#memo.size >= this.#memoSize) {
      this.#memo.delete(this.#memo.keys().next().value as string);
    }
    this.#memo.set(name, c);
    return c;
  }

  #classify(name: string): NameClass {
    const ns = this.#nameservers.get(name);
    if (ns) {
      const z = this.zoneOf(name);
      return { kind: 'nameserver', family: `n:${name}`, zone: z?.zone, ns };
    }
    const dot = name.indexOf('.');
    if (dot > 0) {
      const m = MEMBER_LABEL.exec(name.slice(0, dot));
      const z = m ? this.#byZoneName.get(name.slice(dot + 1)) : undefined;
      if (m && z && z.level >= 0) {
        return { kind: 'member', family: `m:${name}`, zone: z.zone, level: z.level, id: m[1]! };
      }
    }
    const r = parseCoralName(name, this.#codecZones);
    if (r.kind === 'outside') return r;
    const at = this.#byZoneName.get(r.zone)!;
    const { zone, level } = at;
    switch (r.kind) {
      case 'apex':
        return { kind: 'apex', family: `a${zone.index}.${level}`, zone, level };
      case 'acme-challenge':
        return { kind: 'acme-challenge', zone, level };
      case 'invalid':
        return {
          kind: 'invalid',
          family: `x${zone.index}.${level}`,
          zone,
          level,
          reason: `${r.code}: ${r.reason}`,
        };
      case 'origin':
        return {
          kind: 'origin',
          family: `o${zone.index}.${level}`,
          zone,
          level,
          form: r.form,
          scheme: r.scheme,
          host: r.host,
          port: r.port,
        };
    }
  }
}
