/**
 * Locating the client: which proxies to answer a resolver with. First match wins:
 *
 * 1. a configured view (CIDR → node ids or a region), matched on the ECS subnet, then the resolver;
 * 2. EDNS Client Subnet: nodes hinted under the client's /24 or /16;
 * 3. the measured RTT from this node to the resolver: below a level's threshold → this node's
 *    cluster at that level (Coral: a nameserver close to the client returns nodes close to itself);
 * 4. nodes hinted under the resolver's /24, then /16;
 * 5. any live nodes at random. Nothing live → 'no-proxy' (the server answers a CNAME to the origin).
 *
 * A step that finds no live node falls through to the next. Every step's candidates pass the same
 * filter ({@link admitCandidates}: live, addressable, one identity per address) and hints come
 * through the bounded, cached {@link HintWalks}. The synchronous part (view match, probe state) is
 * computed first as a {@link LocationContext}, whose `bucket` keys the answer cache.
 */
import { type Clock, type Random, shuffle, systemRandom } from '@coral/runtime';
import { type Cidr, cidrContains, formatIp, parseCidr } from '../net/ip.js';
import type { NodeDirectory, NodeInfo, HintResult } from '../node-directory.js';
import { ResolverProbes } from '../probe/resolver-probes.js';
import type { LocationMethod, ViewConfig } from '../types.js';
import type { EcsOption } from '../wire/query.js';
import { DnsConfigError } from '../errors.js';
import { admitCandidates, CANDIDATE_OVERSAMPLE } from './candidates.js';
import { HintWalks } from './hint-walks.js';

const RESOLVER_MEMO_SIZE = 4096;

export interface CompiledView {
  cidr: Cidr;
  nodes?: string[];
  region?: string;
}

export interface LocationContext {
  resolverIp: string;
  resolver: Uint8Array;
  /** ECS option when usable for locating (source prefix > 0). */
  ecs?: EcsOption;
  view?: { index: number; via: 'ecs' | 'resolver' };
  probeKey: string;
  /** Probe result: RTT ms, null = unreachable, undefined = unknown. */
  rtt: number | null | undefined;
  /** Highest level whose threshold the RTT is below (0 = none). */
  rttLevel: number;
  /** Cache bucket: answers for the same (name, type, bucket) are interchangeable. */
  bucket: string;
}

export interface Location {
  method: LocationMethod;
  detail: string;
  nodes: NodeInfo[];
  /** Level-2 cluster answer (→ the longer TTL). */
  local: boolean;
  /** ECS scope prefix to echo. */
  scope: number;
}

export function compileViews(views: readonly ViewConfig[]): CompiledView[] {
  return views.map((v, i) => {
    const cidr = parseCidr(v.cidr);
    if ((v.nodes === undefined) === (v.region === undefined)) {
      throw new DnsConfigError(`view ${i} (${v.cidr}): give exactly one of "nodes" or "region"`);
    }
    return {
      cidr,
      ...(v.nodes ? { nodes: [...v.nodes] } : {}),
      ...(v.region !== undefined ? { region: v.region } : {}),
    };
  });
}

/** What never changes for one resolver address, and its last bucket (rebuilt when its tag does). */
interface ResolverMemo {
  view: number;
  probeKey: string;
  rttTag?: string;
  bucket?: string;
}

export class Locator {
  readonly #directory: NodeDirectory;
  readonly #probes: ResolverProbes;
  readonly #hints: HintWalks;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #views: CompiledView[];
  readonly #hintTimeoutMs: number;
  readonly #memo = new Map<string, ResolverMemo>();
  readonly #isLive: ((id: string) => boolean) | undefined;

  constructor(
    components: {
      directory: NodeDirectory;
      probes: ResolverProbes;
      clock: Clock;
      random?: Random;
      /** Hint cache and walk bounds (default: a `HintWalks` with its defaults). */
      hints?: HintWalks;
    },
    options: { views: CompiledView[]; hintTimeoutMs: number },
  ) {
    this.#directory = components.directory;
    this.#probes = components.probes;
    this.#clock = components.clock;
    this.#random = components.random ?? systemRandom;
    this.#hints =
      components.hints ?? new HintWalks({ directory: this.#directory, clock: this.#clock });
    this.#views = options.views;
    this.#hintTimeoutMs = options.hintTimeoutMs;
    const dir = this.#directory;
    this.#isLive = dir.isLive ? (id) => dir.isLive!(id) : undefined;
  }

  /** The cheap, synchronous part; starts a background probe of the resolver when needed. */
  context(resolverIp: string, resolver: Uint8Array, ecs: EcsOption | undefined): LocationContext {
    const usable = ecs && ecs.sourcePrefix > 0 ? ecs : undefined;
    let view: LocationContext['view'];
    if (usable) {
      const i = this.#views.findIndex((v) => cidrContains(v.cidr, usable.address));
      if (i >= 0) view = { index: i, via: 'ecs' };
    }
    // Per-resolver facts that never change (its view, its probe prefix) are memoised.
    let memo = this.#memo.get(resolverIp);
    if (!memo) {
      memo = {
        view: this.#views.findIndex((v) => cidrContains(v.cidr, resolver)),
        probeKey: ResolverProbes.keyOf(resolver),
      };
      if (this.#memo.size >= RESOLVER_MEMO_SIZE) this.#memo.clear();
      this.#memo.set(resolverIp, memo);
    }
    if (!view && memo.view >= 0) view = { index: memo.view, via: 'resolver' };
    const probeKey = memo.probeKey;
    const rtt = this.#probes.lookup(resolverIp, probeKey);
    let rttLevel = 0;
    if (typeof rtt === 'number') {
      const t = this.#directory.levelThresholdsMs;
      for (let level = t.length - 1; level >= 1; level--) {
        if (rtt < t[level]!) {
          rttLevel = level;
          break;
        }
      }
    }
    const rttTag = rtt === undefined ? 'u' : rtt === null ? 'x' : String(rttLevel);
    let bucket: string;
    if (view) {
      // The RTT state too: the delegation's NS records in the answer depend on it.
      bucket = `v${view.index}${view.via[0]}:${rttTag}`;
    } else if (usable) {
      bucket = `e${formatIp(usable.address)}/${usable.sourcePrefix}|r${probeKey}:${rttTag}`;
    } else {
      // The common case, a resolver without ECS: one string per resolver and probe state.
      if (memo.rttTag !== rttTag) {
        memo.rttTag = rttTag;
        memo.bucket = `r${probeKey}:${rttTag}`;
      }
      bucket = memo.bucket!;
    }
    return { resolverIp, resolver, ecs: usable, view, probeKey, rtt, rttLevel, bucket };
  }

  /** Find up to `count` proxies for this context. */
  async locate(ctx: LocationContext, count: number): Promise<Location> {
    const dir = this.#directory;
    const ask = count * CANDIDATE_OVERSAMPLE;
    const admit = (nodes: Iterable<NodeInfo>): NodeInfo[] =>
      admitCandidates(nodes, count, this.#isLive);
    const skipped: string[] = [];
    if (ctx.view) {
      const v = this.#views[ctx.view.index]!;
      const nodes = admit(
        v.nodes
          ? shuffle(this.#byIds(v.nodes), this.#random) // spread load over the view
          : dir.inRegion(v.region!, ask),
      );
      const what = v.nodes ? `nodes [${v.nodes.length}]` : `region ${v.region}`;
      if (nodes.length > 0) {
        return {
          method: 'view',
          detail: `view ${v.cidr.text} (${ctx.view.via}) → ${what}`,
          nodes,
          local: false,
          scope: ctx.view.via === 'ecs' ? v.cidr.prefix : 0,
        };
      }
      skipped.push(`view ${v.cidr.text} has no live node`);
    }
    if (ctx.ecs) {
      const subnet = `${formatIp(ctx.ecs.address)}/${ctx.ecs.sourcePrefix}`;
      const hint = await this.#hinted(
        { ip: formatIp(ctx.ecs.address), subnet },
        ctx.ecs.address,
        count,
      );
      if (hint.nodes.length > 0) {
        return {
          method: 'ecs',
          detail: `ecs ${subnet} → hint /${hint.prefix ?? '?'}${hint.note}`,
          nodes: hint.nodes,
          local: false,
          scope: hint.prefix ?? ctx.ecs.sourcePrefix,
        };
      }
      skipped.push(`ecs ${subnet} has no hint${hint.note}`);
    }
    if (ctx.rttLevel >= 1 && typeof ctx.rtt === 'number') {
      for (let level = ctx.rttLevel; level >= 1; level--) {
        const nodes = admit(dir.cluster(level, ask));
        if (nodes.length > 0) {
          const thr = dir.levelThresholdsMs[ctx.rttLevel]!;
          return {
            method: 'rtt',
            detail: `rtt ${ctx.rtt.toFixed(2)} ms < level-${ctx.rttLevel} ${thr} ms → level-${level} cluster`,
            nodes,
            local: level === 2,
            scope: 0,
          };
        }
      }
      skipped.push(`level-${ctx.rttLevel} cluster empty`);
    } else {
      skipped.push(
        ctx.rtt === undefined
          ? 'rtt unknown'
          : ctx.rtt === null
            ? 'resolver unreachable'
            : `rtt ${ctx.rtt.toFixed(2)} ms above every level`,
      );
    }
    const hint = await this.#hinted({ ip: ctx.resolverIp }, ctx.resolver, count);
    if (hint.nodes.length > 0) {
      return {
        method: 'hint',
        detail: `${skipped.join('; ')}; resolver hint /${hint.prefix ?? '?'}${hint.note}`,
        nodes: hint.nodes,
        local: false,
        scope: 0,
      };
    }
    const nodes = admit(dir.random(ask));
    if (nodes.length > 0) {
      return {
        method: 'random',
        detail: `${skipped.join('; ')}; no hint${hint.note} → random`,
        nodes,
        local: false,
        scope: 0,
      };
    }
    return {
      method: 'no-proxy',
      detail: 'no live proxy',
      nodes: [],
      local: false,
      scope: 0,
    };
  }

  /** The nodes with these ids that the directory knows (liveness is checked by the filter). */
  #byIds(ids: string[]): NodeInfo[] {
    const dir = this.#directory;
    if (dir.get) {
      const out: NodeInfo[] = [];
      for (const id of ids) {
        const n = dir.get(id);
        if (n) out.push(n);
      }
      return out;
    }
    const want = new Set(ids);
    return dir.random(10_000).filter((n) => want.has(n.id));
  }

  /**
   * Admitted hinted nodes for `target` (`address` = the bytes hints are looked up by), from the
   * hint cache or a bounded walk, waiting for a walk at most `hintTimeoutMs`. `note` says when the
   * result did not come from a fresh walk or cache entry (it goes into the decision's detail).
   */
  async #hinted(
    target: { ip: string; subnet?: string },
    address: Uint8Array,
    count: number,
    again = true,
  ): Promise<{ nodes: NodeInfo[]; prefix: HintResult['prefix']; note: string }> {
    const found = this.#hints.lookup(target, address, count * CANDIDATE_OVERSAMPLE);
    let result: HintResult;
    let note = '';
    switch (found.kind) {
      case 'skipped':
        return { nodes: [], prefix: null, note: ` (hint walk skipped: ${found.reason})` };
      case 'cached':
        result = found.result;
        if (found.stale) note = ' (stale)';
        break;
      case 'walk': {
        let timer: { cancel(): void } | undefined;
        const timeout = new Promise<undefined>((resolve) => {
          timer = this.#clock.setTimeout(() => resolve(undefined), this.#hintTimeoutMs);
        });
        // The walk is not aborted when the answer stops waiting: it fills the cache.
        const r = await Promise.race([found.walk, timeout]);
        timer?.cancel();
        if (!r) return { nodes: [], prefix: null, note: ' (hint walk still running)' };
        result = r;
        break;
      }
    }
    const nodes = admitCandidates(result.nodes, count, this.#isLive);
    if (nodes.length === 0 && result.nodes.length > 0 && found.kind === 'cached' && again) {
      // Every cached node died: look again (a walk, within the same bounds as any other).
      this.#hints.forget(found.key);
      return this.#hinted(target, address, count, false);
    }
    return { nodes, prefix: nodes.length > 0 ? result.prefix : null, note };
  }
}
