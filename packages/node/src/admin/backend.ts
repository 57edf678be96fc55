/**
 * What the admin API needs from a running node. The node's admin view (compose/admin-view.ts)
 * implements it over the real DSHT, proxy and DNS server; the admin API itself knows nothing of
 * them, which is what lets its access rules and routing be tested on their own.
 */
import type { DnsWorkerState } from '../workers/dns-workers.js';
import type {
  ClusterSnapshot,
  Contact,
  DshtAuthState,
  DshtMember,
  DshtSnapshot,
  LookupStats,
  PutResult,
} from '@coral/dsht';
import type { Decision, NodeInfo, ProbeEntry } from '@coral/dnssrv';
import type { CacheListEntry } from '@coral/httpprx';
import type { FleetView } from './dashboard/fleet.js';
import type { TicketKeyStatus } from '../trust/ticket-keys.js';

/** Where a node's services listen and what it advertises. */
export interface NodeInfoView {
  nodeId: string;
  version: string;
  zone: string;
  region?: string;
  advertiseIp: string;
  startedAt: string;
  uptimeSeconds: number;
  services: {
    proxy: { host: string; port: number } | null;
    /** The proxy's TLS listener (issue 11); null while TLS is off. */
    proxyTls?: { host: string; port: number } | null;
    dsht: { host: string; port: number } | null;
    dns: { host: string; port: number } | null;
    admin: { host: string; port: number } | null;
  };
  /**
   * The TLS listener's session-ticket keys (trust/ticket-keys.ts: source, epoch, a fingerprint
   * equal on members holding the same keys, the next rotation); absent while TLS is off.
   */
  tlsTicketKeys?: TicketKeyStatus;
}

export interface ReadinessView {
  ready: boolean;
  /**
   * One entry per check (`proxy`, `dns`, `dsht`, `joined`, and in keyed mode `fleetKeys`: not
   * isolated from the fleet), true when it passes.
   */
  checks: Record<string, boolean>;
  /** Why it is not ready, when a check has more to say (isolation names the key ids). */
  reason?: string;
}

/** The fleet keys by id (never a secret), and where they came from. */
export interface FleetKeysView {
  mode: 'keyed' | 'open';
  /** Primary first. */
  keys: { id: string; primary: boolean }[];
  source?: 'config' | 'keysFile' | 'generated' | 'dataDir';
  /** The data directory's key file, when the keys came from it. */
  keyFile?: string;
}

export interface LocalValueView {
  value: Uint8Array;
  /** Cluster levels (0 global, 1, 2) this node stores the value at, ascending. */
  levels: number[];
}

export interface DshtGetView {
  values: Uint8Array[];
  stats: LookupStats;
}

/** The DSHT's levels (routing table sizes), its clustering and the live proxies. */
export interface ClustersView {
  levels: DshtSnapshot['levels'];
  /** The clustering snapshot per level; null when the DSHT runs level 0 alone. */
  clusters: ClusterSnapshot | null;
  liveProxies: NodeInfo[];
}

/** Trust mode, drop counters by reason, isolation, and the verified live members. */
export interface FleetAuthView extends DshtAuthState {
  members: DshtMember[];
}

export interface AdminBackend {
  info(): NodeInfoView;
  readiness(): ReadinessView;
  /** Clusters per level (id, size, age) and routing table sizes. */
  clusters(): ClustersView;
  /** Contacts of the routing table of `level`. */
  routes(level: number): Contact[];
  /** Number of cluster levels (routes accepts 0 .. levels-1). */
  readonly levels: number;
  /**
   * Values stored on this node under `key` (no network), each once, with the cluster levels it is
   * stored at (a put stores at every level, so the closest node often holds a value at several).
   */
  localGet(key: Uint8Array): Promise<LocalValueView[]> | LocalValueView[];
  /** A network get (hierarchical lookup). */
  get(key: Uint8Array, signal: AbortSignal): Promise<DshtGetView>;
  /** A network put (sloppy insertion). */
  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    signal: AbortSignal,
  ): Promise<PutResult>;
  /** Objects in the proxy's cache. */
  cacheList(): Promise<CacheListEntry[]> | CacheListEntry[];
  /** The origin domains the proxy refuses (canonical), when the node has a blocklist. */
  blocklist?(): { domains: string[] };
  /** Drop `url` from the cache and withdraw this node's announcement of it (this node only). */
  cachePurge(url: string): Promise<{ purged: boolean; withdrawn: boolean }>;
  /** The DNS server's resolver probe cache (RTT per /24). */
  probeCache(): ProbeEntry[] | Promise<ProbeEntry[]>;
  /** Recent DNS answers with the reason each was chosen. */
  dnsDecisions(): Decision[] | Promise<Decision[]>;
  /**
   * The worker threads (`workers` ≥ 2): each one's state, restarts and queries; empty with one
   * thread. Optional (a backend without workers).
   */
  workers?(): Promise<DnsWorkerState[]>;
  /** This node, the members it knows with the cluster levels they share, and its routing tables. */
  fleet(): FleetView;
  /** Fleet keys by id. */
  fleetKeys(): FleetKeysView;
  /** Add a key (it verifies at once, signs once `useKey`d); returns its id. */
  installKey(key: string): { id: string; keys: FleetKeysView['keys'] };
  /** Make a held key the primary (the one that signs). */
  useKey(id: string): { keys: FleetKeysView['keys'] };
  /** Drop a key; the primary is refused. */
  removeKey(id: string): { keys: FleetKeysView['keys'] };
  /** Trust mode, drop counters, isolation and the verified members. */
  fleetAuth(): FleetAuthView;
  /** A DSHT PING to `address`: RTT in ms (rejects when it does not answer). */
  ping(
    address: { ip: string; port: number },
    signal: AbortSignal,
    retries?: number,
  ): Promise<number>;
}
