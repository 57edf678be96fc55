/**
 * Building answers: which records a question gets (proxies, the delegation's NS records and glue,
 * the short-name CNAME, apex SOA/NS, nameserver addresses, ACME TXT, NXDOMAIN/NODATA with the
 * SOA, the no-proxy fallbacks) — as templates (`wire/template.ts`) that do not depend on the
 * question name, so the pipeline shares one among every name of a family (all origins of a zone,
 * say) and every resolver of a location bucket.
 *
 * The location of the client comes from the {@link Locator}, the delegation's nameservers from
 * {@link Delegation}. The pipeline caches what this returns.
 */
import type { Random } from '@coral/testkit';
import type { ChallengeStore } from '../acme/challenge-store.js';
import type { Delegation, NameserverSet } from '../delegation/delegation.js';
import { DnsConfigError } from '../errors.js';
import type { Location, LocationContext, Locator } from '../locate/locator.js';
import {
  canonicalZone,
  memberNameserverName,
  type NameClass,
  type ZoneInfo,
} from '../names/classify.js';
import { formatIp, isPublicIPv4, parseIp, parseIPv4 } from '../net/ip.js';
import type { NodeInfo } from '../node-directory.js';
import type { RrlKind } from '../rrl/response-rate-limiter.js';
import {
  DEFAULT_ANSWER_COUNT,
  DEFAULT_CHALLENGE_TTL,
  DEFAULT_CNAME_TTL,
  DEFAULT_LOCAL_TTL,
  DEFAULT_NS_TTL,
  DEFAULT_SOA,
  DEFAULT_TTL,
  DEFAULT_UDP_MAX_PAYLOAD,
  DEFAULT_ZONES,
  type DnsServerOptions,
  type NameserverConfig,
} from '../server/types.js';
import { nonNegativeInt, positiveInt } from '../server/validate.js';
import { RCODE, TYPE } from '../wire/constants.js';
import { encodeBare } from '../wire/encode.js';
import type { Query } from '../wire/query.js';
import type { ResponseOpt } from '../wire/records.js';
import { ANSWER, BodyWriter, type SoaFields, type Template } from '../wire/template.js';
import { type AnswerMeta, answerMeta } from './meta.js';

export type { AnswerMeta, Peer } from './meta.js';

/** An answer ready to be instantiated for a query, and how it may be reused. */
export interface Built {
  template: Template;
  meta: AnswerMeta;
  /** How long it may be reused (0 = for this query only). */
  cacheMs: number;
  /** Located: valid for one location bucket (else for every client). */
  located: boolean;
  /** Ids whose liveness it depends on (proxies and nameservers): re-checked on every reuse. */
  liveIds: readonly string[];
  /**
   * Set when the location found no live proxy: the answer depends on the name (a CNAME to its
   * origin, ...), so a query of another name of the family builds its own with {@link AnswerBuilder.noProxy}.
   */
  noProxy?: Location;
}

/**
 * Types whose answer depends on the proxies: A, AAAA, ANY (answered as A) and CNAME (present
 * only when no proxy is live).
 */
const LOCATED_TYPES = new Set<number>([TYPE.A, TYPE.AAAA, TYPE.ANY, TYPE.CNAME]);
/** A member nameserver's address answer is reused this long at most (liveness is re-checked). */
const MEMBER_ADDRESS_CACHE_MS = 300_000;

export type AnswerOptions = Pick<
  DnsServerOptions,
  | 'zones'
  | 'answerCount'
  | 'ttl'
  | 'localTtl'
  | 'cnameTtl'
  | 'nameservers'
  | 'nsTtl'
  | 'challengeTtl'
  | 'soa'
  | 'udpMaxPayload'
>;

/** The zones and nameservers of `options`, checked (DNS_ERR_CONFIG). */
export function zonesAndNameservers(
  options: AnswerOptions,
  self: NodeInfo,
): { zones: string[]; nameservers: NameserverConfig[] } {
  const zones = (options.zones ?? DEFAULT_ZONES).map(canonicalZone);
  if (zones.length === 0) throw new DnsConfigError('zones must not be empty');
  const nameservers = (
    options.nameservers ?? [
      {
        name: `ns.${zones[0]}`,
        ...(self.ipv4 ? { ipv4: self.ipv4 } : {}),
        ...(self.ipv6 ? { ipv6: self.ipv6 } : {}),
      },
    ]
  ).map((ns) => {
    const name = /^[a-z0-9_-]+(\.[a-z0-9_-]+)+\.?$/i.test(ns.name) ? canonicalZone(ns.name) : '';
    if (name === '') throw new DnsConfigError(`nameserver name "${ns.name}" is not a DNS name`);
    if (ns.ipv4 !== undefined && parseIp(ns.ipv4)?.length !== 4) {
      throw new DnsConfigError(`nameserver ${ns.name}: bad ipv4 "${ns.ipv4}"`);
    }
    if (ns.ipv6 !== undefined && parseIp(ns.ipv6)?.length !== 16) {
      throw new DnsConfigError(`nameserver ${ns.name}: bad ipv6 "${ns.ipv6}"`);
    }
    return { ...ns, name };
  });
  return { zones, nameservers };
}

/** The client subnet a query's ECS option names (`198.51.100.0/24`), for metas and logs. */
function ecsSubnet(q: Query): string | undefined {
  const ecs = q.opt?.ecs;
  return ecs ? `${formatIp(ecs.address)}/${ecs.sourcePrefix}` : undefined;
}

/** The RRL name of every synthesized answer in `zone` (interned: one string per zone). */
const wildcards = new Map<string, string>();
function wildcardOf(zone: string): string {
  let w = wildcards.get(zone);
  if (w === undefined) wildcards.set(zone, (w = `*.${zone}`));
  return w;
}

type Section = 'an' | 'ns' | 'ar';

export class AnswerBuilder {
  readonly #locator: Locator;
  readonly #random: Random;
  readonly #delegation: Delegation;
  readonly #challenges: ChallengeStore | undefined;
  readonly #zones: readonly string[];
  readonly #answerCount: number;
  readonly #ttl: number;
  readonly #localTtl: number;
  readonly #cnameTtl: number;
  readonly #nsTtl: number;
  readonly #challengeTtl: number;
  readonly #nameservers: NameserverConfig[];
  readonly #soa: Required<Omit<NonNullable<DnsServerOptions['soa']>, 'mname' | 'rname'>> & {
    mname?: string;
    rname?: string;
  };
  readonly #udpMax: number;
  /** The alias of a short name with delegation on: labels of the deepest sub-zone, and its TTL. */
  readonly #aliasSpec: { ttl: number; sub: readonly string[] } | undefined;

  /** Validates the options (DNS_ERR_CONFIG). */
  constructor(
    components: {
      locator: Locator;
      random: Random;
      delegation: Delegation;
      challenges?: ChallengeStore;
      zones: readonly string[];
      nameservers: NameserverConfig[];
    },
    options: AnswerOptions,
  ) {
    this.#locator = components.locator;
    this.#random = components.random;
    this.#delegation = components.delegation;
    this.#challenges = components.challenges;
    this.#zones = components.zones;
    this.#nameservers = components.nameservers;
    this.#answerCount = positiveInt('answerCount', options.answerCount ?? DEFAULT_ANSWER_COUNT);
    this.#ttl = nonNegativeInt('ttl', options.ttl ?? DEFAULT_TTL);
    this.#localTtl = nonNegativeInt('localTtl', options.localTtl ?? DEFAULT_LOCAL_TTL);
    this.#cnameTtl = nonNegativeInt('cnameTtl', options.cnameTtl ?? DEFAULT_CNAME_TTL);
    this.#nsTtl = nonNegativeInt('nsTtl', options.nsTtl ?? DEFAULT_NS_TTL);
    this.#challengeTtl = nonNegativeInt(
      'challengeTtl',
      options.challengeTtl ?? DEFAULT_CHALLENGE_TTL,
    );
    this.#soa = { ...DEFAULT_SOA, ...options.soa };
    this.#udpMax = Math.max(512, Math.min(65535, options.udpMaxPayload ?? DEFAULT_UDP_MAX_PAYLOAD));
    const d = this.#delegation;
    this.#aliasSpec = d.enabled
      ? {
          ttl: d.ttl,
          sub: Array.from({ length: d.levels }, (_, i) => `l${d.levels - 1 - i}`),
        }
      : undefined;
  }

  get zones(): readonly string[] {
    return this.#zones;
  }

  /** The UDP payload size we advertise and never exceed. */
  get udpMax(): number {
    return this.#udpMax;
  }

  /** Does the answer to `q` (a name of class `c`) depend on where the client is? */
  needsLocation(q: Query, c: NameClass): boolean {
    switch (c.kind) {
      case 'origin':
        return this.#alias(c) !== undefined || LOCATED_TYPES.has(q.qtype);
      case 'apex':
        if (c.level >= 0) return this.#delegation.enabled && isNsQuestion(q);
        return this.#nameservers.length > 1 && isNsQuestion(q);
      default:
        return false;
    }
  }

  /** Our OPT for a response to `q` (none when it had none), echoing its ECS with `scope`. */
  responseOpt(q: Query, scope: number): ResponseOpt | undefined {
    if (!q.opt) return undefined;
    const ecs = q.opt.ecs;
    return {
      udpSize: this.#udpMax,
      dnssecOk: q.opt.dnssecOk,
      ...(ecs
        ? {
            ecs: {
              family: ecs.family,
              sourcePrefix: ecs.sourcePrefix,
              scopePrefix: ecs.sourcePrefix === 0 ? 0 : scope,
              address: ecs.address,
            },
          }
        : {}),
    };
  }

  /**
   * A response without records (REFUSED, FORMERR, BADVERS, ...): header, the question as sent
   * and `opt` (by default the OPT record this query gets), with a meta saying why (`detail`).
   */
  bare(
    q: Query,
    msg: Uint8Array,
    rcode: number,
    aa: boolean,
    detail: string,
    rrlName = '',
    opt: ResponseOpt | undefined = this.responseOpt(q, 0),
  ): { bytes: Buffer; meta: AnswerMeta } {
    const bytes = encodeBare({
      id: q.id,
      queryFlags: q.flags,
      aa,
      tc: false,
      rcode,
      question: { msg, query: q },
      opt,
    });
    const meta = answerMeta({
      rcode,
      aa,
      method: 'none',
      detail,
      nodes: [],
      ecs: ecsSubnet(q),
      opt,
      rrlKind: rcode === RCODE.NXDOMAIN ? 'nxdomain' : 'error',
      rrlName,
    });
    return { bytes, meta };
  }

  /**
   * The answer to `q`, a name of class `c` (not 'outside': that is REFUSED, a bare answer).
   * `ctx` is the client's location context; required when {@link needsLocation} says so.
   */
  async build(
    q: Query,
    c: Exclude<NameClass, { kind: 'outside' }>,
    ctx: LocationContext | undefined,
  ): Promise<Built> {
    switch (c.kind) {
      case 'origin':
        if (this.#alias(c)) return this.#aliasAnswer(q, c, ctx!);
        return LOCATED_TYPES.has(q.qtype) ? this.#located(q, c, ctx!) : this.#originNodata(q, c);
      case 'invalid': {
        const w = this.#writer(c.zone);
        this.#soaRecord(w, 'ns', c.zone, c.level, true);
        return this.#built(
          q,
          w,
          RCODE.NXDOMAIN,
          this.#static('invalid name', 'nxdomain', c.zone.name),
          {
            cacheMs: this.#negTtl() * 1000,
          },
        );
      }
      case 'apex':
        return c.level < 0 ? this.#apex(q, c, ctx) : this.#subZoneApex(q, c, ctx);
      case 'nameserver': {
        const w = this.#writer(c.zone);
        const n = this.#addressRecords(w, 'an', ANSWER, c.ns, q.qtype, this.#nsTtl);
        if (n === 0) return this.#nodata(q, w, c.zone, -1, 'nameserver: no such type');
        return this.#built(q, w, RCODE.NOERROR, this.#static('nameserver address', q), {
          cacheMs: this.#nsTtl * 1000,
        });
      }
      case 'member':
        return this.#member(q, c);
      case 'acme-challenge':
        return this.#acme(q, c);
    }
  }

  // ───────────────────────────── origins ─────────────────────────────

  async #located(
    q: Query,
    c: Extract<NameClass, { kind: 'origin' }>,
    ctx: LocationContext,
  ): Promise<Built> {
    const loc = await this.#locator.locate(ctx, this.#answerCount);
    if (loc.method === 'no-proxy') return this.noProxy(q, c, loc);
    const d = this.#delegation;
    const level = c.level;
    const ns = d.enabled && level >= 0 ? await d.forResolver(ctx, level, this.#locator) : undefined;
    const opt = this.responseOpt(q, loc.scope);
    const v6 = q.qtype === TYPE.AAAA;
    const ttl = loc.local ? this.#localTtl : this.#ttl;
    const w = this.#writer(c.zone);
    const used: string[] = [];
    // A CNAME query while proxies are live: there is none (NODATA).
    if (q.qtype !== TYPE.CNAME) {
      for (const n of loc.nodes) {
        const address = v6 ? n.ipv6 : n.ipv4;
        if (!address) continue;
        if (v6) w.aaaa('an', ANSWER, ttl, address);
        else w.a('an', ANSWER, ttl, address);
        used.push(n.id);
      }
    }
    let detail = loc.detail;
    if (used.length === 0 && q.qtype !== TYPE.CNAME) {
      detail = `${detail}; no ${v6 ? 'IPv6' : 'IPv4'} address`;
    }
    if (used.length > 0 && ns) {
      this.#nsRecords(w, c.zone, ns);
      detail = `${detail}; NS level ${ns.level} (${ns.nodes.length})`;
    } else if (used.length === 0) {
      this.#soaRecord(w, 'ns', c.zone, level, true);
    }
    if (opt) w.opt(opt, RCODE.NOERROR);
    const answered = used.length > 0;
    const meta = answerMeta({
      rcode: RCODE.NOERROR,
      aa: true,
      method: loc.method,
      detail,
      nodes: used.length > 0 ? used : loc.nodes.map((n) => n.id),
      ttl,
      ecs: ecsSubnet(q),
      scope: opt?.ecs?.scopePrefix,
      opt,
      // Every name under the zone is synthesized (like a wildcard): rate limited as one name per
      // zone, whatever the name and type, so rotating names does not reset a client's budget.
      rrlKind: answered ? 'answer' : 'nodata',
      rrlName: answered ? wildcardOf(c.zone.name) : c.zone.name,
    });
    const liveIds = [...new Set([...used, ...(ns?.nodes.map((n) => n.id) ?? [])])];
    return {
      template: w.finish(true, RCODE.NOERROR),
      meta,
      cacheMs: ttl * 1000,
      located: true,
      liveIds,
    };
  }

  /**
   * A short name with delegation on: only the CNAME to the same name in the deepest sub-zone
   * (as Coral's DNAME did), whatever the type, with the NS records of the resolver's level in
   * authority. The target's records are left out on purpose: the resolver asks for them the
   * deepest sub-zone's nameservers it knows — a nearby one once it has been told of one — not
   * whichever nameserver of the zone it met first.
   */
  async #aliasAnswer(
    q: Query,
    c: Extract<NameClass, { kind: 'origin' }>,
    ctx: LocationContext,
  ): Promise<Built> {
    const d = this.#delegation;
    const alias = this.#alias(c)!;
    const ns = await d.forResolver(ctx, d.levels - 1, this.#locator);
    const w = this.#writer(c.zone);
    if (ns) this.#nsRecords(w, c.zone, ns);
    const opt = this.responseOpt(q, 0);
    if (opt) w.opt(opt, RCODE.NOERROR);
    return {
      template: w.finish(true, RCODE.NOERROR, alias),
      meta: answerMeta({
        rcode: RCODE.NOERROR,
        aa: true,
        method: 'none',
        detail: `alias into ${c.zone.subZones[d.levels - 1]}; ${
          ns ? `NS level ${ns.level} (${ns.nodes.length})` : 'no nameserver member'
        }`,
        nodes: [],
        ttl: alias.ttl,
        ecs: ecsSubnet(q),
        scope: opt?.ecs?.scopePrefix,
        opt,
        rrlKind: 'answer',
        rrlName: wildcardOf(c.zone.name),
      }),
      cacheMs: Math.min(alias.ttl, ns ? ns.ttl : alias.ttl, this.#soa.ttl) * 1000,
      located: true,
      liveIds: ns?.nodes.map((n) => n.id) ?? [],
    };
  }

  /** With delegation on, a short name is an alias of the same name in the deepest sub-zone. */
  #alias(c: { level: number }): { ttl: number; sub: readonly string[] } | undefined {
    return c.level < 0 ? this.#aliasSpec : undefined;
  }

  #originNodata(q: Query, c: Extract<NameClass, { kind: 'origin' }>): Built {
    const w = this.#writer(c.zone);
    this.#soaRecord(w, 'ns', c.zone, c.level, true);
    const opt = this.responseOpt(q, 0);
    if (opt) w.opt(opt, RCODE.NOERROR);
    return {
      template: w.finish(true, RCODE.NOERROR),
      meta: answerMeta({
        ...this.#static('origin: type not served', 'nodata', c.zone.name),
        rcode: RCODE.NOERROR,
        aa: true,
        ecs: ecsSubnet(q),
        opt,
      }),
      cacheMs: this.#negTtl() * 1000,
      located: false,
      liveIds: [],
    };
  }

  /**
   * The answer for a name whose location found no live proxy (docs/dnssrv.md, "No live proxy"):
   * it depends on the name, so it is built for this query only.
   */
  noProxy(q: Query, c: Extract<NameClass, { kind: 'origin' }>, loc: Location): Built {
    const opt = this.responseOpt(q, loc.scope);
    const w = this.#writer(c.zone);
    const level = c.level;
    let rcode: number = RCODE.NOERROR;
    let detail: string;
    let rrlKind: RrlKind = 'answer';
    let answered = false;
    const ip = parseIPv4(c.host);
    if (c.form === 'one-label') {
      // Its client speaks to the CDN's port and (https) expects the zone's certificate: the
      // origin can serve neither. SERVFAIL, uncached, so the resolver tries another nameserver.
      rcode = RCODE.SERVFAIL;
      detail = 'a one-label name has no origin fallback';
    } else if (ip && !isPublicIPv4(ip)) {
      rcode = RCODE.SERVFAIL;
      detail = 'the origin is not a public address';
    } else if (ip) {
      // A CNAME to `192.0.2.7.` would not resolve: the address itself.
      if (q.qtype === TYPE.A || q.qtype === TYPE.ANY) {
        w.a('an', ANSWER, this.#cnameTtl, c.host);
        answered = true;
        detail = 'A record of the IPv4 origin';
      } else {
        detail = 'the IPv4 origin has no such record';
      }
    } else {
      w.cname('an', ANSWER, this.#cnameTtl, c.host);
      answered = true;
      detail = 'CNAME to the origin';
    }
    if (rcode === RCODE.SERVFAIL) {
      rrlKind = 'error';
    } else if (!answered) {
      rrlKind = 'nodata';
      this.#soaRecord(w, 'ns', c.zone, level, true);
    }
    if (opt) w.opt(opt, rcode);
    return {
      template: w.finish(rcode !== RCODE.SERVFAIL, rcode),
      meta: answerMeta({
        rcode,
        aa: rcode !== RCODE.SERVFAIL,
        method: 'no-proxy',
        detail: `${loc.detail}: ${detail}`,
        nodes: [],
        ttl: answered ? this.#cnameTtl : undefined,
        ecs: ecsSubnet(q),
        scope: opt?.ecs?.scopePrefix,
        opt,
        rrlKind,
        rrlName:
          rrlKind === 'answer' ? wildcardOf(c.zone.name) : rrlKind === 'nodata' ? c.zone.name : '',
      }),
      cacheMs: 0,
      located: true,
      liveIds: [],
      noProxy: loc,
    };
  }

  // ───────────────────────────── the zone apex and the sub-zones ─────────────────────────────

  async #apex(
    q: Query,
    c: Extract<NameClass, { kind: 'apex' }>,
    ctx: LocationContext | undefined,
  ): Promise<Built> {
    const zone = c.zone;
    const w = this.#writer(zone);
    const soaTtl = this.#soa.ttl;
    if (q.qtype === TYPE.SOA) {
      this.#soaRecord(w, 'an', zone, -1, false);
      return this.#built(q, w, RCODE.NOERROR, this.#static('apex SOA', q), {
        cacheMs: soaTtl * 1000,
      });
    }
    if (!isNsQuestion(q)) return this.#nodata(q, w, zone, -1, 'apex: no such type');
    if (q.qtype === TYPE.ANY) this.#soaRecord(w, 'an', zone, -1, false);
    if (this.needsLocation(q, c)) {
      // Coral's nameservers are also proxies: order them as the client's nearest proxies.
      const loc = await this.#locator.locate(
        ctx!,
        Math.max(this.#answerCount, this.#nameservers.length),
      );
      const ordered = this.#nameserversNear(loc.nodes);
      for (const n of ordered) w.ns('an', ANSWER, this.#nsTtl, n.name);
      for (const n of ordered) this.#addressRecords(w, 'ar', n.name, n, TYPE.ANY, this.#nsTtl);
      const near = loc.nodes.filter((node) => ordered.some((n) => sameHost(n, node)));
      const opt = this.responseOpt(q, loc.scope);
      if (opt) w.opt(opt, RCODE.NOERROR);
      return {
        template: w.finish(true, RCODE.NOERROR),
        meta: answerMeta({
          rcode: RCODE.NOERROR,
          aa: true,
          method: loc.method,
          detail: `nameservers nearest first (${near.length} matched): ${loc.detail}`,
          nodes: near.map((n) => n.id),
          ecs: ecsSubnet(q),
          scope: opt?.ecs?.scopePrefix,
          opt,
          rrlKind: 'answer',
          rrlName: `${q.qname}/${q.qtype}`,
        }),
        cacheMs: Math.min(this.#nsTtl, soaTtl) * 1000,
        located: true,
        liveIds: [],
      };
    }
    for (const n of this.#nameservers) w.ns('an', ANSWER, this.#nsTtl, n.name);
    for (const n of this.#nameservers) {
      this.#addressRecords(w, 'ar', n.name, n, TYPE.ANY, this.#nsTtl);
    }
    const detail = q.qtype === TYPE.NS ? 'apex NS' : 'apex ANY';
    return this.#built(q, w, RCODE.NOERROR, this.#static(detail, q), {
      cacheMs: (q.qtype === TYPE.NS ? Math.min(this.#nsTtl, 3600) : soaTtl) * 1000,
    });
  }

  /** `l2.l1.l0.<zone>` itself: SOA and NS of the sub-zone when delegation is on, else nothing. */
  async #subZoneApex(
    q: Query,
    c: Extract<NameClass, { kind: 'apex' }>,
    ctx: LocationContext | undefined,
  ): Promise<Built> {
    const d = this.#delegation;
    const w = this.#writer(c.zone);
    if (!d.enabled) return this.#nodata(q, w, c.zone, -1, 'sub-zone: delegation off');
    if (q.qtype === TYPE.SOA) {
      this.#soaRecord(w, 'an', c.zone, c.level, false);
      return this.#built(q, w, RCODE.NOERROR, this.#static('sub-zone SOA', q), {
        cacheMs: this.#soa.ttl * 1000,
      });
    }
    if (!isNsQuestion(q)) return this.#nodata(q, w, c.zone, c.level, 'sub-zone: no such type');
    if (q.qtype === TYPE.ANY) this.#soaRecord(w, 'an', c.zone, c.level, false);
    const set =
      c.level === 0 && ctx
        ? await d.forResolver({ ...ctx, rttLevel: 0 }, 0, this.#locator)
        : undefined;
    const ns = set ?? d.atLevel(c.level);
    const owner = c.zone.subZones[c.level]!;
    let detail: string;
    if (ns.nodes.length > 0) {
      for (const n of ns.nodes) {
        w.ns('an', ANSWER, ns.ttl, memberNameserverName(n.id, owner));
      }
      this.#glue(w, owner, ns);
      detail = `sub-zone NS: level ${c.level} (${ns.nodes.length})`;
    } else {
      // No member runs DNS on the port: the fleet's configured nameservers serve it too.
      for (const n of this.#nameservers) w.ns('an', ANSWER, this.#nsTtl, n.name);
      for (const n of this.#nameservers) {
        this.#addressRecords(w, 'ar', n.name, n, TYPE.ANY, this.#nsTtl);
      }
      detail = `sub-zone NS: level ${c.level} has no nameserver, the configured ones`;
    }
    const built = this.#built(q, w, RCODE.NOERROR, this.#static(detail, q), {
      cacheMs: Math.min(ns.ttl, this.#soa.ttl) * 1000,
      liveIds: ns.nodes.map((n) => n.id),
    });
    return { ...built, located: true };
  }

  /** A member's nameserver name: its address while it is a live nameserver member. */
  #member(q: Query, c: Extract<NameClass, { kind: 'member' }>): Built {
    const w = this.#writer(c.zone);
    const m = this.#delegation.enabled ? this.#delegation.member(c.id) : 'unknown';
    if (m === 'busy') {
      return this.#built(
        q,
        w,
        RCODE.SERVFAIL,
        this.#static('member lookups over their rate', 'error', ''),
        { cacheMs: 0, aa: false },
      );
    }
    if (m === 'unknown') {
      this.#soaRecord(w, 'ns', c.zone, c.level, true);
      return this.#built(
        q,
        w,
        RCODE.NXDOMAIN,
        this.#static('not a live nameserver member', 'nxdomain', c.zone.name),
        { cacheMs: 0 },
      );
    }
    const ttl = this.#delegation.ttlOf(c.level);
    const n = this.#addressRecords(w, 'an', ANSWER, m, q.qtype, ttl);
    if (n === 0) return this.#nodata(q, w, c.zone, c.level, 'member nameserver: no such type');
    return this.#built(q, w, RCODE.NOERROR, this.#static('member nameserver address', q), {
      cacheMs: Math.min(ttl * 1000, MEMBER_ADDRESS_CACHE_MS),
      liveIds: [m.id],
    });
  }

  #acme(q: Query, c: Extract<NameClass, { kind: 'acme-challenge' }>): Built {
    // RFC 8555 §8.4: every value set is answered (a wildcard plus apex order has two), read from
    // the store on each query and never cached here, so set and remove show at once.
    const zoneName = c.level < 0 ? c.zone.name : c.zone.subZones[c.level]!;
    const values =
      q.qtype === TYPE.TXT || q.qtype === TYPE.ANY ? (this.#challenges?.txt(zoneName) ?? []) : [];
    const w = this.#writer(c.zone);
    if (values.length === 0) {
      return { ...this.#nodata(q, w, c.zone, c.level, 'no ACME challenge value'), cacheMs: 0 };
    }
    const ttl = this.#challengeTtl;
    for (const v of values) w.txt('an', ANSWER, ttl, v);
    return this.#built(
      q,
      w,
      RCODE.NOERROR,
      { ...this.#static(`${values.length} ACME challenge value(s)`, q), ttl },
      { cacheMs: 0 },
    );
  }

  // ───────────────────────────── helpers ─────────────────────────────

  #writer(zone: ZoneInfo | undefined): BodyWriter {
    return new BodyWriter(zone?.name ?? '');
  }

  /** A static meta: RRL per name and type for answers, per zone otherwise. */
  #static(
    detail: string,
    kindOrQuery: RrlKind | Query,
    rrlName = '',
  ): Omit<AnswerMeta, 'aa' | 'rcode'> {
    const q = typeof kindOrQuery === 'string' ? undefined : kindOrQuery;
    return {
      method: 'none',
      detail,
      nodes: [],
      rrlKind: q ? 'answer' : (kindOrQuery as RrlKind),
      rrlName: q ? `${q.qname}/${q.qtype}` : rrlName,
    };
  }

  /** Finish a static (not located) answer: OPT, header, meta. */
  #built(
    q: Query,
    w: BodyWriter,
    rcode: number,
    meta: Omit<AnswerMeta, 'aa' | 'rcode'>,
    o: { cacheMs: number; liveIds?: readonly string[]; aa?: boolean },
  ): Built {
    const opt = this.responseOpt(q, 0);
    if (opt) w.opt(opt, rcode);
    const aa = o.aa ?? true;
    return {
      template: w.finish(aa, rcode),
      meta: answerMeta({ ...meta, rcode, aa, ecs: ecsSubnet(q), opt }),
      cacheMs: o.cacheMs,
      located: false,
      liveIds: o.liveIds ?? [],
    };
  }

  /** NOERROR with no answers (NODATA): the SOA in authority for negative caching (RFC 2308). */
  #nodata(
    q: Query,
    w: BodyWriter,
    zone: ZoneInfo | undefined,
    level: number,
    detail: string,
  ): Built {
    if (zone) this.#soaRecord(w, 'ns', zone, level, true);
    return this.#built(q, w, RCODE.NOERROR, this.#static(detail, 'nodata', zone?.name ?? ''), {
      cacheMs: this.#negTtl() * 1000,
    });
  }

  #negTtl(): number {
    return Math.min(this.#soa.ttl, this.#soa.minimum);
  }

  /** The SOA of `zone` (level ≥ 0: of that sub-zone); negative: TTL = the negative TTL. */
  #soaRecord(
    w: BodyWriter,
    section: Section,
    zone: ZoneInfo,
    level: number,
    negative: boolean,
  ): void {
    const s = this.#soa;
    const fields: SoaFields = {
      mname: s.mname ?? this.#nameservers[0]?.name ?? `ns.${zone.name}`,
      rname: s.rname ?? `hostmaster.${zone.name}`,
      serial: s.serial,
      refresh: s.refresh,
      retry: s.retry,
      expire: s.expire,
      minimum: s.minimum,
    };
    const owner = level < 0 ? zone.name : zone.subZones[level]!;
    w.soa(section, owner, negative ? this.#negTtl() : s.ttl, fields);
  }

  /** NS records of a sub-zone in authority, and their glue. */
  #nsRecords(w: BodyWriter, zone: ZoneInfo, ns: NameserverSet): void {
    const owner = zone.subZones[ns.level]!;
    for (const n of ns.nodes) w.ns('ns', owner, ns.ttl, memberNameserverName(n.id, owner));
    this.#glue(w, owner, ns);
  }

  #glue(w: BodyWriter, owner: string, ns: NameserverSet): void {
    for (const n of ns.nodes) {
      this.#addressRecords(w, 'ar', memberNameserverName(n.id, owner), n, TYPE.ANY, ns.ttl);
    }
  }

  /** A/AAAA of `host` (per `qtype`: A, AAAA or both for ANY); returns how many. */
  #addressRecords(
    w: BodyWriter,
    section: Section,
    owner: typeof ANSWER | string,
    host: { ipv4?: string; ipv6?: string },
    qtype: number,
    ttl: number,
  ): number {
    let n = 0;
    if ((qtype === TYPE.A || qtype === TYPE.ANY) && host.ipv4) {
      w.a(section, owner, ttl, host.ipv4);
      n++;
    }
    if ((qtype === TYPE.AAAA || qtype === TYPE.ANY) && host.ipv6) {
      w.aaaa(section, owner, ttl, host.ipv6);
      n++;
    }
    return n;
  }

  /**
   * Nameservers that are (at the address of) one of `nodes`, in the nodes' order, then the rest
   * rotated at random so load spreads.
   */
  #nameserversNear(nodes: readonly NodeInfo[]): NameserverConfig[] {
    const first: NameserverConfig[] = [];
    for (const node of nodes) {
      for (const ns of this.#nameservers) {
        if (!first.includes(ns) && sameHost(ns, node)) first.push(ns);
      }
    }
    const rest = this.#nameservers.filter((ns) => !first.includes(ns));
    const start = rest.length > 1 ? this.#random.int(rest.length) : 0;
    return [...first, ...rest.slice(start), ...rest.slice(0, start)];
  }
}

function isNsQuestion(q: Query): boolean {
  return q.qtype === TYPE.NS || q.qtype === TYPE.ANY;
}

/** Is this nameserver at one of the node's addresses? */
function sameHost(ns: NameserverConfig, node: NodeInfo): boolean {
  return (
    (ns.ipv4 !== undefined && ns.ipv4 === node.ipv4) ||
    (ns.ipv6 !== undefined && ns.ipv6 === node.ipv6)
  );
}
