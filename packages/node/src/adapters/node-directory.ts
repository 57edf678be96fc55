/**
 * The DSHT as the DNS server's `NodeDirectory` (`@coral/dnssrv`): what the DNS redirector asks
 * ("which live proxies are near this address?"), answered from this node's DSHT.
 *
 * `near(target, count)`, best first:
 * 1. this node's own cluster at the most local level whose RTT threshold the target is within
 *    (RTT from `rttTo(ip)` when given, else the DSHT's smoothed RTT to a peer at that IP);
 * 2. nodes hinted under the target's /24, then its /16;
 * 3. any live members, at random.
 *
 * It names only *verified live members* (`Dsht.member()`: a round trip with the node — in keyed
 * mode over authenticated datagrams — heard from within `liveWindowMs`, no failed RPC since) that
 * advertise an HTTP port, with the address and ports the member itself advertised when verified —
 * never what a hint record or a value claims — and never two ids of one IP in one answer. A hinted
 * node that is not a member yet gets one direct ping (which verifies it) and is named only if that
 * made it a member.
 *
 * This node itself is named where the DNS server asks about a region or a node id (`inRegion`,
 * `get`): the routing tables and the members never hold it, so a view naming this node (or its
 * region) would otherwise skip it on its own DNS server.
 */
import { isIPv4, isIPv6 } from 'node:net';
import {
  DEFAULT_LEVEL_THRESHOLDS_MS,
  idEquals,
  networkHintKeys,
  regionHintKey,
  toHex,
  type Contact,
  type Dsht,
} from '@coral/dsht';
import type { HintResult, NodeDirectory, NodeInfo } from '@coral/dnssrv';

/** The part of the DSHT this adapter uses. */
export type DshtMembers = Pick<
  Dsht,
  | 'contact'
  | 'levels'
  | 'random'
  | 'member'
  | 'members'
  | 'routeEntries'
  | 'isSuspect'
  | 'ping'
  | 'lookupHint'
> & { readonly rpc: Pick<Dsht['rpc'], 'rtt'> };

export interface DshtDirectoryComponents {
  dsht: DshtMembers;
  /** Measured RTT from this node to an address (e.g. the DNS server's resolver probes). */
  rttTo?: (ip: string) => number | undefined;
}

export interface DshtDirectoryOptions {
  /** Ignored: liveness is the DSHT's (`DshtOptions.liveWindowMs`, default 120 s). Kept for compatibility. */
  liveWindowMs?: number;
  /** RTT threshold per level. Default DEFAULT_LEVEL_THRESHOLDS_MS ([∞, 60, 20]). */
  levelThresholdsMs?: readonly number[];
  /** Timeout of the direct check of a hinted node not heard from. Default 1000 ms. */
  checkTimeoutMs?: number;
}

/** A contact or member as the DNS server knows a proxy; undefined when it serves no HTTP. */
export function toNodeInfo(c: {
  id: Uint8Array | string;
  ip: string;
  httpPort?: number;
  dnsPort?: number;
  region?: string;
}): NodeInfo | undefined {
  if (!c.httpPort) return undefined;
  const info: NodeInfo = {
    id: typeof c.id === 'string' ? c.id : toHex(c.id),
    httpPort: c.httpPort,
  };
  if (isIPv4(c.ip)) info.ipv4 = c.ip;
  else if (isIPv6(c.ip)) info.ipv6 = c.ip;
  if (c.dnsPort) info.dnsPort = c.dnsPort;
  if (c.region) info.region = c.region;
  return info;
}

const HEX_ID = /^[0-9a-f]{40}$/;
/** Hinted nodes that are not members yet pinged per lookup at most. */
const HINT_PINGS = 8;

/** Collects directory answers: distinct ids, never two of one IP, up to `count`. */
class Answer {
  readonly nodes: NodeInfo[] = [];
  #ids = new Set<string>();
  #ips = new Set<string>();
  constructor(readonly count: number) {}

  get full(): boolean {
    return this.nodes.length >= this.count;
  }

  add(n: NodeInfo | undefined): void {
    if (!n || this.full) return;
    const ip = n.ipv4 ?? n.ipv6 ?? '';
    if (this.#ids.has(n.id) || this.#ips.has(ip)) return;
    this.#ids.add(n.id);
    this.#ips.add(ip);
    this.nodes.push(n);
  }
}

export class DshtDirectory implements NodeDirectory {
  readonly levelThresholdsMs: readonly number[];
  #dsht: DshtMembers;
  #rttTo: ((ip: string) => number | undefined) | undefined;

  constructor(components: DshtDirectoryComponents, options: DshtDirectoryOptions = {}) {
    this.#dsht = components.dsht;
    this.#rttTo = components.rttTo;
    this.levelThresholdsMs = options.levelThresholdsMs ?? DEFAULT_LEVEL_THRESHOLDS_MS;
  }

  self(): NodeInfo {
    const c = this.#dsht.contact;
    return toNodeInfo(c) ?? { id: toHex(c.id), ipv4: isIPv4(c.ip) ? c.ip : undefined, httpPort: 0 };
  }

  /** The verified live member with this hex id, as a proxy, or undefined. */
  #proxy(hex: string): NodeInfo | undefined {
    const m = this.#dsht.member(hex);
    return m ? toNodeInfo(m) : undefined;
  }

  /**
   * Whether the node with this id (40 hex digits) is live: this node itself, or a verified member
   * heard from within the live window with no failed RPC since. Map lookups, no table scan: the DNS
   * server asks for every proxy of a cached answer on every cache hit.
   */
  isLive(id: string): boolean {
    if (id === toHex(this.#dsht.contact.id)) return true;
    if (!HEX_ID.test(id)) return false;
    return this.#dsht.member(id) !== undefined;
  }

  /** Live proxies in this node's table at `level` (its cluster there), this node first when it serves. */
  cluster(level: number, count: number): NodeInfo[] {
    const out = new Answer(count);
    out.add(toNodeInfo(this.#dsht.contact));
    const entries = [...this.#dsht.routeEntries(level)].sort((a, b) => b.lastSeen - a.lastSeen);
    for (const e of entries) {
      if (out.full) break;
      out.add(this.#proxy(toHex(e.contact.id)));
    }
    return out.nodes;
  }

  /** Up to `count` live proxies at random, from the verified members. */
  random(count: number): NodeInfo[] {
    const pool = this.#dsht.members().filter((m) => m.httpPort);
    const out = new Answer(count);
    const rng = this.#dsht.random;
    while (pool.length > 0 && !out.full) {
      const [m] = pool.splice(rng.int(pool.length), 1);
      out.add(toNodeInfo(m!));
    }
    return out.nodes;
  }

  /** Live proxies whose region is `region`: this node first when it is there, then the members. */
  inRegion(region: string, count: number): NodeInfo[] {
    const self = this.self();
    const out = new Answer(count);
    for (const m of this.#dsht.members()) if (m.region === region) out.add(toNodeInfo(m));
    return self.region === region ? [self, ...out.nodes].slice(0, count) : out.nodes;
  }

  /** The live proxy with this id (this node included), when known. */
  get(id: string): NodeInfo | undefined {
    const self = this.self();
    if (self.id === id) return self;
    return this.random(Number.MAX_SAFE_INTEGER).find((n) => n.id === id);
  }

  /** Live proxies hinted under the target's /24, else its /16. */
  async hinted(
    target: { ip: string; subnet?: string },
    count: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<HintResult> {
    for (const h of networkHintKeys(target.ip)) {
      const found = await this.#dsht.lookupHint(h.key, opts).catch(() => [] as Contact[]);
      const nodes = await this.#verified(found, count, opts.signal);
      if (nodes.length > 0) return { nodes, prefix: h.kind === 24 ? 24 : 16 };
    }
    return { nodes: [], prefix: null };
  }

  /** Live proxies hinted under a region label. */
  async hintedRegion(
    region: string,
    count: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<NodeInfo[]> {
    const found = await this.#dsht
      .lookupHint(regionHintKey(region).key, opts)
      .catch(() => [] as Contact[]);
    return this.#verified(found, count, opts.signal);
  }

  async near(
    target: { ip: string; subnet?: string },
    count: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<NodeInfo[]> {
    const out = new Answer(count);
    const add = (list: NodeInfo[]): void => list.forEach((n) => out.add(n));
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
    if (!out.full) add((await this.hinted(target, count, opts)).nodes);
    if (!out.full) add(this.random(count));
    return out.nodes;
  }

  #peerRtt(ip: string): number | undefined {
    for (const [addr, e] of this.#dsht.rpc.rtt.entries()) {
      if (addr.slice(0, addr.lastIndexOf(':')).replace(/^\[|\]$/g, '') === ip) return e.srtt;
    }
    return undefined;
  }

  /**
   * Hinted nodes as directory entries: members as they verified themselves; others pinged once
   * (the round trip makes them members when their IP is free) and named only if that worked.
   */
  async #verified(found: Contact[], count: number, signal?: AbortSignal): Promise<NodeInfo[]> {
    const self = this.#dsht.contact;
    const candidates = found.filter(
      (c) => c.httpPort && !idEquals(c.id, self.id) && !this.#dsht.isSuspect(c.id),
    );
    const me = found.some((c) => idEquals(c.id, self.id)) ? toNodeInfo(self) : undefined;
    // Hint records are values anyone with a round trip may store: ping few of them (a failed one
    // stays suspect, so an address named in junk records is pinged once), none whose IP already
    // holds a member (it could not become one), so records cannot aim this node at third parties.
    const memberIps = new Set(this.#dsht.members().map((m) => m.ip));
    const unknown = candidates
      .filter((c) => !this.#dsht.member(toHex(c.id)) && !memberIps.has(c.ip))
      .slice(0, Math.min(count, HINT_PINGS));
    await Promise.all(
      unknown.map((c) => this.#dsht.ping(c, { signal, retries: 0 }).catch(() => undefined)),
    );
    const out = new Answer(count);
    out.add(me);
    for (const c of candidates) out.add(this.#proxy(toHex(c.id)));
    return out.nodes;
  }
}
