/**
 * An in-memory {@link NodeDirectory}: nodes, their liveness, which of them share this node's
 * cluster at each level, and locality hints per /24 and /16. Tests build fleets with it; the node
 * package may use it for a single node or a static fleet.
 *
 * ```ts
 * const dir = new InMemoryNodeDirectory({}, { self: { id: 'a'.repeat(40), ipv4: '10.0.0.1', httpPort: 8090 } });
 * dir.add({ id: 'b'.repeat(40), ipv4: '10.0.0.2', httpPort: 8090 }, { clusters: [1, 2], hints: ['198.51.100.0/24'] });
 * dir.setLive('b'.repeat(40), false);
 * ```
 */
import { type Random, shuffle, systemRandom } from '@coral/runtime';
import { DnsConfigError } from '../errors.js';
import { maskBytes, parseCidr, parseIp, formatIp } from '../net/ip.js';
import type { HintResult, NodeDirectory, NodeInfo } from '../node-directory.js';

/** Coral's default level thresholds: level 0 global, level 1 < 60 ms, level 2 < 20 ms. */
export const DEFAULT_LEVEL_THRESHOLDS_MS: readonly number[] = Object.freeze([Infinity, 60, 20]);

export interface InMemoryNodeOptions {
  /** Live right away (default true). */
  live?: boolean;
  /** Levels (1, 2) at which this node is in the same cluster as `self` (default none). */
  clusters?: number[];
  /** Prefixes (`a.b.c.0/24` or `a.b.0.0/16`) the node advertised itself under (default none). */
  hints?: string[];
}

interface Entry {
  info: NodeInfo;
  live: boolean;
  clusters: Set<number>;
}

export interface InMemoryNodeDirectoryOptions {
  self: NodeInfo;
  /** Is `self` a live proxy too (default true)? */
  selfLive?: boolean;
  levelThresholdsMs?: readonly number[];
}

export class InMemoryNodeDirectory implements NodeDirectory {
  readonly levelThresholdsMs: readonly number[];
  readonly #random: Random;
  readonly #nodes = new Map<string, Entry>();
  readonly #hints = new Map<string, Set<string>>();
  readonly #selfId: string;

  constructor(components: { random?: Random }, options: InMemoryNodeDirectoryOptions) {
    this.#random = components.random ?? systemRandom;
    this.levelThresholdsMs = options.levelThresholdsMs ?? DEFAULT_LEVEL_THRESHOLDS_MS;
    this.#selfId = options.self.id;
    this.#nodes.set(options.self.id, {
      info: options.self,
      live: options.selfLive ?? true,
      clusters: new Set([0, 1, 2]),
    });
  }

  /** Add (or replace) a node. */
  add(info: NodeInfo, opts: InMemoryNodeOptions = {}): this {
    this.#nodes.set(info.id, {
      info,
      live: opts.live ?? true,
      clusters: new Set([0, ...(opts.clusters ?? [])]),
    });
    for (const h of opts.hints ?? []) this.hint(h, info.id);
    return this;
  }

  remove(id: string): void {
    this.#nodes.delete(id);
    for (const set of this.#hints.values()) set.delete(id);
  }

  setLive(id: string, live: boolean): void {
    const e = this.#nodes.get(id);
    if (e) e.live = live;
  }

  /** Record that node `id` put itself under `prefix` (a /24 or /16). */
  hint(prefix: string, id: string): void {
    const cidr = parseCidr(prefix);
    if (cidr.family !== 4 || (cidr.prefix !== 24 && cidr.prefix !== 16)) {
      throw new DnsConfigError(`hint prefix must be an IPv4 /24 or /16, got "${prefix}"`);
    }
    let set = this.#hints.get(cidr.text);
    if (!set) this.#hints.set(cidr.text, (set = new Set()));
    set.add(id);
  }

  self(): NodeInfo {
    return this.#nodes.get(this.#selfId)!.info;
  }

  isLive(id: string): boolean {
    return this.#nodes.get(id)?.live ?? false;
  }

  get(id: string): NodeInfo | undefined {
    const e = this.#nodes.get(id);
    return e?.live ? e.info : undefined;
  }

  cluster(level: number, count: number): NodeInfo[] {
    const self = this.#nodes.get(this.#selfId)!;
    const others = [...this.#nodes.values()].filter(
      (e) => e !== self && e.live && e.clusters.has(level),
    );
    shuffle(others, this.#random);
    const out = self.live ? [self, ...others] : others;
    return out.slice(0, Math.max(0, count)).map((e) => e.info);
  }

  async hinted(target: { ip: string; subnet?: string }, count: number): Promise<HintResult> {
    const bytes = parseIp(target.subnet ? target.subnet.split('/')[0]! : target.ip);
    if (!bytes || bytes.length !== 4) return { nodes: [], prefix: null };
    for (const prefix of [24, 16] as const) {
      const key = `${formatIp(maskBytes(bytes, prefix))}/${prefix}`;
      const ids = this.#hints.get(key);
      if (!ids) continue;
      const nodes = [...ids]
        .map((id) => this.#nodes.get(id))
        .filter((e): e is Entry => e !== undefined && e.live);
      if (nodes.length > 0) {
        return {
          nodes: shuffle(nodes, this.#random)
            .slice(0, count)
            .map((e) => e.info),
          prefix,
        };
      }
    }
    return { nodes: [], prefix: null };
  }

  random(count: number): NodeInfo[] {
    const live = [...this.#nodes.values()].filter((e) => e.live);
    return shuffle(live, this.#random)
      .slice(0, Math.max(0, count))
      .map((e) => e.info);
  }

  inRegion(region: string, count: number): NodeInfo[] {
    const live = [...this.#nodes.values()].filter((e) => e.live && e.info.region === region);
    return shuffle(live, this.#random)
      .slice(0, Math.max(0, count))
      .map((e) => e.info);
  }

  async near(target: { ip: string; subnet?: string }, count: number): Promise<NodeInfo[]> {
    const out: NodeInfo[] = [];
    const seen = new Set<string>();
    const push = (nodes: NodeInfo[]) => {
      for (const n of nodes) {
        if (out.length < count && !seen.has(n.id)) {
          seen.add(n.id);
          out.push(n);
        }
      }
    };
    push((await this.hinted(target, count)).nodes);
    push(this.random(count));
    return out;
  }
}
