/**
 * The public types of a DSHT node: what `new Dsht(components, options)` takes, the events it
 * emits, what its get, put, members(), authState() and snapshot() return, and the cluster policy
 * it consults for levels > 0.
 */
import type { Clock, Random } from '@coral/runtime';
import type { Keyring } from '@coral/keyring';
import type { AuthCounters, AuthMode, IsolationState } from './auth/datagram-auth.js';
import type { KeyNoticeCounters, KeyNoticesOptions, KeyRejection } from './auth/key-notices.js';
import type { DshtClusterBindingOptions } from './cluster/dsht-binding.js';
import type { Address, ClusterAdvert, Contact, ServiceInfo } from './contact.js';
import type { Swim, SwimOptions, SwimState } from './membership/swim.js';
import type { KeyValueDb } from './persistence/persistence.js';
import type { RateLimit, RateLimits } from './limits/rate-limiter.js';
import type { DshtMetrics, Logger, RpcCounters } from './rpc/rpc.js';
import type { ValueStoreOptions } from './store/value-store.js';
import type { Transport } from './transport/transport.js';
import type { WireValue } from './wire/messages.js';

/** How levels above 0 are formed; the cluster module implements it (issue 3). */
export interface ClusterPolicy {
  /** Cluster adverts sent in every message (per level, level 0 included or not). */
  adverts(): ClusterAdvert[];
  /** Whether `contact` belongs in this node's routing table at `level` (> 0). */
  admits(level: number, contact: Contact): boolean;
  /** A JSON-able view of the clusters, included in `Dsht.snapshot()`. */
  snapshot?(): unknown;
}

/** The events of a `Dsht` node. */
export type DshtEvents = {
  /** Every RTT sample from a round trip with a member. */
  rtt: [peer: Contact, rttMs: number];
  /** Every round-trip-verified sender admitted as a member (its contact carries its cluster adverts). */
  contact: [peer: Contact];
  /** A member dropped: replaced at its IP by a newer id, or forgotten beyond capacity. */
  evicted: [peer: Contact];
  /** Keyed mode: the node became isolated (its fleet's keys changed without it) or recovered. */
  isolated: [state: DshtAuthState];
  /**
   * Keyed mode: a peer answered one of this node's first-contact requests with a key notice — it
   * does not accept this node's key id. A hint (notices are unauthenticated), at most once per
   * `auth.keyNotices.reportIntervalMs`; nothing else changes.
   */
  'key-rejected': [rejection: KeyRejection];
  /** Failure detection: a member did not answer probes, direct or indirect (still a member). */
  'member-suspect': [change: MemberChange];
  /** Failure detection: a suspicion ran out unrefuted; the member is out of members() and the tables. */
  'member-dead': [change: MemberChange];
  /** A member left gracefully (its LEAVE): out at once. */
  'member-left': [change: MemberChange];
  /** A dead or departed member is back (a round trip with a higher incarnation). */
  'member-alive': [change: MemberChange];
};

export interface DshtComponents {
  transport: Transport;
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  /** A `level` database (contacts and values persist there); none keeps everything in memory. */
  db?: KeyValueDb;
  metrics?: DshtMetrics;
  /**
   * A fixed cluster membership for levels > 0 (tests, simulations). Nodes that form their
   * clusters set `options.clustering` instead (not both). Without either, a level > 0 admits
   * nobody.
   */
  cluster?: ClusterPolicy;
  /**
   * The fleet keyring: keyed mode (every datagram authenticated) when present. Its 'change'
   * events (install / use / remove / replace) take effect at once.
   */
  keyring?: Keyring;
}

export interface DshtOptions {
  /** Cluster levels run by this node (1 = global only, up to LEVEL_COUNT). Default 1. */
  levels?: number;
  /**
   * Form the clusters of levels > 0 from measured RTTs (Coral's epidemic clustering,
   * docs/dsht-clustering.md): the node builds and owns a `DshtClusterBinding` with these options
   * (`node.clustering`). Default: none (a fixed `components.cluster`, or no clusters).
   */
  clustering?: DshtClusterBindingOptions;
  /** k. Default KBUCKET_SIZE (20). */
  k?: number;
  /** Contacts per GET / STORE_PROBE answer, and asked per FIND_NODE by a walk. Default WALK_CONTACTS (8). */
  walkContacts?: number;
  /** α. Default ALPHA (3). */
  alpha?: number;
  /** Coral's halving walk (true) or closest-first Kademlia (false). Default true. */
  halving?: boolean;
  /** Service info advertised in every message. */
  service?: ServiceInfo;
  /** Accept peers whose advertised IP is not their source IP. Default false. */
  allowNat?: boolean;
  /**
   * The address peers reach this node at, when it differs from the bound one (a wildcard bind, or a
   * NAT in front — then peers need `allowNat`). The node id is SHA-1 of this address.
   */
  advertise?: { ip: string; port?: number };
  /** RPC tunables (defaults in constants.ts). */
  rpcTimeoutMs?: number;
  rpcRetries?: number;
  rpcBackoff?: number;
  /** Value-store tunables (l, β, window, caps). */
  store?: ValueStoreOptions;
  /** i3 shortcut lifetime; 0 disables. Default SHORTCUT_TTL_MS (30 s). */
  shortcutTtlMs?: number;
  /**
   * How long a put's placement is reused by the next put of the same key (a refresh: one STORE per
   * level where the walk stored it); 0 disables. At most half the value's TTL. Default
   * PUT_SHORTCUT_MS (5 min).
   */
  putShortcutMs?: number;
  /** Minimum hops of an answer for path caching; 0 disables. Default PATH_CACHE_MIN_HOPS (2). */
  pathCacheMinHops?: number;
  /** Nodes the reverse phase tries. Default PUT_REVERSE_TRIES (8). */
  putReverseTries?: number;
  /** Refresh buckets below the closest neighbour's at join. Default true. */
  joinRefresh?: boolean;
  /** How often dirty state is written to the db. Default PERSIST_INTERVAL_MS (1 s). */
  persistIntervalMs?: number;
  /** Run periodic timers (sweep, refresh, persist). Default true. */
  timers?: boolean;
  /**
   * Locality hints: at join, look up the nodes under this node's /24, /16 and region keys and ping
   * them; then put this node there (level 0) and refresh it every HINT_REFRESH_MS. Default false.
   */
  hints?: boolean;
  /**
   * Open mode: no keyring, datagrams unauthenticated (public experiments). When set it must agree
   * with `components.keyring`: `true` with a keyring, or `false` without one, is an error. Default:
   * open exactly when no keyring is given. Both modes keep every per-source defence.
   */
  open?: boolean;
  /** Node ids kept per IP (IPv6: per /64) anywhere. Default MAX_IDS_PER_IP (1). */
  maxIdsPerIp?: number;
  /** A member is live when heard from (round trip) within this window. Default LIVE_WINDOW_MS. */
  liveWindowMs?: number;
  /** Verified members remembered. Default MAX_MEMBERS. */
  maxMembers?: number;
  /** Keyed mode: replay window and nonce memory; isolation detection. */
  auth?: {
    /** Default REPLAY_WINDOW_MS (60 s). */
    replayWindowMs?: number;
    /** Default REPLAY_MAX_NONCES (65,536). */
    maxNonces?: number;
    /** Default ISOLATION_AFTER_MS (30 s). */
    isolationAfterMs?: number;
    /** Default ISOLATION_MIN_DATAGRAMS (3). */
    isolationMinDatagrams?: number;
    /**
     * Key notices (auth/key-notices.ts): answer a datagram under a key id this node lacks with a
     * 13-byte notice (rate limited per source and in all), and report notices answering this
     * node's own requests ('key-rejected'). `false`: send none, as silent as WireGuard (notices
     * received are still reported). Default on, with KEY_NOTICE_RATE, KEY_NOTICE_GLOBAL_RATE and
     * KEY_REJECTED_REPORT_MS.
     */
    keyNotices?: false | Omit<KeyNoticesOptions, 'send'>;
  };
  /** Write-token secret rotation. Default TOKEN_ROTATE_MS (5 min). */
  tokenRotateMs?: number;
  /** Per-source request limits per type (per host; merged over RATE_LIMITS). */
  rateLimits?: Partial<RateLimits>;
  /** A /24 (IPv6 /48) may send this many times a host's rate. Default NET_RATE_MULTIPLIER (8). */
  netRateMultiplier?: number;
  /** Replies to requesters that proved no round trip, all together. Default 500/s, burst 1000. */
  unverifiedReplies?: RateLimit;
  /**
   * Failure detection (SWIM over the verified members, see membership/failure-detector.ts): probe
   * interval, probe timeout, indirect probes, suspicion, gossip, leave timeout. `false` turns it
   * off (members then leave only by `liveWindowMs` or a failed RPC). It runs only with `timers`.
   * Default on, with swim.ts's defaults.
   */
  swim?: false | FailureDetectionOptions;
  /**
   * Member discovery: while this node knows fewer than `below` verified live members, it looks up
   * a random id every `intervalMs`, and so meets the members it has not (maintenance.ts). `false`
   * turns it off. It runs only with `timers`. Default on: MEMBER_DISCOVERY_MS (5 s),
   * MEMBER_DISCOVERY_BELOW (64).
   */
  discovery?: false | { intervalMs?: number; below?: number };
}

/** Failure-detection options (`DshtOptions.swim`); each defaults to swim.ts's constant. */
export type FailureDetectionOptions = Omit<SwimOptions, 'self' | 'incarnation'> & {
  /** How long `stop({ leave: true })` waits for members to acknowledge the LEAVE. Default LEAVE_TIMEOUT_MS. */
  leaveTimeoutMs?: number;
};

/** A member changed state (what the Dsht emits as 'member-dead', 'member-left', ...). */
export interface MemberChange {
  /** Node id, 40 hex digits. */
  id: string;
  ip: string;
  port: number;
  httpPort?: number;
  state: SwimState;
  /** Its state before (undefined: just verified). */
  from: SwimState | undefined;
  incarnation: number;
}

/** Counters of the wire side (the Swim component keeps its own). */
export interface FailureDetectorCounters {
  /** PING_REQs served (a probe sent on a member's behalf). */
  indirectServed: number;
  /** PING_REQs refused: the requester or the target is not a verified live member. */
  indirectRefused: number;
  /** LEAVEs applied, and ignored (from a sender that is not a member). */
  leaves: number;
  leavesIgnored: number;
  /** Gossip dropped because its sender is not a verified live member here. */
  gossipIgnored: number;
}

/** `failureDetection()`: this node's view of its members' liveness. */
export interface FailureDetectionState {
  /** This node's incarnation (its start time in ms, raised by one per refuted suspicion). */
  incarnation: number;
  /** The suspicion timeout for the current fleet size. */
  suspicionMs: number;
  /** Members by state. */
  states: Record<SwimState, number>;
  members: Array<{ id: string; state: SwimState; incarnation: number; since: number }>;
  counters: Swim['counters'] & FailureDetectorCounters;
}

/** A verified live member, as `members()` / `member()` return it. */
export interface DshtMember {
  /** Node id, 40 hex digits. */
  id: string;
  /** The address it was verified at (a round trip): where to reach it. */
  ip: string;
  port: number;
  httpPort?: number;
  dnsPort?: number;
  region?: string;
  /** Clock time of the last round-trip-verified datagram from it. */
  lastHeard: number;
  /** Clock time of the first round trip. */
  verifiedAt: number;
  /** True in keyed mode: its datagrams are authenticated with the fleet keyring. */
  authenticated: boolean;
}

/** `authState()`: the node's trust mode, what it dropped and why, and whether it is isolated. */
export interface DshtAuthState extends IsolationState {
  mode: AuthMode;
  /** Keyed mode: key ids held, primary first. */
  keyIds: string[];
  primaryKeyId?: string;
  counters: AuthCounters &
    KeyNoticeCounters &
    Pick<
      RpcCounters,
      | 'malformed'
      | 'spoofed'
      | 'unexpected'
      | 'listedIdMismatch'
      | 'listedIpLimited'
      | 'tokenRefused'
      | 'rateLimited'
      | 'amplificationTrimmed'
      | 'amplificationDropped'
    > & {
      /** Round-trip-verified newcomers refused because their IP already holds maxIdsPerIp members. */
      ipLimited: number;
      /** STOREs refused by a per-source quota. */
      quotaRefused: number;
    };
  /** Datagrams per unknown key id (keyed mode), most recent first. */
  unknownKeys: Array<{ id: string; datagrams: number; lastSeen: number }>;
  /**
   * Keyed mode: the last key notice that answered a request of this node — a peer (`from`,
   * `ip:port`) does not accept its key id `keyId` — and when. A hint: see 'key-rejected'.
   */
  keyRejection?: { keyId: string; from: string; at: number };
  /** Average authentication bytes per datagram sent (34 in keyed mode, 0 open). */
  authBytesPerDatagram: number;
  /** Largest answer/request size ratio sent to a source before its round trip (≤ 1). */
  amplificationMax: number;
}

export interface LookupStats {
  /** Hops to the node that answered (0 = answered locally, 1 = first node asked). */
  hops: number;
  /** Queries sent. */
  messages: number;
  /** Level that answered (get) or the last level walked (put). */
  level: number;
  answeredBy?: Contact;
  latencyMs: number;
}

export interface GetResult {
  values: Uint8Array[];
  /** The same values with their publisher and remaining TTL. */
  records: WireValue[];
  stats: LookupStats;
}

export interface PutResult {
  /** Where the value was stored, one entry per level that accepted it. */
  stored: Array<{ level: number; contact: Contact; hop: number }>;
  /** Cluster levels skipped because the key was already loaded there. */
  skippedLevels: number[];
  stats: LookupStats;
}

export interface DshtSnapshot {
  id: string;
  address: Address;
  contact: Pick<DshtMember, 'id' | 'ip' | 'port' | 'httpPort' | 'dnsPort' | 'region'>;
  levels: Array<{ level: number; contacts: number; buckets: Record<number, number> }>;
  store: { values: number; keys: number; bytes: number };
  rpc: RpcCounters & { pending: number; rttPeers: number };
  malformed: number;
  spoofed: number;
  /** Clusters per level: the policy's own snapshot, else its adverts ({ level, clusterId, size, age }). */
  clusters?: unknown;
  /** Smoothed RTT of the most recently sampled peers (up to 64). */
  rtt: Array<{ peer: string; srttMs: number; samples: number }>;
  /** Trust mode, drops by reason, isolation (see `authState()`). */
  auth: DshtAuthState;
  /** Verified live members (and all remembered). */
  members: { live: number; known: number };
  /** Rate-limit buckets held, and sources holding values here (top 8 by bytes). */
  limits: {
    buckets: number;
    storeSources: Array<{ source: string; values: number; bytes: number }>;
  };
}
