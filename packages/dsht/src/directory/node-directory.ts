/**
 * A NodeDirectory over a DSHT node: what the DNS redirector asks ("which live proxies are near this
 * address?"). Structurally the `NodeDirectory` of `@coral/dnssrv` (packages/dnssrv/src/node-directory.ts),
 * without importing it, so dsht stays below dnssrv; `@coral/node` passes it through.
 *
 * `near(target, count)`, best first:
 * 1. this node's own cluster at the most local level whose RTT threshold the target is within
 *    (RTT from `rttTo(ip)` when given, else the DSHT's smoothed RTT to a peer at that IP);
 * 2. nodes hinted under the target's /24, then its /16;
 * 3. any live nodes, at random.
 * Only nodes that advertise an HTTP port (proxies) and are live — heard from within `liveWindowMs`
 * with no failed RPC since — are returned; hinted nodes not heard from yet get one direct ping.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Contact } from '../contact.js';
import { DEFAULT_LEVEL_THRESHOLDS_MS, LIVE_WINDOW_MS } from '../constants.js';
import type { Dsht } from '../dsht.js';
import { fromHex, idEquals, toHex } from '../id/id.js';
import { networkHintKeys, regionHintKey } from './hints.js';

/** Same shape as `@coral/dnssrv`'s NodeInfo. */
export interface DirectoryNode {
  id: string;
  ipv4?: string;
  ipv6?: string;
  httpPort: number;
  region?: string;
}

export interface DirectoryHintResult {
  nodes: DirectoryNode[];
  prefix: 24 | 16 | null;
}

export interface DshtDirectoryComponents {
  dsht: Dsht;
  /** Measured RTT from this node to an address (e.g. the DNS server's resolver probes). */
  rttTo?: (ip: string) => number | undefined;
}

export interface DshtDirectoryOptions {
  /** Default LIVE_WINDOW_MS (120 s). */
  liveWindowMs?: number;
  /** RTT threshold per level. Default DEFAULT_LEVEL_THRESHOLDS_MS ([∞, 60, 20]). */
  levelThresholdsMs?: readonly number[];
  /** Timeout of the direct check of a hinted node not heard from. Default 1000 ms. */
  checkTimeoutMs?: number;
}

export function toNodeInfo(c: Contact): DirectoryNode | undefined {
  if (!c.httpPort) return undefined;
  const info: DirectoryNode = { id: toHex(c.id), httpPort: c.httpPort };
  if (isIPv4(c.ip)) info.ipv4 = c.ip;
  else if (isIPv6(c.ip)) info.ipv6 = c.ip;
  if (c.region) info.region = c.region;
  return info;
}

const HEX_ID = /^[0-9a-f]{40}$/;

export class DshtDirectory {
  readonly levelThresholdsMs: readonly number[];
  #dsht: Dsht;
  #rttTo: ((ip: string) => number | undefined) | undefined;
  #window: number;

  constructor(components: DshtDirectoryComponents, options: DshtDirectoryOptions = {}) {
    this.#dsht = components.dsht;
    this.#rttTo = components.rttTo;
    this.#window = options.liveWindowMs ?? LIVE_WINDOW_MS;
    this.levelThresholdsMs = options.levelThresholdsMs ?? DEFAULT_LEVEL_THRESHOLDS_MS;
  }

  self(): DirectoryNode {
    const c = this.#dsht.contact;
    return toNodeInfo(c) ?? { id: toHex(c.id), ipv4: isIPv4(c.ip) ? c.ip : undefined, httpPort: 0 };
  }

  #live(c: Contact): boolean {
    return this.#dsht.isLive(c.id, this.#window);
  }

  /**
   * Whether the node with this id (40 hex digits) is live: this node itself, or heard from within
   * the live window with no failed RPC since. Two map lookups, no table scan: the DNS server asks
   * for every proxy of a cached answer on every cache hit.
   */
  isLive(id: string): boolean {
    if (id === toHex(this.#dsht.contact.id)) return true;
    if (!HEX_ID.test(id)) return false;
    return this.#dsht.isLive(fromHex(id), this.#window);
  }

  /** Live proxies in this node's table at `level` (its cluster there), this node first when it serves. */
  cluster(level: number, count: number): DirectoryNode[] {
    const out: DirectoryNode[] = [];
    const me = toNodeInfo(this.#dsht.contact);
    if (me) out.push(me);
    const entries = [...this.#dsht.routeEntries(level)].sort((a, b) => b.lastSeen - a.lastSeen);
    for (const e of entries) {
      if (out.length >= count) break;
      if (!this.#live(e.contact)) continue;
      const info = toNodeInfo(e.contact);
      if (info) out.push(info);
    }
    return out.slice(0, count);
  }

  /** Up to `count` live proxies at random (level-0 table). */
  random(count: number): DirectoryNode[] {
    const pool = this.#dsht
      .routeEntries(0)
      .filter((e) => e.contact.httpPort && this.#live(e.contact));
    const out: DirectoryNode[] = [];
    const rng = this.#dsht.random;
    while (pool.length > 0 && out.length < count) {
      const [e] = pool.splice(rng.int(pool.length), 1);
      const info = e && toNodeInfo(e.contact);
      if (info) out.push(info);
    }
    return out;
  }

  /** Live proxies whose region is `region`, from the routing tables. */
  inRegion(region: string, count: number): DirectoryNode[] {
    const out: DirectoryNode[] = [];
    const seen = new Set<string>();
    for (let level = this.#dsht.levels - 1; level >= 0; level--) {
      for (const e of this.#dsht.routeEntries(level)) {
        const hex = toHex(e.contact.id);
        if (
          out.length >= count ||
          seen.has(hex) ||
          e.contact.region !== region ||
          !this.#live(e.contact)
        )
          continue;
        const info = toNodeInfo(e.contact);
        if (info) {
          seen.add(hex);
          out.push(info);
        }
      }
    }
    return out;
  }

  /** Live proxies hinted under the target's /24, else its /16. */
  async hinted(
    target: { ip: string; subnet?: string },
    count: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<DirectoryHintResult> {
    for (const h of networkHintKeys(target.ip)) {
      const found = await this.#dsht.lookupHint(h.key, opts).catch(() => [] as Contact[]);
      const nodes = await this.#liveOnly(found, count, opts.signal);
      if (nodes.length > 0) return { nodes, prefix: h.kind === 24 ? 24 : 16 };
    }
    return { nodes: [], prefix: null };
  }

  /** Live proxies hinted under a region label. */
  async hintedRegion(
    region: string,
    count: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<DirectoryNode[]> {
    const found = await this.#dsht
      .lookupHint(regionHintKey(region).key, opts)
      .catch(() => [] as Contact[]);
    return this.#liveOnly(found, count, opts.signal);
  }

  async near(
    target: { ip: string; subnet?: string },
    count: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<DirectoryNode[]> {
    const out: DirectoryNode[] = [];
    const add = (list: DirectoryNode[]): void => {
      for (const n of list) if (out.length < count && !out.some((o) => o.id === n.id)) out.push(n);
    };
    const rtt = this.#rttTo?.(target.ip) ?? this.#peerRtt(target.ip);
    if (rtt !== undefined) {
      for (
        let level = Math.min(this.#dsht.levels, this.levelThresholdsMs.length) - 1;
        level >= 1;
        level--
      ) {
        if (rtt < (this.levelThresholdsMs[level] ?? 0)) {
          add(this.cluster(level, count));
          break;
        }
      }
    }
    if (out.length < count) add((await this.hinted(target, count, opts)).nodes);
    if (out.length < count) add(this.random(count));
    return out;
  }

  #peerRtt(ip: string): number | undefined {
    for (const [addr, e] of this.#dsht.rpc.rtt.entries()) {
      if (addr.slice(0, addr.lastIndexOf(':')).replace(/^\[|\]$/g, '') === ip) return e.srtt;
    }
    return undefined;
  }

  async #liveOnly(found: Contact[], count: number, signal?: AbortSignal): Promise<DirectoryNode[]> {
    const self = this.#dsht.contact;
    const candidates = found.filter((c) => c.httpPort && !this.#dsht.isSuspect(c.id));
    const checks = candidates.map(async (c) => {
      if (idEquals(c.id, self.id) || this.#live(c)) return c;
      try {
        await this.#dsht.ping(c, { signal, retries: 0 });
        return c;
      } catch {
        return undefined;
      }
    });
    const live = (await Promise.all(checks)).filter((c): c is Contact => c !== undefined);
    return live.map((c) => toNodeInfo(c)!).slice(0, count);
  }
}
