/**
 * Building answers: which records a question gets (proxies, CNAME to the origin, apex SOA/NS with
 * glue, nameserver addresses, NXDOMAIN/NODATA with the SOA, REFUSED) and their encoding. The
 * location of the client comes from the {@link Locator}; the encoding of records goes through
 * dns2 (`wire/encode.ts`). The server caches what this returns.
 */
import type { Random } from '@coral/testkit';
import { DnsConfigError } from '../errors.js';
import { nonNegativeInt, positiveInt } from '../server/validate.js';
import type { LocationContext, Locator } from '../locate/locator.js';
import { normalizeZone, parseCoralName } from '../names/coral-name.js';
import { formatIp, parseIp } from '../net/ip.js';
import type { NodeInfo } from '../node-directory.js';
import type { RrlKind } from '../rrl/response-rate-limiter.js';
import {
  DEFAULT_ANSWER_COUNT,
  DEFAULT_CNAME_TTL,
  DEFAULT_LOCAL_TTL,
  DEFAULT_NS_TTL,
  DEFAULT_SOA,
  DEFAULT_TTL,
  DEFAULT_UDP_MAX_PAYLOAD,
  DEFAULT_ZONES,
  type DnsServerOptions,
  type LocationMethod,
  type NameserverConfig,
} from '../server/types.js';
import { RCODE, TYPE } from '../wire/constants.js';
import { encodeBare, encodeResponse } from '../wire/encode.js';
import { type Query, questionLabels } from '../wire/query.js';
import type { ResourceRecord, ResponseOpt } from '../wire/records.js';

/** The resolver a query came from. */
export interface Peer {
  address: string;
  port: number;
  bytes: Uint8Array;
}

/** Everything about a response except its bytes: what is logged, counted and rate-limited. */
export interface AnswerMeta {
  name: string;
  type: number;
  rcode: number;
  aa: boolean;
  method: LocationMethod | 'none';
  detail: string;
  nodes: string[];
  ttl?: number;
  ecs?: string;
  scope?: number;
  opt?: ResponseOpt;
  rrlKind: RrlKind;
  rrlName: string;
}

/** The client subnet a query's ECS option names (`198.51.100.0/24`), for metas and logs. */
function ecsSubnet(q: Query): string | undefined {
  const ecs = q.opt?.ecs;
  return ecs ? `${formatIp(ecs.address)}/${ecs.sourcePrefix}` : undefined;
}

/**
 * Details repeat across answers ('rtt 3.10 ms < level-2 20 ms → level-2 cluster'): cached metas
 * share one string each instead of keeping a copy per answer. Bounded; emptied when full.
 */
const details = new Map<string, string>();
const MAX_DETAILS = 4096;

function internDetail(s: string): string {
  const known = details.get(s);
  if (known !== undefined) return known;
  if (details.size >= MAX_DETAILS) details.clear();
  details.set(s, s);
  return s;
}

/**
 * An {@link AnswerMeta} with every field present, in one order. Built by spreading objects of
 * varying shapes, metas got a hidden class each (~450 bytes per cached answer, and megamorphic
 * reads of them on every cache hit); this keeps one shape.
 */
export function answerMeta(m: AnswerMeta): AnswerMeta {
  return {
    name: m.name,
    type: m.type,
    rcode: m.rcode,
    aa: m.aa,
    method: m.method,
    detail: internDetail(m.detail),
    nodes: m.nodes,
    ttl: m.ttl,
    ecs: m.ecs,
    scope: m.scope,
    opt: m.opt,
    rrlKind: m.rrlKind,
    rrlName: m.rrlName,
  };
}

export interface BuiltAnswer {
  bytes: Buffer;
  meta: AnswerMeta;
  /** How long the encoded answer may be reused (0 = never). */
  cacheMs: number;
  /** True when the answer does not depend on where the client is. */
  static: boolean;
  bucket?: string;
}

/**
 * Types whose answer depends on the proxies: A, AAAA, ANY (answered as A) and CNAME (present
 * only when no proxy is live).
 */
const LOCATED_TYPES = new Set<number>([TYPE.A, TYPE.AAAA, TYPE.ANY, TYPE.CNAME]);

export type AnswerOptions = Pick<
  DnsServerOptions,
  | 'zones'
  | 'answerCount'
  | 'ttl'
  | 'localTtl'
  | 'cnameTtl'
  | 'nameservers'
  | 'nsTtl'
  | 'soa'
  | 'udpMaxPayload'
>;

export class AnswerBuilder {
  readonly #locator: Locator;
  readonly #random: Random;
  readonly #zones: string[];
  readonly #answerCount: number;
  readonly #ttl: number;
  readonly #localTtl: number;
  readonly #cnameTtl: number;
  readonly #nsTtl: number;
  readonly #nameservers: NameserverConfig[];
  readonly #nsByName = new Map<string, NameserverConfig>();
  readonly #soa: Required<Omit<NonNullable<DnsServerOptions['soa']>, 'mname' | 'rname'>> & {
    mname?: string;
    rname?: string;
  };
  readonly #udpMax: number;

  /** Validates the options (DNS_ERR_CONFIG). `self` supplies the default nameserver's addresses. */
  constructor(
    components: { locator: Locator; random: Random; self: NodeInfo },
    options: AnswerOptions,
  ) {
    this.#locator = components.locator;
    this.#random = components.random;
    this.#zones = (options.zones ?? DEFAULT_ZONES).map(normalizeZone);
    if (
      this.#zones.length === 0 ||
      this.#zones.some((z) => !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(z))
    ) {
      throw new DnsConfigError(
        `zones must be non-empty DNS names, got ${JSON.stringify(options.zones)}`,
      );
    }
    this.#answerCount = positiveInt('answerCount', options.answerCount ?? DEFAULT_ANSWER_COUNT);
    this.#ttl = nonNegativeInt('ttl', options.ttl ?? DEFAULT_TTL);
    this.#localTtl = nonNegativeInt('localTtl', options.localTtl ?? DEFAULT_LOCAL_TTL);
    this.#cnameTtl = nonNegativeInt('cnameTtl', options.cnameTtl ?? DEFAULT_CNAME_TTL);
    this.#nsTtl = nonNegativeInt('nsTtl', options.nsTtl ?? DEFAULT_NS_TTL);
    this.#soa = { ...DEFAULT_SOA, ...options.soa };
    const self = components.self;
    this.#nameservers = (
      options.nameservers ?? [
        {
          name: `ns.${this.#zones[0]}`,
          ...(self.ipv4 ? { ipv4: self.ipv4 } : {}),
          ...(self.ipv6 ? { ipv6: self.ipv6 } : {}),
        },
      ]
    ).map((ns) => {
      const name = normalizeZone(ns.name);
      if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/.test(name)) {
        throw new DnsConfigError(`nameserver name "${ns.name}" is not a DNS name`);
      }
      if (ns.ipv4 !== undefined && parseIp(ns.ipv4)?.length !== 4) {
        throw new DnsConfigError(`nameserver ${ns.name}: bad ipv4 "${ns.ipv4}"`);
      }
      if (ns.ipv6 !== undefined && parseIp(ns.ipv6)?.length !== 16) {
        throw new DnsConfigError(`nameserver ${ns.name}: bad ipv6 "${ns.ipv6}"`);
      }
      return { ...ns, name };
    });
    for (const ns of this.#nameservers) this.#nsByName.set(ns.name, ns);
    this.#udpMax = Math.max(512, Math.min(65535, options.udpMaxPayload ?? DEFAULT_UDP_MAX_PAYLOAD));
  }

  get zones(): readonly string[] {
    return this.#zones;
  }

  /** The UDP payload size we advertise and never exceed. */
  get udpMax(): number {
    return this.#udpMax;
  }

  /** Does the answer to `q` depend on where the client is? */
  needsLocation(q: Query): boolean {
    if (this.#nsByName.has(q.qname)) return false;
    const kind = parseCoralName(q.qname, this.#zones).kind;
    if (kind === 'apex') return this.#nsNearestFirst(q);
    return kind === 'origin' && LOCATED_TYPES.has(q.qtype);
  }

  /** Apex NS (and ANY) answers list the nameservers nearest the client first, when there are several. */
  #nsNearestFirst(q: Query): boolean {
    return this.#nameservers.length > 1 && (q.qtype === TYPE.NS || q.qtype === TYPE.ANY);
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
   * A response without records (REFUSED, NXDOMAIN, BADVERS, ...): header, the question as sent and
   * `opt` (by default the OPT record this query gets), with a meta saying why (`detail`).
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
      name: q.qname,
      type: q.qtype,
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
   * The full answer to `q` (the query bytes `msg` are echoed where needed). `ctxIn` is the
   * location context when the caller already computed it (it keys the cache).
   */
  async build(
    q: Query,
    peer: Peer,
    ctxIn: LocationContext | undefined,
    msg: Uint8Array,
  ): Promise<BuiltAnswer> {
    const qname = questionLabels(msg, q).join('.');
    const opt0 = this.responseOpt(q, 0);
    const base = { name: q.qname, type: q.qtype, nodes: [] as string[] };

    // Names that needed escaping are never origins: NXDOMAIN in a zone, REFUSED outside.
    if (q.escaped) {
      const parsed = parseCoralName(q.qname, this.#zones);
      const zone = parsed.kind === 'outside' ? undefined : parsed.zone;
      const inZone = zone !== undefined;
      const detail = inZone ? 'name cannot be an origin' : 'outside the zones';
      const rcode = inZone ? RCODE.NXDOMAIN : RCODE.REFUSED;
      return {
        ...this.bare(q, msg, rcode, inZone, detail, zone ?? '', opt0),
        cacheMs: 0,
        static: true,
      };
    }

    const respond = (
      rcode: number,
      aa: boolean,
      answers: ResourceRecord[],
      authorities: ResourceRecord[],
      additionals: ResourceRecord[],
      meta: Omit<AnswerMeta, 'name' | 'type' | 'rcode' | 'aa' | 'nodes' | 'opt'> & {
        nodes?: string[];
      },
      opt: ResponseOpt | undefined,
      cacheMs: number,
      bucket?: string,
    ): BuiltAnswer => {
      // Literals rather than spreads on this path: see the note on toDns2 in wire/encode.ts.
      const bytes = encodeResponse({
        id: q.id,
        rd: q.rd,
        cd: q.cd,
        aa,
        rcode,
        question: { name: qname, type: q.qtype, class: q.qclass },
        answers,
        authorities,
        additionals,
        opt,
      });
      return {
        bytes,
        meta: answerMeta({
          name: base.name,
          type: base.type,
          rcode,
          aa,
          method: meta.method,
          detail: meta.detail,
          nodes: meta.nodes ?? base.nodes,
          ttl: meta.ttl,
          ecs: ecsSubnet(q),
          scope: meta.scope,
          opt,
          rrlKind: meta.rrlKind,
          rrlName: meta.rrlName,
        }),
        cacheMs,
        static: bucket === undefined,
        bucket,
      };
    };

    const staticMeta = (
      detail: string,
      rrlKind: RrlKind = 'answer',
      rrlName = `${q.qname}/${q.qtype}`,
    ) => ({
      method: 'none' as const,
      detail,
      rrlKind,
      rrlName,
    });

    // NOERROR with no answers (NODATA): the zone's SOA in authority for negative caching.
    // Rate limited per zone, like NXDOMAIN (BIND: empty answers are counted by their zone).
    const nodata = (zone: string | undefined, detail: string) =>
      respond(
        RCODE.NOERROR,
        true,
        [],
        zone ? [this.#soaRecord(zone, true)] : [],
        [],
        staticMeta(detail, 'nodata', zone ?? ''),
        opt0,
        this.#negTtl() * 1000,
      );

    // The fleet's nameservers.
    const ns = this.#nsByName.get(q.qname);
    if (ns) {
      const zone = this.#zoneOf(q.qname);
      const answers = this.#addressRecords(qname, ns, q.qtype);
      if (answers.length > 0) {
        return respond(
          RCODE.NOERROR,
          true,
          answers,
          [],
          [],
          staticMeta('nameserver address'),
          opt0,
          this.#nsTtl * 1000,
        );
      }
      return nodata(zone, 'nameserver: no such type');
    }

    const parsed = parseCoralName(q.qname, this.#zones);
    switch (parsed.kind) {
      case 'outside': {
        const refused = this.bare(q, msg, RCODE.REFUSED, false, 'outside the zones', '', opt0);
        return { ...refused, cacheMs: 60_000, static: true };
      }
      case 'invalid':
        return respond(
          RCODE.NXDOMAIN,
          true,
          [],
          [this.#soaRecord(parsed.zone, true)],
          [],
          staticMeta(parsed.reason, 'nxdomain', parsed.zone),
          opt0,
          this.#negTtl() * 1000,
        );
      case 'apex': {
        const soa = this.#soaRecord(parsed.zone, false, qname);
        if (this.#nsNearestFirst(q)) {
          // Coral's nameservers are also proxies: order them as the client's nearest proxies.
          const ctx = ctxIn ?? this.#locator.context(peer.address, peer.bytes, q.opt?.ecs);
          const loc = await this.#locator.locate(
            ctx,
            Math.max(this.#answerCount, this.#nameservers.length),
          );
          const ordered = this.#nameserversNear(loc.nodes);
          const opt = this.responseOpt(q, loc.scope);
          const records = ordered.map((n): ResourceRecord => nsRecord(qname, n, this.#nsTtl));
          const glue = ordered.flatMap((n) => [
            ...this.#addressRecords(n.name, n, TYPE.A),
            ...this.#addressRecords(n.name, n, TYPE.AAAA),
          ]);
          const near = loc.nodes
            .filter((node) => ordered.some((n) => sameHost(n, node)))
            .map((node) => node.id);
          return respond(
            RCODE.NOERROR,
            true,
            q.qtype === TYPE.ANY ? [soa, ...records] : records,
            [],
            glue,
            {
              method: loc.method,
              detail: `nameservers nearest first (${near.length} matched): ${loc.detail}`,
              nodes: near,
              ...(opt?.ecs ? { scope: opt.ecs.scopePrefix } : {}),
              rrlKind: 'answer',
              rrlName: `${q.qname}/${q.qtype}`,
            },
            opt,
            Math.min(this.#nsTtl, this.#soa.ttl) * 1000,
            ctx.bucket,
          );
        }
        const nsRecords = this.#nsRecords(qname);
        const glue = this.#nameservers.flatMap((n) => [
          ...this.#addressRecords(n.name, n, TYPE.A),
          ...this.#addressRecords(n.name, n, TYPE.AAAA),
        ]);
        if (q.qtype === TYPE.SOA) {
          return respond(
            RCODE.NOERROR,
            true,
            [soa],
            [],
            [],
            staticMeta('apex SOA'),
            opt0,
            this.#soa.ttl * 1000,
          );
        }
        if (q.qtype === TYPE.NS) {
          return respond(
            RCODE.NOERROR,
            true,
            nsRecords,
            [],
            glue,
            staticMeta('apex NS'),
            opt0,
            Math.min(this.#nsTtl, 3600) * 1000,
          );
        }
        if (q.qtype === TYPE.ANY) {
          return respond(
            RCODE.NOERROR,
            true,
            [soa, ...nsRecords],
            [],
            glue,
            staticMeta('apex ANY'),
            opt0,
            this.#soa.ttl * 1000,
          );
        }
        return nodata(parsed.zone, 'apex: no such type');
      }
      case 'origin':
        break;
    }

    if (!LOCATED_TYPES.has(q.qtype)) {
      return nodata(parsed.zone, 'origin: type not served');
    }

    const ctx = ctxIn ?? this.#locator.context(peer.address, peer.bytes, q.opt?.ecs);
    const loc = await this.#locator.locate(ctx, this.#answerCount);
    const opt = this.responseOpt(q, loc.scope);
    // Every name under the zone is synthesized (like a wildcard): rate limited as one name per
    // zone, whatever the name and type, so rotating names does not reset a client's budget.
    const rrlName = wildcardOf(parsed.zone);
    if (loc.method === 'no-proxy') {
      const built = respond(
        RCODE.NOERROR,
        true,
        [{ type: 'CNAME', name: qname, ttl: this.#cnameTtl, target: parsed.host }],
        [],
        [],
        {
          method: 'no-proxy',
          detail: loc.detail,
          ttl: this.#cnameTtl,
          scope: opt?.ecs?.scopePrefix,
          rrlKind: 'answer',
          rrlName,
        },
        opt,
        0,
        ctx.bucket,
      );
      return built;
    }
    const v6 = q.qtype === TYPE.AAAA;
    const ttl = loc.local ? this.#localTtl : this.#ttl;
    const answers: ResourceRecord[] = [];
    const used: string[] = [];
    // A CNAME query while proxies are live: no CNAME exists, NOERROR/empty.
    for (const n of q.qtype === TYPE.CNAME ? [] : loc.nodes) {
      const address = v6 ? n.ipv6 : n.ipv4;
      if (!address) continue;
      answers.push(
        v6 ? { type: 'AAAA', name: qname, ttl, address } : { type: 'A', name: qname, ttl, address },
      );
      used.push(n.id);
    }
    const meta = {
      method: loc.method,
      detail:
        answers.length > 0 || q.qtype === TYPE.CNAME
          ? loc.detail
          : `${loc.detail}; no ${v6 ? 'IPv6' : 'IPv4'} address`,
      nodes: used.length > 0 ? used : loc.nodes.map((n) => n.id),
      ttl,
      scope: opt?.ecs?.scopePrefix,
      rrlKind: answers.length > 0 ? ('answer' as const) : ('nodata' as const),
      rrlName: answers.length > 0 ? rrlName : parsed.zone,
    };
    const built = respond(
      RCODE.NOERROR,
      true,
      answers,
      answers.length > 0 ? [] : [this.#soaRecord(parsed.zone, true)],
      [],
      meta,
      opt,
      ttl * 1000,
      ctx.bucket,
    );
    return built;
  }

  #zoneOf(name: string): string | undefined {
    let best: string | undefined;
    for (const z of this.#zones) {
      if ((name === z || name.endsWith(`.${z}`)) && (!best || z.length > best.length)) best = z;
    }
    return best;
  }

  #negTtl(): number {
    return Math.min(this.#soa.ttl, this.#soa.minimum);
  }

  #soaRecord(zone: string, negative: boolean, ownerAsSent?: string): ResourceRecord {
    const s = this.#soa;
    return {
      type: 'SOA',
      name: ownerAsSent ?? zone,
      ttl: negative ? this.#negTtl() : s.ttl,
      mname: s.mname ?? this.#nameservers[0]?.name ?? `ns.${zone}`,
      rname: s.rname ?? `hostmaster.${zone}`,
      serial: s.serial,
      refresh: s.refresh,
      retry: s.retry,
      expire: s.expire,
      minimum: s.minimum,
    };
  }

  #nsRecords(owner: string): ResourceRecord[] {
    return this.#nameservers.map((n) => nsRecord(owner, n, this.#nsTtl));
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

  #addressRecords(owner: string, ns: NameserverConfig, qtype: number): ResourceRecord[] {
    const out: ResourceRecord[] = [];
    if ((qtype === TYPE.A || qtype === TYPE.ANY) && ns.ipv4) {
      out.push({ type: 'A', name: owner, ttl: this.#nsTtl, address: ns.ipv4 });
    }
    if ((qtype === TYPE.AAAA || qtype === TYPE.ANY) && ns.ipv6) {
      out.push({ type: 'AAAA', name: owner, ttl: this.#nsTtl, address: ns.ipv6 });
    }
    return out;
  }
}

/** The RRL name of every synthesized answer in `zone` (interned: one string per zone). */
const wildcards = new Map<string, string>();
function wildcardOf(zone: string): string {
  let w = wildcards.get(zone);
  if (w === undefined) wildcards.set(zone, (w = `*.${zone}`));
  return w;
}

function nsRecord(owner: string, ns: NameserverConfig, ttl: number): ResourceRecord {
  return { type: 'NS', name: owner, ttl, host: ns.name };
}

/** Is this nameserver at one of the node's addresses? */
function sameHost(ns: NameserverConfig, node: NodeInfo): boolean {
  return (
    (ns.ipv4 !== undefined && ns.ipv4 === node.ipv4) ||
    (ns.ipv6 !== undefined && ns.ipv6 === node.ipv6)
  );
}
