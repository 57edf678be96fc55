/**
 * Answers for the zone's own names: the apex (SOA, NS), the delegation's sub-zones and member
 * nameserver names, the configured nameservers, `_acme-challenge`, and NXDOMAIN for names that
 * are no origin.
 */
import type { Random } from '@coral/runtime';
import type { ChallengeStore } from '../acme/challenge-store.js';
import type { Delegation } from '../delegation/delegation.js';
import type { LocationContext, Locator } from '../locate/locator.js';
import { memberNameserverName, type NameClass } from '../names/classify.js';
import type { NodeInfo } from '../node-directory.js';
import type { NameserverConfig } from '../types.js';
import { RCODE, TYPE } from '../wire/constants.js';
import type { Query } from '../wire/query.js';
import { ANSWER } from '../wire/template.js';
import { type AnswerKit, type Built, ecsSubnet } from './kit.js';
import { answerMeta } from './meta.js';

/** A member nameserver's address answer is reused this long at most (liveness is re-checked). */
const MEMBER_ADDRESS_CACHE_MS = 300_000;

export class ZoneAnswers {
  readonly #kit: AnswerKit;
  readonly #locator: Locator;
  readonly #random: Random;
  readonly #delegation: Delegation;
  readonly #challenges: ChallengeStore | undefined;
  readonly #answerCount: number;
  readonly #challengeTtl: number;

  constructor(
    components: {
      kit: AnswerKit;
      locator: Locator;
      random: Random;
      delegation: Delegation;
      challenges?: ChallengeStore;
    },
    options: { answerCount: number; challengeTtl: number },
  ) {
    this.#kit = components.kit;
    this.#locator = components.locator;
    this.#random = components.random;
    this.#delegation = components.delegation;
    this.#challenges = components.challenges;
    this.#answerCount = options.answerCount;
    this.#challengeTtl = options.challengeTtl;
  }

  /** A name under a zone that is no origin: NXDOMAIN with the (sub-)zone's SOA. */
  invalid(q: Query, c: Extract<NameClass, { kind: 'invalid' }>): Built {
    const w = this.#kit.writer(c.zone);
    this.#kit.soaRecord(w, 'ns', c.zone, c.level, true);
    const meta = this.#kit.static('invalid name', 'nxdomain', c.zone.name);
    return this.#kit.built(q, w, RCODE.NXDOMAIN, meta, { cacheMs: this.#kit.negTtl() * 1000 });
  }

  /** A configured nameserver's addresses. */
  nameserver(q: Query, c: Extract<NameClass, { kind: 'nameserver' }>): Built {
    const kit = this.#kit;
    const w = kit.writer(c.zone);
    const n = kit.addressRecords(w, 'an', ANSWER, c.ns, q.qtype, kit.nsTtl);
    if (n === 0) return kit.nodata(q, w, c.zone, -1, 'nameserver: no such type');
    return kit.built(q, w, RCODE.NOERROR, kit.static('nameserver address', q), {
      cacheMs: kit.nsTtl * 1000,
    });
  }

  async apex(
    q: Query,
    c: Extract<NameClass, { kind: 'apex' }>,
    ctx: LocationContext | undefined,
  ): Promise<Built> {
    const zone = c.zone;
    const w = this.#kit.writer(zone);
    const soaTtl = this.#kit.soa.ttl;
    if (q.qtype === TYPE.SOA) {
      this.#kit.soaRecord(w, 'an', zone, -1, false);
      return this.#kit.built(q, w, RCODE.NOERROR, this.#kit.static('apex SOA', q), {
        cacheMs: soaTtl * 1000,
      });
    }
    if (!isNsQuestion(q)) return this.#kit.nodata(q, w, zone, -1, 'apex: no such type');
    if (q.qtype === TYPE.ANY) this.#kit.soaRecord(w, 'an', zone, -1, false);
    if (this.#kit.nameservers.length > 1) {
      // Coral's nameservers are also proxies: order them as the client's nearest proxies.
      const loc = await this.#locator.locate(
        ctx!,
        Math.max(this.#answerCount, this.#kit.nameservers.length),
      );
      const ordered = this.#nameserversNear(loc.nodes);
      for (const n of ordered) w.ns('an', ANSWER, this.#kit.nsTtl, n.name);
      for (const n of ordered)
        this.#kit.addressRecords(w, 'ar', n.name, n, TYPE.ANY, this.#kit.nsTtl);
      const near = loc.nodes.filter((node) => ordered.some((n) => sameHost(n, node)));
      const opt = this.#kit.responseOpt(q, loc.scope);
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
        cacheMs: Math.min(this.#kit.nsTtl, soaTtl) * 1000,
        located: true,
        liveIds: [],
      };
    }
    for (const n of this.#kit.nameservers) w.ns('an', ANSWER, this.#kit.nsTtl, n.name);
    for (const n of this.#kit.nameservers) {
      this.#kit.addressRecords(w, 'ar', n.name, n, TYPE.ANY, this.#kit.nsTtl);
    }
    const detail = q.qtype === TYPE.NS ? 'apex NS' : 'apex ANY';
    return this.#kit.built(q, w, RCODE.NOERROR, this.#kit.static(detail, q), {
      cacheMs: (q.qtype === TYPE.NS ? Math.min(this.#kit.nsTtl, 3600) : soaTtl) * 1000,
    });
  }

  /** `l2.l1.l0.<zone>` itself: SOA and NS of the sub-zone when delegation is on, else nothing. */
  async subZoneApex(
    q: Query,
    c: Extract<NameClass, { kind: 'apex' }>,
    ctx: LocationContext | undefined,
  ): Promise<Built> {
    const d = this.#delegation;
    const w = this.#kit.writer(c.zone);
    if (!d.enabled) return this.#kit.nodata(q, w, c.zone, -1, 'sub-zone: delegation off');
    if (q.qtype === TYPE.SOA) {
      this.#kit.soaRecord(w, 'an', c.zone, c.level, false);
      return this.#kit.built(q, w, RCODE.NOERROR, this.#kit.static('sub-zone SOA', q), {
        cacheMs: this.#kit.soa.ttl * 1000,
      });
    }
    if (!isNsQuestion(q)) return this.#kit.nodata(q, w, c.zone, c.level, 'sub-zone: no such type');
    if (q.qtype === TYPE.ANY) this.#kit.soaRecord(w, 'an', c.zone, c.level, false);
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
      this.#kit.glue(w, owner, ns);
      detail = `sub-zone NS: level ${c.level} (${ns.nodes.length})`;
    } else {
      // No member runs DNS on the port: the fleet's configured nameservers serve it too.
      for (const n of this.#kit.nameservers) w.ns('an', ANSWER, this.#kit.nsTtl, n.name);
      for (const n of this.#kit.nameservers) {
        this.#kit.addressRecords(w, 'ar', n.name, n, TYPE.ANY, this.#kit.nsTtl);
      }
      detail = `sub-zone NS: level ${c.level} has no nameserver, the configured ones`;
    }
    const built = this.#kit.built(q, w, RCODE.NOERROR, this.#kit.static(detail, q), {
      cacheMs: Math.min(ns.ttl, this.#kit.soa.ttl) * 1000,
      liveIds: ns.nodes.map((n) => n.id),
    });
    return { ...built, located: true };
  }

  /** A member's nameserver name: its address while it is a live nameserver member. */
  member(q: Query, c: Extract<NameClass, { kind: 'member' }>): Built {
    const w = this.#kit.writer(c.zone);
    const m = this.#delegation.enabled ? this.#delegation.member(c.id) : 'unknown';
    if (m === 'busy') {
      return this.#kit.built(
        q,
        w,
        RCODE.SERVFAIL,
        this.#kit.static('member lookups over their rate', 'error', ''),
        { cacheMs: 0, aa: false },
      );
    }
    if (m === 'unknown') {
      this.#kit.soaRecord(w, 'ns', c.zone, c.level, true);
      return this.#kit.built(
        q,
        w,
        RCODE.NXDOMAIN,
        this.#kit.static('not a live nameserver member', 'nxdomain', c.zone.name),
        { cacheMs: 0 },
      );
    }
    const ttl = this.#delegation.ttlOf(c.level);
    const n = this.#kit.addressRecords(w, 'an', ANSWER, m, q.qtype, ttl);
    if (n === 0) return this.#kit.nodata(q, w, c.zone, c.level, 'member nameserver: no such type');
    return this.#kit.built(q, w, RCODE.NOERROR, this.#kit.static('member nameserver address', q), {
      cacheMs: Math.min(ttl * 1000, MEMBER_ADDRESS_CACHE_MS),
      liveIds: [m.id],
    });
  }

  acme(q: Query, c: Extract<NameClass, { kind: 'acme-challenge' }>): Built {
    // RFC 8555 §8.4: every value set is answered (a wildcard plus apex order has two), read from
    // the store on each query and never cached here, so set and remove show at once.
    const zoneName = c.level < 0 ? c.zone.name : c.zone.subZones[c.level]!;
    const values =
      q.qtype === TYPE.TXT || q.qtype === TYPE.ANY ? (this.#challenges?.txt(zoneName) ?? []) : [];
    const w = this.#kit.writer(c.zone);
    if (values.length === 0) {
      return { ...this.#kit.nodata(q, w, c.zone, c.level, 'no ACME challenge value'), cacheMs: 0 };
    }
    const ttl = this.#challengeTtl;
    for (const v of values) w.txt('an', ANSWER, ttl, v);
    return this.#kit.built(
      q,
      w,
      RCODE.NOERROR,
      { ...this.#kit.static(`${values.length} ACME challenge value(s)`, q), ttl },
      { cacheMs: 0 },
    );
  }

  /**
   * Nameservers that are (at the address of) one of `nodes`, in the nodes' order, then the rest
   * rotated at random so load spreads.
   */
  #nameserversNear(nodes: readonly NodeInfo[]): NameserverConfig[] {
    const first: NameserverConfig[] = [];
    for (const node of nodes) {
      for (const ns of this.#kit.nameservers) {
        if (!first.includes(ns) && sameHost(ns, node)) first.push(ns);
      }
    }
    const rest = this.#kit.nameservers.filter((ns) => !first.includes(ns));
    const start = rest.length > 1 ? this.#random.int(rest.length) : 0;
    return [...first, ...rest.slice(start), ...rest.slice(0, start)];
  }
}

export function isNsQuestion(q: Query): boolean {
  return q.qtype === TYPE.NS || q.qtype === TYPE.ANY;
}

/** Is this nameserver at one of the node's addresses? */
function sameHost(ns: NameserverConfig, node: NodeInfo): boolean {
  return (
    (ns.ipv4 !== undefined && ns.ipv4 === node.ipv4) ||
    (ns.ipv6 !== undefined && ns.ipv6 === node.ipv6)
  );
}
