/**
 * Exactly what the node needs from each service package, as structural types. `services.ts`
 * builds the real ones (@coral/dsht, @coral/httpprx, @coral/dnssrv); `CoralNode` only sees these,
 * which keeps the composition readable and tells each package what the process relies on.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccessRecord } from '@coral/accesslog';
import type { ConnectionBudget } from '@coral/connguard';
import type {
  ClusterSnapshot,
  Contact,
  DshtAuthState,
  DshtMember,
  DshtSnapshot,
  FailureDetectionState,
  GetResult,
  KeyRejection,
  MemberChange,
  PutResult,
} from '@coral/dsht';
import type {
  CacheListEntry,
  CommitCandidate,
  ContentIndex,
  FleetMembers,
  MemberReport,
  PeerAuth,
} from '@coral/httpprx';
import type { Keyring } from '@coral/keyring';
import type { ChallengeStore, Decision, DnsStats, NodeDirectory, ProbeEntry } from '@coral/dnssrv';
import type { Logger } from 'pino';
import type { DshtValueStore } from '../adapters/content-index.js';
import type { CoralConfig } from '../config/schema.js';
import type { CoralMetrics } from '../metrics/metrics.js';

/** Where a listener is bound. */
export interface BoundAddress {
  address: string;
  port: number;
}

export interface DshtPort extends DshtValueStore {
  readonly levels: number;
  get(key: Uint8Array, opts?: { signal?: AbortSignal }): Promise<GetResult>;
  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    opts?: { signal?: AbortSignal; level?: number },
  ): Promise<PutResult>;
  routes(level?: number): Contact[];
  ping(
    to: { ip: string; port: number },
    opts?: { signal?: AbortSignal; retries?: number },
  ): Promise<number>;
  start(opts: { bootstrap?: string[]; signal?: AbortSignal }): Promise<void>;
  join(opts?: { signal?: AbortSignal }): Promise<void>;
  stop(): Promise<void>;
  /** Tell every member this node leaves (LEAVE), so they drop it at once; before stop(). */
  leave(): Promise<number>;
  /** Failure detection's view (undefined when it does not run). */
  failureDetection(): FailureDetectionState | undefined;
  readonly contact: { id: Uint8Array; ip: string; port: number };
  localGet(key: Uint8Array, level?: number): Uint8Array[];
  snapshot(): DshtSnapshot;
  /** Cluster state per level, when the DSHT runs levels above 0. */
  clusters?(): ClusterSnapshot;
  /** Verified live members (keyed mode: authenticated), at most `maxIdsPerIp` per IP. */
  members(): DshtMember[];
  member(idHex: string): DshtMember | undefined;
  /** Trust mode, drops by reason, isolation. */
  authState(): DshtAuthState;
  /** Keyed mode: isolation began or ended. */
  on(event: 'isolated', listener: (state: DshtAuthState) => void): void;
  /** Keyed mode: a peer's key notice says it does not accept this node's key id (≤ 1 a minute). */
  on(event: 'key-rejected', listener: (rejection: KeyRejection) => void): void;
  /** Failure detection: a member suspected, declared dead, gone (LEAVE), or back. */
  on(
    event: 'member-suspect' | 'member-dead' | 'member-left' | 'member-alive',
    listener: (change: MemberChange) => void,
  ): void;
  /** A contact learned, a round trip measured: membership may have changed. */
  on(event: 'contact' | 'rtt', listener: () => void): void;
  off(event: 'contact' | 'rtt', listener: () => void): void;
}

export interface ProxyPort {
  /** Open the cache (its database and files); `listen` does it too. Rejects when it cannot. */
  open(): Promise<void>;
  listen(port: number, host?: string): Promise<BoundAddress>;
  close(): Promise<void>;
  cacheList(): Promise<CacheListEntry[]>;
  /**
   * Drop a URL (origin form) and withdraw this node's announcement of it — the proxy owns both —
   * resolving once the withdrawal is done: whether something was dropped, and whether the index
   * took the withdrawal.
   */
  purgeAndWithdraw(url: string): Promise<{ purged: boolean; withdrawn: boolean }>;
  /**
   * Drop every stored response the predicate selects (it reads the normalized URL, the stored
   * response head and the time it was stored) and withdraw URLs left with none; the count.
   */
  purgeWhere(
    match: (meta: { url: string; headers: Record<string, string>; storedAt: number }) => boolean,
  ): Promise<number>;
  /**
   * The request handler both listeners call. The node wraps it before `listen` to refuse
   * blocked origins first (blocklist/gate.ts): httpprx's `listen` and `listenTls` mount
   * `this.handler` as it is when they are called.
   */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * Start the TLS listener for `*.<zone>` and the apex (certificate chain and key in PEM); links
   * then point at the one-label https names on `publicPort` (default `port`).
   */
  listenTls?(options: {
    cert: string;
    key: string;
    port: number;
    host?: string;
    publicPort?: number;
    /** Session-ticket keys (48 bytes; copied): the fleet's, trust/ticket-keys.ts. */
    ticketKeys?: Uint8Array;
  }): Promise<BoundAddress>;
  /** Swap the TLS listener's certificate: new handshakes use it, open connections stay. */
  setTlsCertificate?(certificate: { cert: string; key: string }): void;
  /** Swap the TLS listener's session-ticket keys (48 bytes; copied); kept across certificates. */
  setTlsTicketKeys?(keys: Uint8Array): void;
  /** A member's report of another (httpprx src/audit/): audited there, never obeyed. */
  memberReported?(report: MemberReport, reporter: string): void;
  /** Members quarantined by this node's audit, and suspects. */
  quarantine?(): { quarantined: unknown[]; suspects: unknown[] };
}

export interface DnsPort {
  listen(opts: {
    port: number;
    host: string;
    udp?: boolean;
    tcp?: boolean;
  }): Promise<{ host: string; port: number }>;
  close(): Promise<void>;
  /** A promise where they are gathered from elsewhere (the DNS workers). */
  recentDecisions(): Decision[] | Promise<Decision[]>;
  probeCache(): ProbeEntry[] | Promise<ProbeEntry[]>;
  stats?(): DnsStats;
}

export interface ServiceArgs {
  config: CoralConfig;
  logger: Logger;
  metrics: CoralMetrics;
}

/**
 * Builds the three services; `services.ts` has the real one. `D` is what its `dsht()` builds:
 * the node hands that same object back to `directory()`, so a factory whose directory reads more
 * of its DSHT than `DshtPort` (the real one: a `Dsht`) says so in `D`.
 */
export interface ServiceFactory<D extends DshtPort = DshtPort> {
  dsht(
    args: ServiceArgs & {
      bind: { host: string; port: number };
      /** The node's advertised IP: its DSHT contact (and so its id) carries it. */
      advertise: string;
      dataDir: string;
      service: { httpPort: number; dnsPort?: number; region?: string };
      /** Keyed mode with this keyring; absent: open mode. */
      keyring?: Keyring;
    },
  ): Promise<D>;
  proxy(
    args: ServiceArgs & {
      index: ContentIndex;
      self: { nodeId: string; ip: string; httpPort: number };
      dataDir: string;
      /** The fleet members the proxy may fetch from (absent: no peer fetch). */
      members?: FleetMembers;
      /** Signs outgoing and checks incoming peer requests (keyed mode). */
      peerAuth?: PeerAuth;
      /** The store-time purge check (the node's purge log): may this fetched response be kept? */
      admit?: (c: CommitCandidate) => boolean | Promise<boolean>;
      /** The node-wide connection budget its client listeners register with. */
      connections?: ConnectionBudget;
      /** This node's audit quarantined a member: tell the fleet (trust/member-reports.ts). */
      onQuarantine?: (report: MemberReport) => void;
      /** One access record per request, at its response's end (the access log). */
      onAccess?: (record: AccessRecord) => void;
    },
  ): Promise<ProxyPort> | ProxyPort;
  /** The DNS server's view of the fleet over the DSHT (clusters, hints, liveness). */
  directory(args: { config: CoralConfig; dsht: D }): NodeDirectory;
  dns(
    args: ServiceArgs & {
      directory: NodeDirectory;
      /** ACME DNS-01 TXT values for `_acme-challenge.<zone>`. */
      challenges?: ChallengeStore;
      /** The node-wide connection budget DNS over TCP registers with. */
      connections?: ConnectionBudget;
    },
  ): Promise<DnsPort> | DnsPort;
}
