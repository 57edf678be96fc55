/**
 * The boundary between the DNS redirector and the fleet. dnssrv only ever sees this interface;
 * `@coral/node` implements it over the DSHT (clusters, hints, liveness), and tests use an
 * in-memory directory.
 */

/** A Coral node as the DNS server needs to know it. */
export interface NodeInfo {
  /** Hex node ID (40 hex chars). */
  id: string;
  /** IPv4 address of the node's HTTP proxy (A records). */
  ipv4?: string;
  /** IPv6 address of the node's HTTP proxy (AAAA records). */
  ipv6?: string;
  /** Port the node's HTTP proxy listens on. */
  httpPort: number;
  /**
   * Optional (added by dnssrv, compatible): the port the node's DNS server answers on, at the
   * same addresses; absent when it runs none. Delegation names only members whose DNS port is the
   * one resolvers ask (53), with the DSHT contact's `dnsPort`.
   */
  dnsPort?: number;
  /** Configured region label, if any. */
  region?: string;
}

/** What the directory knows about a target network, for the DNS server's "locate the client" step. */
export interface HintResult {
  nodes: NodeInfo[];
  /** Which hint matched: the target's /24, its /16, or none. */
  prefix: 24 | 16 | null;
}

export interface NodeDirectory {
  /** This node. */
  self(): NodeInfo;
  /**
   * Live proxies near `target`, best first: this node's own clusters when the target is within a
   * level's RTT, then nodes hinted under the target's /24 and /16, then any live nodes.
   */
  near(
    target: { ip: string; subnet?: string },
    count: number,
    opts?: { signal?: AbortSignal },
  ): Promise<NodeInfo[]>;
  /** Live members of this node's cluster at `level` (1 or 2), this node first when it serves. */
  cluster(level: number, count: number): NodeInfo[];
  /** Live nodes that advertised themselves under the target's /24, else its /16. */
  hinted(
    target: { ip: string; subnet?: string },
    count: number,
    opts?: { signal?: AbortSignal },
  ): Promise<HintResult>;
  /** Up to `count` live nodes chosen at random. */
  random(count: number): NodeInfo[];
  /** Live nodes whose configured region is `region`. */
  inRegion(region: string, count: number): NodeInfo[];
  /** RTT threshold in ms of each level (index = level; level 0 is Infinity): default [Infinity, 60, 20]. */
  readonly levelThresholdsMs: readonly number[];
  /**
   * Optional (added by dnssrv, compatible): is node `id` live right now? The DNS server checks the
   * proxies of a cached answer with it, so a proxy that dies stops being served before the cached
   * answer's TTL runs out. Without it, cached answers live for their full TTL.
   */
  isLive?(id: string): boolean;
  /**
   * Optional (added by dnssrv, compatible): the live node with this id, if known. Views that list
   * node ids use it; without it they scan `random(...)` for the ids.
   */
  get?(id: string): NodeInfo | undefined;
}
