/**
 * Answers for Coralized names: the proxies near the client (with the delegation's NS records),
 * the short-name alias into the deepest sub-zone, NODATA for types not served, and what a name
 * gets when no proxy is live.
 */
import type { Delegation } from '../delegation/delegation.js';
import type { Location, LocationContext, Locator } from '../locate/locator.js';
import type { NameClass } from '../names/classify.js';
import { isPublicIPv4, parseIPv4 } from '../net/ip.js';
import type { RrlKind } from '../rrl/response-rate-limiter.js';
import { RCODE, TYPE } from '../wire/constants.js';
import type { Query } from '../wire/query.js';
import { ANSWER } from '../wire/template.js';
import { type AnswerKit, type Built, ecsSubnet, wildcardOf } from './kit.js';
import { answerMeta } from './meta.js';

type Origin = Extract<NameClass, { kind: 'origin' }>;

/** The alias of a short name with delegation on: into the deepest sub-zone. */
interface AliasSpec {
  ttl: number;
  /** Labels of the sub-zone (`['l2', 'l1', 'l0']`), written before the zone in the target. */
  sub: readonly string[];
  /** Level of that sub-zone. */
  level: number;
  detail: string;
}

/** Types whose answer holds the proxies (ANY is answered as A; CNAME carries the NS records). */
const LOCATED_TYPES = new Set<number>([TYPE.A, TYPE.AAAA, TYPE.ANY, TYPE.CNAME]);

export class OriginAnswers {
  readonly #kit: AnswerKit;
  readonly #locator: Locator;
  readonly #delegation: Delegation;
  readonly #answerCount: number;
  readonly #ttl: number;
  readonly #localTtl: number;
  readonly #cnameTtl: number;
  /** The alias of a short name with delegation on (undefined: off). */
  readonly #aliasSpec: AliasSpec | undefined;

  constructor(
    components: { kit: AnswerKit; locator: Locator; delegation: Delegation },
    options: { answerCount: number; ttl: number; localTtl: number; cnameTtl: number },
  ) {
    this.#kit = components.kit;
    this.#locator = components.locator;
    this.#delegation = components.delegation;
    this.#answerCount = options.answerCount;
    this.#ttl = options.ttl;
    this.#localTtl = options.localTtl;
    this.#cnameTtl = options.cnameTtl;
    const d = this.#delegation;
    this.#aliasSpec = d.enabled
      ? {
          ttl: d.ttl,
          sub: Array.from({ length: d.levels }, (_, i) => `l${d.levels - 1 - i}`),
          level: d.levels - 1,
          detail: `alias into the level-${d.levels - 1} sub-zone`,
        }
      : undefined;
  }

  /** With delegation on, a short name is an alias of the same name in the deepest sub-zone. */
  isAlias(c: Origin): boolean {
    return c.level < 0 && this.#aliasSpec !== undefined;
  }

  /**
   * A, AAAA, ANY or CNAME for an origin name: its proxies near the client. A short name with
   * delegation on is answered as its alias's target (see {@link alias}).
   */
  async located(q: Query, c: Origin, ctx: LocationContext): Promise<Built> {
    return this.#located(q, c, ctx, undefined);
  }

  /**
   * The proxies for `c` (owned by the answer name: the question, or the alias's target), with the
   * NS records of the resolver's level in authority when delegation is on; NODATA with the SOA
   * when there is no address of the type asked; the no-proxy answer when nothing is live.
   */
  async #located(
    q: Query,
    c: Origin,
    ctx: LocationContext,
    alias: AliasSpec | undefined,
  ): Promise<Built> {
    const loc = await this.#locator.locate(ctx, this.#answerCount);
    if (loc.method === 'no-proxy') return this.noProxy(q, c, loc);
    const d = this.#delegation;
    const level = alias ? alias.level : c.level;
    const ns = d.enabled && level >= 0 ? await d.forResolver(ctx, level, this.#locator) : undefined;
    const opt = this.#kit.responseOpt(q, loc.scope);
    const v6 = q.qtype === TYPE.AAAA;
    const ttl = loc.local ? this.#localTtl : this.#ttl;
    const w = this.#kit.writer(c.zone);
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
    let detail = alias ? `${alias.detail}; ${loc.detail}` : loc.detail;
    if (used.length === 0 && q.qtype !== TYPE.CNAME) {
      detail = `${detail}; no ${v6 ? 'IPv6' : 'IPv4'} address`;
    }
    if (used.length > 0 && ns) {
      this.#kit.nsRecords(w, c.zone, ns);
      detail = `${detail}; NS level ${ns.level} (${ns.nodes.length})`;
    } else if (used.length > 0 && d.enabled && level >= 0) {
      detail = `${detail}; no nameserver member`;
    } else if (used.length === 0) {
      // NODATA (after the alias, if any): the SOA of the zone the answer name is in.
      this.#kit.soaRecord(w, 'ns', c.zone, level, true);
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
      rrlKind: answered || alias ? 'answer' : 'nodata',
      rrlName: answered || alias ? wildcardOf(c.zone.name) : c.zone.name,
    });
    const liveIds = [...new Set([...used, ...(ns?.nodes.map((n) => n.id) ?? [])])];
    return {
      template: w.finish(true, RCODE.NOERROR, alias),
      meta,
      cacheMs: ttl * 1000,
      located: true,
      liveIds,
    };
  }

  /**
   * A short name with delegation on is an alias: a CNAME to the same name in the deepest
   * sub-zone (as Coral's DNAME did), TTL `delegation.ttl`. This server is authoritative for that
   * sub-zone too, so, as RFC 1034 §4.3.2 (step 3a) asks and as BIND, NSD and PowerDNS do, the
   * answer goes on with the target's records: its proxies near the client (A, AAAA) with the NS
   * records of the resolver's level in authority and their glue, or the sub-zone's NODATA for
   * other types. A CNAME or ANY question gets the CNAME alone (with those NS records).
   *
   * A stub resolver gets its addresses in one round trip. A recursive resolver caches the alias
   * for a day and the NS records of the nearest sub-zone it was told of; when the proxies' short
   * TTL runs out it asks for the target, which it sends to those nameservers — a nearby one once
   * it has been told of one — not to whichever nameserver of the zone it met first.
   */
  async alias(q: Query, c: Origin, ctx: LocationContext | undefined): Promise<Built> {
    const d = this.#delegation;
    const alias = this.#aliasSpec!;
    // A CNAME question is answered by the alias itself, and so is ANY (it matches the CNAME,
    // RFC 1034 §4.3.2 step 3a; BIND answers ANY at an alias the same way).
    if (q.qtype !== TYPE.CNAME && q.qtype !== TYPE.ANY) {
      return LOCATED_TYPES.has(q.qtype) ? this.#located(q, c, ctx!, alias) : this.nodata(q, c);
    }
    const ns = await d.forResolver(ctx!, alias.level, this.#locator);
    const w = this.#kit.writer(c.zone);
    if (ns) this.#kit.nsRecords(w, c.zone, ns);
    const opt = this.#kit.responseOpt(q, 0);
    if (opt) w.opt(opt, RCODE.NOERROR);
    return {
      template: w.finish(true, RCODE.NOERROR, alias),
      meta: answerMeta({
        rcode: RCODE.NOERROR,
        aa: true,
        method: 'none',
        detail: `${alias.detail}; ${
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
      cacheMs: Math.min(alias.ttl, ns ? ns.ttl : alias.ttl, this.#kit.soa.ttl) * 1000,
      located: true,
      liveIds: ns?.nodes.map((n) => n.id) ?? [],
    };
  }

  /** NODATA for a type not served (after the alias, for a short name with delegation on). */
  nodata(q: Query, c: Origin): Built {
    const alias = this.isAlias(c) ? this.#aliasSpec : undefined;
    const w = this.#kit.writer(c.zone);
    this.#kit.soaRecord(w, 'ns', c.zone, alias ? alias.level : c.level, true);
    const opt = this.#kit.responseOpt(q, 0);
    if (opt) w.opt(opt, RCODE.NOERROR);
    const base = alias
      ? this.#kit.static(`${alias.detail}; type not served`, 'answer', wildcardOf(c.zone.name))
      : this.#kit.static('origin: type not served', 'nodata', c.zone.name);
    return {
      template: w.finish(true, RCODE.NOERROR, alias),
      meta: answerMeta({ ...base, rcode: RCODE.NOERROR, aa: true, ecs: ecsSubnet(q), opt }),
      cacheMs: this.#kit.negTtl() * 1000,
      located: false,
      liveIds: [],
    };
  }

  /**
   * The answer for a name whose location found no live proxy (docs/dnssrv.md, "No live proxy"):
   * it depends on the name, so it is built for this query only.
   */
  noProxy(q: Query, c: Origin, loc: Location): Built {
    const opt = this.#kit.responseOpt(q, loc.scope);
    const w = this.#kit.writer(c.zone);
    // A short name with delegation on: its alias, then what the target gets (a CNAME chain).
    const alias = this.isAlias(c) ? this.#aliasSpec : undefined;
    const level = alias ? alias.level : c.level;
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
      // NODATA (after the alias it is an answer: synthesized, counted with them by RRL).
      if (!alias) rrlKind = 'nodata';
      this.#kit.soaRecord(w, 'ns', c.zone, level, true);
    }
    if (opt) w.opt(opt, rcode);
    return {
      // SERVFAIL carries no records, the alias neither.
      template: w.finish(
        rcode !== RCODE.SERVFAIL,
        rcode,
        rcode === RCODE.SERVFAIL ? undefined : alias,
      ),
      meta: answerMeta({
        rcode,
        aa: rcode !== RCODE.SERVFAIL,
        method: 'no-proxy',
        detail: `${alias && rcode !== RCODE.SERVFAIL ? `${alias.detail}; ` : ''}${loc.detail}: ${detail}`,
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
}
