/** Collaborator interfaces, option types and defaults of the DNS server. */
import type { ConnectionBudget } from '@coral/connguard';
import type { Clock, Random } from '@coral/runtime';
import type { ChallengeStore } from '../acme/challenge-store.js';
import type { DelegationOptions } from '../delegation/delegation.js';
import type { NodeDirectory } from '../node-directory.js';
import type { Prober } from '../probe/prober.js';
import type { HintWalkOptions } from '../locate/hint-walks.js';
import type { RrlOptions } from '../rrl/response-rate-limiter.js';
import type { LocationMethod, NameserverConfig, SoaConfig, ViewConfig } from '../types.js';

export {
  type LocationMethod,
  type NameserverConfig,
  type SoaConfig,
  type ViewConfig,
  DEFAULT_SOA,
} from '../types.js';

/** Logger shape (pino-compatible: an object of fields, then a message). */
export interface DnsLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /** pino's level check; when present, per-answer debug lines are built only if it says yes. */
  isLevelEnabled?(level: string): boolean;
}

/** Metrics hook: the node package maps these onto prom-client counters. */
export interface DnsMetrics {
  /** One response sent: how the client was located (`LocationMethod` or 'none') and its rcode. */
  answer(method: string, rcode: string): void;
  /** One UDP response dropped or slipped by response rate limiting. */
  rateLimited(): void;
}

/** Why an answer was what it was (kept in a ring buffer for the admin API). */
export interface Decision {
  /** Clock time of the response. */
  at: number;
  transport: 'udp' | 'tcp';
  /** Resolver address (the datagram's source). */
  client: string;
  /** Question name, lowercased ('' when the question could not be read). */
  name: string;
  /** Question type number (0 when unreadable). */
  type: number;
  rcode: string;
  /** Location method, or 'none' for answers that do not depend on the client. */
  method: LocationMethod | 'none';
  /** Human-readable reason ("rtt 3.1 ms < level-2 20 ms", "view 10.0.0.0/8 → region north"). */
  detail: string;
  /** Ids of the proxies answered with. */
  nodes: string[];
  /** TTL of the answer records, when any. */
  ttl?: number;
  /** ECS option received (`1.2.3.0/24`) and the scope prefix echoed. */
  ecs?: string;
  scope?: number;
  /** Served from the encoded-answer cache. */
  cached: boolean;
  /** 'sent' normally; 'truncated' (TC), 'rrl-drop' or 'rrl-slip' otherwise. */
  outcome: 'sent' | 'truncated' | 'rrl-drop' | 'rrl-slip';
}

export interface DnsServerComponents {
  directory: NodeDirectory;
  clock?: Clock;
  logger?: DnsLogger;
  metrics?: DnsMetrics;
  /** Resolver RTT prober (default: TCP connect to port 53). */
  prober?: Prober;
  random?: Random;
  /**
   * ACME DNS-01 TXT values for `_acme-challenge.<zone>` (default: none, NODATA). The node passes
   * an `InMemoryChallengeStore` that its admin API and CLI set and remove.
   */
  challenges?: ChallengeStore;
  /**
   * The node-wide connection budget (@coral/connguard) DNS over TCP registers with (listener
   * `dns-tcp`, limits from `tcp`): the node's ceiling spans it and the proxy's listeners. Default:
   * a budget of the server's own, on its clock.
   */
  connections?: ConnectionBudget;
}

export interface TcpLimits {
  /** Close a connection idle this long (default 10 s). */
  idleTimeoutMs?: number;
  /** Largest query message accepted; a bigger length prefix closes the connection (default 4096). */
  maxMessageBytes?: number;
  /** Connections open at once (default 256); when full, the longest-idle one gives way to a new one. */
  maxConnections?: number;
  /** Connections open at once from one source (default 16); further ones are closed at once. */
  maxConnectionsPerSource?: number;
  /** What one source is for `maxConnectionsPerSource`: an IPv4 /32 (default) and an IPv6 /64 (default). */
  ipv4PrefixLength?: number;
  ipv6PrefixLength?: number;
  /** Queries answered per connection before it is closed (default 1000). */
  maxQueriesPerConnection?: number;
}

export interface ProbeSettings {
  /** Probe resolvers at all (default true). */
  enabled?: boolean;
  /** Cache lifetime of a measured RTT (default 10 min) and of "unreachable" (default 1 min). */
  ttlMs?: number;
  failureTtlMs?: number;
  /** Probes in flight at once (default 32). */
  maxInFlight?: number;
  /** Probes started per second, overall (default 20): a bound no source rotation can lift. */
  maxPerSecond?: number;
  /** For the default prober: connect timeout (default 1000 ms) and port (default 53). */
  timeoutMs?: number;
  port?: number;
}

export interface DnsServerOptions {
  /** Zones served (default `['nyud.net']`). */
  zones?: string[];
  /** Proxies per answer (default 2). */
  answerCount?: number;
  /** TTL of proxy answers (default 30 s) ... */
  ttl?: number;
  /** ... and when they are in the resolver's level-2 cluster (default 60 s). */
  localTtl?: number;
  /** TTL of the CNAME to the origin when no proxy is live (default 10 s). */
  cnameTtl?: number;
  /** The fleet's nameservers (default: `ns.<first zone>` at this node's addresses). */
  nameservers?: NameserverConfig[];
  /** TTL of NS records and glue (default 86400 s). */
  nsTtl?: number;
  /** TTL of `_acme-challenge` TXT answers (default 60 s: a CA checks right after the client set them). */
  challengeTtl?: number;
  soa?: SoaConfig;
  views?: ViewConfig[];
  /** Response rate limiting (BIND-style); `{ responsesPerSecond: 0 }` disables it. */
  rrl?: Omit<RrlOptions, 'exempt'> & { exempt?: string[] };
  tcp?: TcpLimits;
  probe?: ProbeSettings;
  /** SO_RCVBUF of the UDP socket, to absorb bursts (default 1 MiB; capped by the OS). */
  udpReceiveBufferBytes?: number;
  /** Largest UDP answer we send and advertise in our OPT (default 1232, the 2020 flag-day value). */
  udpMaxPayload?: number;
  /**
   * The answer cache (default on): templates, at most 10,000 entries and 16 MiB, least recently
   * used evicted; and the classification of up to `maxNames` (20,000) names.
   */
  answerCache?: { enabled?: boolean; maxEntries?: number; maxBytes?: number; maxNames?: number };
  /** Nearby-nameserver delegation per cluster level (default off; see `DelegationOptions`). */
  delegation?: DelegationOptions;
  /** Longest wait of an answer for `NodeDirectory.hinted()` before falling through (default 250 ms). */
  hintTimeoutMs?: number;
  /** The hint cache (per /24) and the bounds on hint walks (see `HintWalkOptions`). */
  hints?: HintWalkOptions;
  /** Size of the recent-decisions ring buffer (default 256). */
  decisionBufferSize?: number;
}

export const DEFAULT_ZONES: readonly string[] = Object.freeze(['nyud.net']);
export const DEFAULT_ANSWER_COUNT = 2;
export const DEFAULT_TTL = 30;
export const DEFAULT_LOCAL_TTL = 60;
export const DEFAULT_CNAME_TTL = 10;
export const DEFAULT_NS_TTL = 86_400;
export const DEFAULT_CHALLENGE_TTL = 60;
export const DEFAULT_TCP_IDLE_TIMEOUT_MS = 10_000;
export const DEFAULT_TCP_MAX_MESSAGE_BYTES = 4096;
export const DEFAULT_TCP_MAX_CONNECTIONS = 256;
export const DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION = 1000;
export const DEFAULT_UDP_MAX_PAYLOAD = 1232;
export const DEFAULT_UDP_RECEIVE_BUFFER_BYTES = 1024 * 1024;
export const DEFAULT_ANSWER_CACHE_ENTRIES = 10_000;
export const DEFAULT_HINT_TIMEOUT_MS = 250;
export const DEFAULT_DECISION_BUFFER_SIZE = 256;
