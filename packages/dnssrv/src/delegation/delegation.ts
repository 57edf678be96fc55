/**
 * Nearby nameservers (CoralCDN, NSDI'04 §3.1). Each zone has one sub-zone per cluster level —
 * `l0.<zone>`, `l1.l0.<zone>`, `l2.l1.l0.<zone>` — and every node serves all of them. With
 * delegation on:
 *
 * - a short name (`www.example.com.nyud.net`) is a CNAME, with a long TTL, to the same name in
 *   the deepest sub-zone (`www.example.com.l2.l1.l0.nyud.net`; this plays the part of Coral's
 *   DNAME from nyud.net to http.L2.L1.L0.nyucd.net), followed in the same answer by that name's
 *   records;
 * - answers for names in the sub-zones carry, in the authority section, the NS records of the most
 *   specific level whose RTT threshold the resolver is within — this node's own cluster at that
 *   level — with a long TTL and glue. A resolver keeps asking the deepest sub-zone's nameservers
 *   it knows, so once a nearby node told it about its level-2 cluster, it asks that cluster from
 *   then on, for every name (the CNAMEs point there), and the node it asks, being close, answers
 *   with proxies close to itself.
 *
 * Only live members that run DNS on the port resolvers use (`NodeInfo.dnsPort === port`) are
 * named, each address once, through the same candidate filter as proxies. A member's nameserver
 * name is `ns<node id>.<sub-zone>`; its address is answered only while it is such a member.
 */
import type { Clock } from '@coral/runtime';
import { TokenBucket } from '../limits/token-bucket.js';
import { admitCandidates, CANDIDATE_OVERSAMPLE } from '../locate/candidates.js';
import type { LocationContext, Locator } from '../locate/locator.js';
import type { NodeDirectory, NodeInfo } from '../node-directory.js';

export const DEFAULT_DELEGATION_PORT = 53;
export const DEFAULT_DELEGATION_TTL = 86_400;
export const DEFAULT_DELEGATION_LEVEL0_TTL = 3_600;
export const DEFAULT_DELEGATION_NAMESERVERS = 3;
/** Lookups per second of member ids this node has not named itself (`NodeDirectory.get`). */
const MEMBER_LOOKUPS_PER_SECOND = 50;
const PUBLISHED_MAX = 4096;

export interface DelegationOptions {
  /** Delegate sub-zones per cluster level (default false: answers as without sub-zones). */
  enabled?: boolean;
  /** The port resolvers ask: only members whose `dnsPort` is this are nameservers (default 53). */
  port?: number;
  /** TTL of the level-1 and deeper NS records, their glue and the short-name CNAMEs (default 86400 s). */
  ttl?: number;
  /** TTL of the level-0 NS records and glue (default 3600 s): a resolver given far nameservers asks again sooner. */
  level0Ttl?: number;
  /** Nameservers per NS set (default 3). */
  nameservers?: number;
}

export interface NameserverSet {
  level: number;
  ttl: number;
  nodes: NodeInfo[];
}

export class Delegation {
  readonly enabled: boolean;
  readonly port: number;
  readonly ttl: number;
  readonly level0Ttl: number;
  readonly count: number;
  /** Sub-zone levels: one per level of the directory's thresholds. */
  readonly levels: number;
  readonly #directory: NodeDirectory;
  readonly #isLive: ((id: string) => boolean) | undefined;
  /** Members this node named in an NS set lately (so their names resolve without a lookup). */
  readonly #published = new Map<string, NodeInfo>();
  readonly #lookups: TokenBucket;

  constructor(
    components: { directory: NodeDirectory; clock: Clock },
    options: DelegationOptions = {},
  ) {
    this.#directory = components.directory;
    const dir = this.#directory;
    this.#isLive = dir.isLive ? (id) => dir.isLive!(id) : undefined;
    this.enabled = options.enabled ?? false;
    this.port = options.port ?? DEFAULT_DELEGATION_PORT;
    this.ttl = options.ttl ?? DEFAULT_DELEGATION_TTL;
    this.level0Ttl = options.level0Ttl ?? DEFAULT_DELEGATION_LEVEL0_TTL;
    this.count = options.nameservers ?? DEFAULT_DELEGATION_NAMESERVERS;
    this.levels = Math.max(1, dir.levelThresholdsMs.length);
    this.#lookups = new TokenBucket(components.clock, MEMBER_LOOKUPS_PER_SECOND);
  }

  ttlOf(level: number): number {
    return level === 0 ? this.level0Ttl : this.ttl;
  }

  #isNameserver = (n: NodeInfo): boolean => n.dnsPort === this.port;

  /**
   * The NS set for a resolver in `ctx`, for a name whose deepest enclosing sub-zone is
   * `maxLevel`: the most specific level ≤ maxLevel whose threshold the resolver is within and
   * that has a live nameserver (level 0: nameservers near the resolver, `near`, then any).
   * Undefined when no member runs DNS on the port.
   */
  async forResolver(
    ctx: LocationContext,
    maxLevel: number,
    locator: Locator,
  ): Promise<NameserverSet | undefined> {
    for (let level = Math.min(ctx.rttLevel, maxLevel); level >= 1; level--) {
      const set = this.atLevel(level);
      if (set.nodes.length > 0) return set;
    }
    // Level 0: nameservers near the resolver as the locator finds them (not its ECS client).
    const near = await locator.locate(
      { ...ctx, ecs: undefined, view: ctx.view?.via === 'ecs' ? undefined : ctx.view },
      this.count * CANDIDATE_OVERSAMPLE,
    );
    const nodes = this.#admit([
      ...near.nodes.filter(this.#isNameserver),
      ...this.#directory.random(this.count * CANDIDATE_OVERSAMPLE * 4).filter(this.#isNameserver),
    ]);
    return nodes.length > 0 ? { level: 0, ttl: this.level0Ttl, nodes } : undefined;
  }

  /** The NS set of sub-zone `level` as this node sees it: its own cluster at that level (level 0: any). */
  atLevel(level: number): NameserverSet {
    const ask = this.count * CANDIDATE_OVERSAMPLE * 4;
    const candidates =
      level >= 1 ? this.#directory.cluster(level, ask) : this.#directory.random(ask);
    return {
      level,
      ttl: this.ttlOf(level),
      nodes: this.#admit(candidates.filter(this.#isNameserver)),
    };
  }

  #admit(candidates: NodeInfo[]): NodeInfo[] {
    const nodes = admitCandidates(candidates, this.count, this.#isLive);
    for (const n of nodes) {
      if (this.#published.size >= PUBLISHED_MAX && !this.#published.has(n.id)) {
        this.#published.delete(this.#published.keys().next().value as string);
      }
      this.#published.set(n.id, n);
    }
    return nodes;
  }

  /**
   * The live nameserver member with this id, for its name's A/AAAA answer: one this node named,
   * else the directory's (`get`, at most 50 lookups a second: a stranger asking for random ids
   * must not make the node search its tables at will).
   */
  member(id: string): NodeInfo | 'unknown' | 'busy' {
    let n = this.#published.get(id);
    if (!n) {
      const get = this.#directory.get?.bind(this.#directory);
      if (!get) return 'unknown';
      if (!this.#lookups.take()) return 'busy';
      n = get(id);
    }
    if (!n || !this.#isNameserver(n) || (this.#isLive && !this.#isLive(n.id))) return 'unknown';
    return admitCandidates([n], 1, undefined)[0] ?? 'unknown';
  }
}
