/**
 * Building answers: which records a question gets — the proxies near the client, the
 * delegation's NS records and glue, the short-name alias, apex SOA/NS, nameserver addresses, ACME
 * TXT, NXDOMAIN/NODATA with the SOA, the no-proxy fallbacks — as templates (`wire/template.ts`)
 * that do not depend on the question name, so the pipeline shares one among every name of a family
 * (all origins of a zone, say) and every resolver of a location bucket.
 *
 * `origin-answers.ts` answers Coralized names, `zone-answers.ts` the zone's own names, `kit.ts` is
 * the records both write. The location of the client comes from the {@link Locator}, the
 * delegation's nameservers from {@link Delegation}. The pipeline caches what this returns.
 */
import type { Random } from '@coral/runtime';
import type { ChallengeStore } from '../acme/challenge-store.js';
import type { Delegation } from '../delegation/delegation.js';
import { DnsConfigError } from '../errors.js';
import type { Location, LocationContext, Locator } from '../locate/locator.js';
import { canonicalZone, type NameClass } from '../names/classify.js';
import { parseIp } from '../net/ip.js';
import type { NodeInfo } from '../node-directory.js';
import {
  DEFAULT_ANSWER_COUNT,
  DEFAULT_CHALLENGE_TTL,
  DEFAULT_CNAME_TTL,
  DEFAULT_LOCAL_TTL,
  DEFAULT_NS_TTL,
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
import { AnswerKit, type Built, ecsSubnet } from './kit.js';
import { type AnswerMeta, answerMeta } from './meta.js';
import { OriginAnswers } from './origin-answers.js';
import { isNsQuestion, ZoneAnswers } from './zone-answers.js';

export type { Built } from './kit.js';
export type { AnswerMeta, Peer } from './meta.js';

/**
 * Types whose answer depends on where the client is: A, AAAA, ANY (answered as A) and CNAME
 * (present only when no proxy is live; for a short name with delegation on, the alias with the
 * NS records of the resolver's level).
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

export class AnswerBuilder {
  readonly #kit: AnswerKit;
  readonly #origins: OriginAnswers;
  readonly #zoneNames: ZoneAnswers;
  readonly #delegation: Delegation;
  readonly #zones: readonly string[];

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
    this.#delegation = components.delegation;
    this.#zones = components.zones;
    const answerCount = positiveInt('answerCount', options.answerCount ?? DEFAULT_ANSWER_COUNT);
    this.#kit = new AnswerKit({
      nameservers: components.nameservers,
      nsTtl: nonNegativeInt('nsTtl', options.nsTtl ?? DEFAULT_NS_TTL),
      soa: options.soa,
      udpMax: Math.max(512, Math.min(65535, options.udpMaxPayload ?? DEFAULT_UDP_MAX_PAYLOAD)),
    });
    const { locator, delegation } = components;
    this.#origins = new OriginAnswers(
      { kit: this.#kit, locator, delegation },
      {
        answerCount,
        ttl: nonNegativeInt('ttl', options.ttl ?? DEFAULT_TTL),
        localTtl: nonNegativeInt('localTtl', options.localTtl ?? DEFAULT_LOCAL_TTL),
        cnameTtl: nonNegativeInt('cnameTtl', options.cnameTtl ?? DEFAULT_CNAME_TTL),
      },
    );
    this.#zoneNames = new ZoneAnswers(
      {
        kit: this.#kit,
        locator,
        random: components.random,
        delegation,
        ...(components.challenges ? { challenges: components.challenges } : {}),
      },
      {
        answerCount,
        challengeTtl: nonNegativeInt('challengeTtl', options.challengeTtl ?? DEFAULT_CHALLENGE_TTL),
      },
    );
  }

  get zones(): readonly string[] {
    return this.#zones;
  }

  /** The UDP payload size we advertise and never exceed. */
  get udpMax(): number {
    return this.#kit.udpMax;
  }

  /** Does the answer to `q` (a name of class `c`) depend on where the client is? */
  needsLocation(q: Query, c: NameClass): boolean {
    switch (c.kind) {
      case 'origin':
        return LOCATED_TYPES.has(q.qtype);
      case 'apex':
        if (c.level >= 0) return this.#delegation.enabled && isNsQuestion(q);
        return this.#kit.nameservers.length > 1 && isNsQuestion(q);
      default:
        return false;
    }
  }

  /** Our OPT for a response to `q` (none when it had none), echoing its ECS with `scope`. */
  responseOpt(q: Query, scope: number): ResponseOpt | undefined {
    return this.#kit.responseOpt(q, scope);
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
        if (this.#origins.isAlias(c)) return this.#origins.alias(q, c, ctx);
        return LOCATED_TYPES.has(q.qtype)
          ? this.#origins.located(q, c, ctx!)
          : this.#origins.nodata(q, c);
      case 'invalid':
        return this.#zoneNames.invalid(q, c);
      case 'apex':
        return c.level < 0
          ? this.#zoneNames.apex(q, c, ctx)
          : this.#zoneNames.subZoneApex(q, c, ctx);
      case 'nameserver':
        return this.#zoneNames.nameserver(q, c);
      case 'member':
        return this.#zoneNames.member(q, c);
      case 'acme-challenge':
        return this.#zoneNames.acme(q, c);
    }
  }

  /**
   * The answer for a name whose location found no live proxy (docs/dnssrv.md, "No live proxy"):
   * it depends on the name, so it is built for this query only.
   */
  noProxy(q: Query, c: Extract<NameClass, { kind: 'origin' }>, loc: Location): Built {
    return this.#origins.noProxy(q, c, loc);
  }
}
