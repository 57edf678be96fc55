/**
 * The vocabulary answers are written in: the zone's SOA and NS records, glue, NODATA, the OPT
 * record, metas — shared by the origin answers (`origin-answers.ts`) and the zone's own names
 * (`zone-answers.ts`). Every answer is a template (`wire/template.ts`).
 */
import type { NameserverSet } from '../delegation/delegation.js';
import type { Location } from '../locate/locator.js';
import { memberNameserverName, type ZoneInfo } from '../names/classify.js';
import { formatIp } from '../net/ip.js';
import type { RrlKind } from '../rrl/response-rate-limiter.js';
import { DEFAULT_SOA, type NameserverConfig, type SoaConfig } from '../types.js';
import { RCODE, TYPE } from '../wire/constants.js';
import type { Query } from '../wire/query.js';
import type { ResponseOpt } from '../wire/records.js';
import { type ANSWER, BodyWriter, type SoaFields, type Template } from '../wire/template.js';
import { type AnswerMeta, answerMeta } from './meta.js';

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
   * origin, ...), so a query of another name of the family builds its own (`AnswerBuilder.noProxy`).
   */
  noProxy?: Location;
}

export type Section = 'an' | 'ns' | 'ar';

/** The client subnet a query's ECS option names (`198.51.100.0/24`), for metas and logs. */
export function ecsSubnet(q: Query): string | undefined {
  const ecs = q.opt?.ecs;
  return ecs ? `${formatIp(ecs.address)}/${ecs.sourcePrefix}` : undefined;
}

/** The RRL name of every synthesized answer in `zone` (interned: one string per zone). */
const wildcards = new Map<string, string>();
export function wildcardOf(zone: string): string {
  let w = wildcards.get(zone);
  if (w === undefined) wildcards.set(zone, (w = `*.${zone}`));
  return w;
}

export class AnswerKit {
  readonly nameservers: readonly NameserverConfig[];
  readonly nsTtl: number;
  readonly soa: Required<Omit<SoaConfig, 'mname' | 'rname'>> & { mname?: string; rname?: string };
  /** The UDP payload size we advertise and never exceed. */
  readonly udpMax: number;

  constructor(options: {
    nameservers: readonly NameserverConfig[];
    nsTtl: number;
    soa: SoaConfig | undefined;
    udpMax: number;
  }) {
    this.nameservers = options.nameservers;
    this.nsTtl = options.nsTtl;
    this.soa = { ...DEFAULT_SOA, ...options.soa };
    this.udpMax = options.udpMax;
  }

  /** Our OPT for a response to `q` (none when it had none), echoing its ECS with `scope`. */
  responseOpt(q: Query, scope: number): ResponseOpt | undefined {
    if (!q.opt) return undefined;
    const ecs = q.opt.ecs;
    return {
      udpSize: this.udpMax,
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

  writer(zone: ZoneInfo | undefined): BodyWriter {
    return new BodyWriter(zone?.name ?? '');
  }

  /** A static meta: RRL per name and type for answers, per zone otherwise. */
  static(
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
  built(
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
  nodata(
    q: Query,
    w: BodyWriter,
    zone: ZoneInfo | undefined,
    level: number,
    detail: string,
  ): Built {
    if (zone) this.soaRecord(w, 'ns', zone, level, true);
    return this.built(q, w, RCODE.NOERROR, this.static(detail, 'nodata', zone?.name ?? ''), {
      cacheMs: this.negTtl() * 1000,
    });
  }

  negTtl(): number {
    return Math.min(this.soa.ttl, this.soa.minimum);
  }

  /** The SOA of `zone` (level ≥ 0: of that sub-zone); negative: TTL = the negative TTL. */
  soaRecord(
    w: BodyWriter,
    section: Section,
    zone: ZoneInfo,
    level: number,
    negative: boolean,
  ): void {
    const s = this.soa;
    const fields: SoaFields = {
      mname: s.mname ?? this.nameservers[0]?.name ?? `ns.${zone.name}`,
      rname: s.rname ?? `hostmaster.${zone.name}`,
      serial: s.serial,
      refresh: s.refresh,
      retry: s.retry,
      expire: s.expire,
      minimum: s.minimum,
    };
    const owner = level < 0 ? zone.name : zone.subZones[level]!;
    w.soa(section, owner, negative ? this.negTtl() : s.ttl, fields);
  }

  /** NS records of a sub-zone in authority, and their glue. */
  nsRecords(w: BodyWriter, zone: ZoneInfo, ns: NameserverSet): void {
    const owner = zone.subZones[ns.level]!;
    for (const n of ns.nodes) w.ns('ns', owner, ns.ttl, memberNameserverName(n.id, owner));
    this.glue(w, owner, ns);
  }

  glue(w: BodyWriter, owner: string, ns: NameserverSet): void {
    for (const n of ns.nodes) {
      this.addressRecords(w, 'ar', memberNameserverName(n.id, owner), n, TYPE.ANY, ns.ttl);
    }
  }

  /** A/AAAA of `host` (per `qtype`: A, AAAA or both for ANY); returns how many. */
  addressRecords(
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
}
