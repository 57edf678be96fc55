/**
 * The public DSHT node: routing tables per cluster level, the RPC layer, the value store, sloppy
 * put and get, join and rejoin, periodic refresh and expiry, persistence.
 */
import { EventEmitter } from 'node:events';
import {
  systemClock,
  systemRandom,
  type Clock,
  type Random,
  type TimerHandle,
} from '@coral/testkit';
import type { Keyring, KeyringChange } from '@coral/keyring';
import {
  DatagramAuth,
  emptyAuthCounters,
  type AuthCounters,
  type AuthMode,
  type IsolationState,
} from './auth/datagram-auth.js';
import type { Address, ClusterAdvert, Contact, ServiceInfo } from './contact.js';
import {
  ALPHA,
  WALK_CONTACTS,
  EXPIRY_SWEEP_MS,
  GET_MAX_VALUES,
  HINT_REFRESH_MS,
  HINT_TTL_SECONDS,
  ID_BYTES,
  INTRODUCE_DELAY_MS,
  ISOLATION_CHECK_MS,
  MAX_IDS_PER_IP,
  KBUCKET_SIZE,
  LEVEL_COUNT,
  MAX_TTL_SECONDS,
  MAX_VALUE_BYTES,
  PATH_CACHE_MIN_HOPS,
  PERSIST_INTERVAL_MS,
  PERSIST_MAX_CONTACTS,
  PUT_REVERSE_TRIES,
  REFRESH_CHECK_MS,
  SHORTCUT_ENTRIES,
  SHORTCUT_TTL_MS,
} from './constants.js';
import {
  AbortedError,
  InvalidArgumentError,
  NotRunningError,
  PutRejectedError,
  throwIfAborted,
} from './errors.js';
import {
  addressString,
  compareDistance,
  idEquals,
  nodeIdFor,
  randomIdInBucket,
  toHex,
  type Id,
} from './id/id.js';
import { lookup, type LookupEvent, type QueryOutcome, type Visit } from './lookup/lookup.js';
import { Persistence, type KeyValueDb } from './persistence/persistence.js';
import {
  decodeNodeRecord,
  encodeNodeRecord,
  hintKeysFor,
  type HintKey,
} from './directory/hints.js';
import { SourceLimiter, type RateLimit, type RateLimits } from './limits/rate-limiter.js';
import { PeerRegistry, type MemberRecord } from './membership/registry.js';
import { RoutingTable, type RoutingEntry } from './routing-table/routing-table.js';
import { dispatch } from './rpc/handlers/index.js';
import { Rpc, emptyCounters, type DshtMetrics, type Logger, type RpcCounters } from './rpc/rpc.js';
import { WriteTokens } from './rpc/tokens.js';
import {
  ValueStore,
  toWireValue,
  type StoredValue,
  type ValueStoreOptions,
} from './store/value-store.js';
import type { Transport } from './transport/transport.js';
import { UdpTransport } from './transport/udp.js';
import { StoreStatus, type WireValue } from './wire/messages.js';

/** How levels above 0 are formed; the cluster module implements it (issue 3). */
export interface ClusterPolicy {
  /** Cluster adverts sent in every message (per level, level 0 included or not). */
  adverts(): ClusterAdvert[];
  /** Whether `contact` belongs in this node's routing table at `level` (> 0). */
  admits(level: number, contact: Contact): boolean;
  /** A JSON-able view of the clusters, included in `Dsht.snapshot()`. */
  snapshot?(): unknown;
}

export interface DshtComponents {
  transport: Transport;
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  /** A `level` database (contacts and values persist there); none keeps everything in memory. */
  db?: KeyValueDb;
  metrics?: DshtMetrics;
  /** Cluster membership for levels > 0. Without one, a level > 0 admits nobody. */
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
  /** k. Default KBUCKET_SIZE (20). */
  k?: number;
  /** Contacts per GET / STORE_PROBE answer. Default WALK_CONTACTS (8). */
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
  };
  /** Write-token secret rotation. Default TOKEN_ROTATE_MS (5 min). */
  tokenRotateMs?: number;
  /** Per-source request limits per type (per host; merged over RATE_LIMITS). */
  rateLimits?: Partial<RateLimits>;
  /** A /24 (IPv6 /48) may send this many times a host's rate. Default NET_RATE_MULTIPLIER (8). */
  netRateMultiplier?: number;
  /** Replies to requesters that proved no round trip, all together. Default 500/s, burst 1000. */
  unverifiedReplies?: RateLimit;
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

type DshtEvents = {
  /** Every RTT sample from a round trip. */
  rtt: [peer: Contact, rttMs: number];
  /** Every round-trip-verified sender admitted as a member (its contact carries its cluster adverts). */
  contact: [peer: Contact];
  /** A member dropped: replaced at its IP by a newer id, or forgotten beyond capacity. */
  evicted: [peer: Contact];
  /** Keyed mode: the node became isolated (its fleet's keys changed without it) or recovered. */
  isolated: [state: DshtAuthState];
};

const noopLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function parseAddress(s: string): Address {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s.trim());
  if (!m) throw new InvalidArgumentError(`bad address "${s}" (expected ip:port)`);
  const port = Number(m[2]);
  if (!(port > 0 && port < 65536)) throw new InvalidArgumentError(`bad port in "${s}"`);
  return { ip: m[1]!, port };
}

interface GetProbe {
  values: WireValue[];
}
interface PutProbe {
  full: boolean;
  loaded: boolean;
}

export class Dsht extends EventEmitter<DshtEvents> {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly random: Random;
  readonly store: ValueStore;
  readonly options: DshtOptions;
  readonly levels: number;
  #logger: Logger;
  #metrics: DshtMetrics | undefined;
  #cluster: ClusterPolicy | undefined;
  #persistence: Persistence | undefined;
  #ownsDb = false;
  #rpc: Rpc | undefined;
  #tables: RoutingTable[] = [];
  #id: Id | undefined;
  #contact: Contact | undefined;
  #running = false;
  #timers: TimerHandle[] = [];
  #shortcuts = new Map<string, { contact: Contact; level: number; expiresAt: number }>();
  #contactsDirty = false;
  #failed = new Map<string, number>();
  #keyring: Keyring | undefined;
  #onKeys: ((c: KeyringChange) => void) | undefined;
  #auth: DatagramAuth | undefined;
  #registry: PeerRegistry;
  #maxIdsPerIp: number;

  constructor(components: DshtComponents, options: DshtOptions = {}) {
    super();
    this.transport = components.transport;
    this.clock = components.clock ?? systemClock;
    this.random = components.random ?? systemRandom;
    this.#logger = components.logger ?? noopLogger;
    this.#metrics = components.metrics;
    this.#cluster = components.cluster;
    this.#keyring = components.keyring;
    if (options.open === true && this.#keyring)
      throw new InvalidArgumentError('options.open is true but a keyring was given');
    if (options.open === false && !this.#keyring)
      throw new InvalidArgumentError('keyed mode (options.open = false) needs components.keyring');
    this.options = options;
    this.#maxIdsPerIp = options.maxIdsPerIp ?? MAX_IDS_PER_IP;
    this.#registry = new PeerRegistry(
      { clock: this.clock },
      {
        maxIdsPerIp: this.#maxIdsPerIp,
        capacity: options.maxMembers,
        liveWindowMs: options.liveWindowMs,
      },
    );
    this.#registry.onEvict = (rec) => this.#evicted(rec);
    this.levels = Math.min(LEVEL_COUNT, Math.max(1, options.levels ?? 1));
    this.store = new ValueStore({ clock: this.clock, random: this.random }, options.store);
    if (components.db) this.#persistence = new Persistence({ db: components.db });
  }

  /** Production node: UDP on `bind`, LevelDB in `dataDir` (memory only without one). */
  static async open(
    options: DshtOptions & { dataDir?: string; bind: { host: string; port: number } },
    components: {
      logger?: Logger;
      metrics?: DshtMetrics;
      cluster?: ClusterPolicy;
      keyring?: Keyring;
    } = {},
  ): Promise<Dsht> {
    const transport = new UdpTransport({}, { host: options.bind.host, port: options.bind.port });
    let db: KeyValueDb | undefined;
    if (options.dataDir) {
      const { Level } = await import('level');
      const level = new Level<string, string>(options.dataDir, { valueEncoding: 'utf8' });
      await level.open();
      db = level as unknown as KeyValueDb;
    }
    const node = new Dsht({ transport, db, ...components }, options);
    node.#ownsDb = db !== undefined;
    return node;
  }

  get id(): Id {
    if (!this.#id) throw new NotRunningError('DSHT node not started: id unknown');
    return this.#id;
  }

  get contact(): Contact {
    if (!this.#contact) throw new NotRunningError('DSHT node not started: contact unknown');
    const adverts = this.#cluster?.adverts();
    return adverts && adverts.length > 0 ? { ...this.#contact, clusters: adverts } : this.#contact;
  }

  get running(): boolean {
    return this.#running;
  }

  /** The RPC layer (for the cluster module's pings and for diagnostics). */
  get rpc(): Rpc {
    if (!this.#rpc) throw new NotRunningError();
    return this.#rpc;
  }

  /** The routing table of `level`, undefined when this node does not run it. */
  table(level: number): RoutingTable | undefined {
    return this.#tables[level];
  }

  /** Routing table dump of a level. */
  routes(level = 0): Contact[] {
    return this.#tables[level]?.all().map((e) => e.contact) ?? [];
  }

  /** Routing table entries of a level with `lastSeen` and failure counts. */
  routeEntries(level = 0): RoutingEntry[] {
    return this.#tables[level]?.all() ?? [];
  }

  /** Values stored on this node for `key`, at one level or all. */
  localGet(key: Uint8Array, level?: number): Uint8Array[] {
    const levels = level === undefined ? [...Array(LEVEL_COUNT).keys()] : [level];
    return levels.flatMap((l) => this.store.get(l, key).map((v) => v.value));
  }

  /** Start: bind, load persisted state, contact stored peers and bootstrap addresses, join. */
  async start(opts: { bootstrap?: string[]; signal?: AbortSignal } = {}): Promise<void> {
    if (this.#running) return;
    const bootstrap = (opts.bootstrap ?? []).map(parseAddress);
    await this.transport.start();
    const bound = this.transport.address;
    // A node bound to a wildcard (0.0.0.0 / ::) must say which address peers reach it at.
    const addr = {
      ip: this.options.advertise?.ip ?? bound.ip,
      port: this.options.advertise?.port ?? bound.port,
    };
    if (addr.ip === '0.0.0.0' || addr.ip === '::') {
      await this.transport.close();
      throw new InvalidArgumentError('bound to a wildcard address: set options.advertise.ip');
    }
    this.#id = nodeIdFor(addr.ip, addr.port);
    const svc = this.options.service ?? {};
    this.#contact = { id: this.#id, ip: addr.ip, port: addr.port };
    if (svc.httpPort) this.#contact.httpPort = svc.httpPort;
    if (svc.dnsPort) this.#contact.dnsPort = svc.dnsPort;
    if (svc.region) this.#contact.region = svc.region;

    const clock = this.clock;
    const auth = new DatagramAuth({ clock, keyring: this.#keyring }, this.options.auth);
    auth.onIsolation = (state) => this.#isolationChanged(state);
    this.#auth = auth;
    if (this.#keyring) {
      const onKeys = (): void => auth.refreshKeys();
      this.#keyring.on('change', onKeys);
      this.#onKeys = onKeys;
    }
    const rpc = new Rpc(
      {
        transport: this.transport,
        clock,
        random: this.random,
        metrics: this.#metrics,
        logger: this.#logger,
        auth,
        tokens: new WriteTokens({ clock }, { rotateMs: this.options.tokenRotateMs }),
        limiter: new SourceLimiter(
          { clock },
          { limits: this.options.rateLimits, netMultiplier: this.options.netRateMultiplier },
        ),
      },
      {
        self: () => this.contact,
        timeoutMs: this.options.rpcTimeoutMs,
        retries: this.options.rpcRetries,
        backoff: this.options.rpcBackoff,
        allowNat: this.options.allowNat,
        maxIdsPerIp: this.#maxIdsPerIp,
        unverifiedReplies: this.options.unverifiedReplies,
      },
    );
    this.#rpc = rpc;
    this.#tables = [];
    for (let level = 0; level < this.levels; level++) this.#tables.push(this.#newTable(level));
    const ctx = {
      table: (l: number) => this.#tables[l],
      store: this.store,
      k: this.options.k ?? KBUCKET_SIZE,
      walkContacts: this.options.walkContacts ?? WALK_CONTACTS,
    };
    rpc.onRequest = (req, sender, _from, source) =>
      dispatch(ctx, req, sender, this.clock.now(), source);
    rpc.onSeen = (sender, roundTrip, from) => {
      if (roundTrip) this.#learn(sender, from.ip);
    };
    // Introduce this node to a peer met for the first time: a PING with its fresh token is the
    // round trip the peer needs before it may admit this node (see #wantsIntroduction).
    rpc.onFirstToken = (peer) => {
      const addr = addressString(peer.ip, peer.port);
      this.clock.setTimeout(() => {
        // A lookup that asked the peer again in the meantime has introduced this node already;
        // judged late, so a joining node's tables have filled (see #wantsIntroduction).
        if (!this.#running || rpc.peerTokens.used(addr) || !this.#wantsIntroduction(peer)) return;
        void rpc.request(peer, { type: 'PING' }, { retries: 0 }).catch(() => undefined);
      }, INTRODUCE_DELAY_MS);
    };
    rpc.onRtt = (sender, rtt) => {
      if (this.#registry.get(toHex(sender.id))) this.emit('rtt', sender, rtt);
    };
    this.#running = true;

    let stored: Contact[] = [];
    if (this.#persistence) {
      const p = this.#persistence;
      for (const v of await p.loadValues()) this.store.restore(v);
      const seen = new Set<string>();
      stored = (await p.loadContacts())
        .sort((a, b) => b.lastSeen - a.lastSeen)
        .map((c) => c.contact)
        .filter((c) => {
          const hex = toHex(c.id);
          if (seen.has(hex) || !idEquals(nodeIdFor(c.ip, c.port), c.id)) return false;
          seen.add(hex);
          return true;
        });
      // Values are written through: each change is queued and flushed right away (batched per turn).
      let scheduled = false;
      this.store.onChange = (ch) => {
        if (ch.kind === 'put') p.putValue(ch.value);
        else p.deleteValue(ch.value);
        if (!scheduled) {
          scheduled = true;
          queueMicrotask(() => {
            scheduled = false;
            void p.flush().catch((err: unknown) => this.#logger.warn({ err }, 'persist failed'));
          });
        }
      };
    }

    if (this.options.timers ?? true) this.#startTimers();

    const contacts = [...stored.map((c) => ({ ip: c.ip, port: c.port })), ...bootstrap].filter(
      (a) => !(a.ip === addr.ip && a.port === addr.port),
    );
    await Promise.all(
      contacts.map((a) => this.ping(a, { signal: opts.signal }).catch(() => undefined)),
    );
    if (this.#tables[0]!.size > 0) await this.join({ signal: opts.signal });
    if (this.options.hints) await this.#useHints(opts.signal);
    this.#logger.info(
      { id: toHex(this.#id), address: addr, contacts: this.#tables[0]!.size },
      'dsht started',
    );
  }

  /** Self-lookup in every level (and bucket refresh below the nearest neighbour). */
  async join(opts: { signal?: AbortSignal } = {}): Promise<void> {
    const id = this.id;
    for (let level = 0; level < this.levels; level++) {
      const table = this.#tables[level]!;
      if (table.size === 0) continue;
      await this.findNode(id, { level, signal: opts.signal, termination: table.k });
      if (this.options.joinRefresh ?? true) {
        const nearest = table.closest(id, 1)[0];
        if (!nearest) continue;
        const deepest = table.bucketIndex(nearest.id);
        for (let b = 0; b < deepest; b++) {
          if ((table.shape()[b] ?? 0) >= table.k) continue;
          table.touchBucket(b);
          await this.findNode(randomIdInBucket(id, b, this.random), { level, signal: opts.signal });
        }
      }
    }
  }

  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    if (this.#onKeys) this.#keyring?.off('change', this.#onKeys);
    this.#onKeys = undefined;
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
    this.#rpc?.cancelAll();
    if (this.#persistence) {
      this.#saveContacts();
      if (this.#ownsDb) await this.#persistence.close();
      else await this.#persistence.flush();
    }
    await this.transport.close();
    this.#logger.info({ id: this.#id ? toHex(this.#id) : undefined }, 'dsht stopped');
  }

  /** Write pending contacts and values to the database now (no-op without one). */
  async flush(): Promise<void> {
    if (!this.#persistence) return;
    this.#saveContacts();
    await this.#persistence.flush();
  }

  /** Ping an address; resolves with the RTT in ms, rejects on timeout. */
  async ping(to: Address, opts: { signal?: AbortSignal; retries?: number } = {}): Promise<number> {
    try {
      const r = await this.rpc.request(to, { type: 'PING' }, opts);
      return r.rttMs;
    } catch (err) {
      // A failed ping counts against the node at that address (its id follows from the address).
      if (!(err instanceof AbortedError)) this.#noteFailure(nodeIdFor(to.ip, to.port));
      throw err;
    }
  }

  /** Iterative FIND_NODE; resolves with the closest contacts found (closest first). */
  async findNode(
    target: Id,
    opts: { level?: number; signal?: AbortSignal; termination?: number; seeds?: Contact[] } = {},
  ): Promise<Contact[]> {
    const level = opts.level ?? 0;
    const table = this.#requireTable(level);
    let visited: Visit<null>[] = [];
    for await (const e of lookup<null>({
      target,
      level,
      selfId: this.id,
      seeds: opts.seeds ?? table.closest(target, table.k),
      alpha: this.options.alpha ?? ALPHA,
      termination: opts.termination,
      halving: false,
      signal: opts.signal,
      query: async (c, signal) => {
        const r = await this.#query(c, { type: 'FIND_NODE', level, target }, signal);
        return { contacts: r.body.type === 'NODES' ? r.body.contacts : [], result: null };
      },
    })) {
      if (e.type === 'FINISHED') visited = e.visited;
    }
    return visited.map((v) => v.contact);
  }

  /**
   * The get walk as a stream of events, level by level (most local first), each level continuing
   * from the closest node the previous one reached. Ends after the first level that returns values.
   */
  async *getEvents(
    key: Uint8Array,
    opts: { signal?: AbortSignal; maxValues?: number } = {},
  ): AsyncGenerator<LookupEvent<GetProbe>, void, undefined> {
    const max = opts.maxValues ?? GET_MAX_VALUES;
    let continueFrom: Contact | undefined;
    for (let level = this.levels - 1; level >= 0; level--) {
      let finished: Extract<LookupEvent<GetProbe>, { type: 'FINISHED' }> | undefined;
      for await (const e of lookup<GetProbe>({
        ...this.#levelWalk(key, level, continueFrom, opts.signal),
        query: async (c, signal): Promise<QueryOutcome<GetProbe>> => {
          const r = await this.#query(c, { type: 'GET', level, key, max }, signal);
          if (r.body.type !== 'VALUES') return { contacts: [], result: { values: [] } };
          return {
            contacts: r.body.contacts,
            stop: r.body.values.length > 0,
            result: { values: r.body.values },
          };
        },
      })) {
        yield e;
        if (e.type === 'FINISHED') finished = e;
      }
      if (finished?.stoppedAt) return;
      continueFrom = finished?.visited[0]?.contact;
    }
  }

  /**
   * What a get or put walk toward `key` in one level starts from: that level's closest known
   * contacts, and the closest node the previous (more local) level reached, asked first.
   */
  #levelWalk(key: Uint8Array, level: number, startFrom: Contact | undefined, signal?: AbortSignal) {
    const table = this.#tables[level]!;
    return {
      target: key,
      level,
      selfId: this.id,
      seeds: table.closest(key, table.k),
      startFrom,
      alpha: this.options.alpha ?? ALPHA,
      halving: this.options.halving ?? true,
      signal,
    };
  }

  /** Find values for `key`: the local store, then the i3 shortcut, then the walk, level by level. */
  async get(
    key: Uint8Array,
    opts: { signal?: AbortSignal; maxValues?: number } = {},
  ): Promise<GetResult> {
    this.#checkKey(key);
    this.#requireRunning();
    throwIfAborted(opts.signal);
    const start = this.clock.now();
    const max = opts.maxValues ?? GET_MAX_VALUES;
    const done = (records: WireValue[], stats: Omit<LookupStats, 'latencyMs'>): GetResult => {
      const latencyMs = this.clock.now() - start;
      this.#metrics?.lookup('get', stats.hops, latencyMs);
      return { values: records.map((r) => r.value), records, stats: { ...stats, latencyMs } };
    };
    // 1. Local values, most local level first.
    for (let level = this.levels - 1; level >= 0; level--) {
      const local = this.store.get(level, key, max);
      if (local.length > 0) {
        const now = this.clock.now();
        const records = local.map((v) => toWireValue(v, now));
        return done(records, { hops: 0, messages: 0, level, answeredBy: this.contact });
      }
    }
    // 2. The i3 shortcut: ask the node that answered last time.
    const hex = toHex(key);
    const sc = this.#shortcuts.get(hex);
    let messages = 0;
    if (sc && sc.expiresAt > this.clock.now()) {
      messages++;
      try {
        const r = await this.#query(
          sc.contact,
          { type: 'GET', level: sc.level, key, max },
          opts.signal,
        );
        if (r.body.type === 'VALUES' && r.body.values.length > 0) {
          return done(r.body.values, {
            hops: 1,
            messages,
            level: sc.level,
            answeredBy: sc.contact,
          });
        }
      } catch (err) {
        if (err instanceof AbortedError) throw err;
      }
      this.#shortcuts.delete(hex);
    } else if (sc) this.#shortcuts.delete(hex);
    // 3. The walk.
    let last: Extract<LookupEvent<GetProbe>, { type: 'FINISHED' }> | undefined;
    for await (const e of this.getEvents(key, opts)) {
      if (e.type === 'FINISHED') {
        messages += e.messages;
        last = e;
      }
    }
    const hit = last?.stoppedAt;
    if (!last || !hit) return done([], { hops: 0, messages, level: 0 });
    this.#remember(hex, hit.contact, last.level);
    this.#pathCache(key, last.level, hit, last.visited);
    return done(hit.result.values, {
      hops: hit.hop,
      messages,
      level: last.level,
      answeredBy: hit.contact,
    });
  }

  /**
   * Sloppy put, in every level this node runs, most local first. Forward phase: walk toward the key
   * with STORE_PROBE, stopping at the closest node or the first full-and-loaded one. Reverse phase:
   * STORE at the closest visited node that can accept, the next one out when it refuses.
   */
  async put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    opts: { signal?: AbortSignal; level?: number } = {},
  ): Promise<PutResult> {
    this.#checkKey(key);
    if (!(value instanceof Uint8Array) || value.length > MAX_VALUE_BYTES) {
      throw new InvalidArgumentError(
        `value must be a Uint8Array of at most ${MAX_VALUE_BYTES} bytes`,
      );
    }
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
      throw new InvalidArgumentError(`ttlSeconds must be an integer in [1, ${MAX_TTL_SECONDS}]`);
    }
    this.#requireRunning();
    throwIfAborted(opts.signal);
    const start = this.clock.now();
    const top = Math.min(this.levels - 1, opts.level ?? this.levels - 1);
    const stored: PutResult['stored'] = [];
    const skipped: number[] = [];
    let messages = 0;
    let hops = 0;
    let lastLevel = 0;
    let continueFrom: Contact | undefined;
    for (let level = top; level >= 0; level--) {
      lastLevel = level;
      let finished: Extract<LookupEvent<PutProbe>, { type: 'FINISHED' }> | undefined;
      for await (const e of lookup<PutProbe>({
        ...this.#levelWalk(key, level, continueFrom, opts.signal),
        query: async (c, signal): Promise<QueryOutcome<PutProbe>> => {
          const r = await this.#query(
            c,
            { type: 'STORE_PROBE', level, key, ttl: ttlSeconds },
            signal,
          );
          if (r.body.type !== 'PROBE_RESULT')
            return { contacts: [], result: { full: true, loaded: true } };
          const { full, loaded, contacts } = r.body;
          return { contacts, stop: full && loaded, result: { full, loaded } };
        },
      })) {
        if (e.type === 'FINISHED') finished = e;
      }
      if (!finished) continue;
      messages += finished.messages;
      continueFrom = finished.visited[0]?.contact;
      // A cluster level where the key is already loaded (the walk met a full-and-loaded node) is
      // skipped: it holds plenty of copies; the put goes on in the next larger level.
      if (level > 0 && finished.stoppedAt?.result.loaded && finished.stoppedAt.result.full) {
        skipped.push(level);
        continue;
      }
      const placed = await this.#reversePhase(
        key,
        value,
        ttlSeconds,
        level,
        finished.visited,
        opts.signal,
      );
      messages += placed.messages;
      if (placed.at) {
        stored.push({ level, contact: placed.at.contact, hop: placed.at.hop });
        hops = Math.max(hops, placed.at.hop);
      }
    }
    const latencyMs = this.clock.now() - start;
    this.#metrics?.lookup('put', hops, latencyMs);
    if (stored.length === 0) throw new PutRejectedError('no node accepted the value');
    return {
      stored,
      skippedLevels: skipped,
      stats: {
        hops,
        messages,
        level: lastLevel,
        answeredBy: stored[stored.length - 1]?.contact,
        latencyMs,
      },
    };
  }

  /** Try the visited nodes closest first (this node included, at its distance) until one accepts. */
  async #reversePhase(
    key: Id,
    value: Uint8Array,
    ttl: number,
    level: number,
    visited: Visit<PutProbe>[],
    signal: AbortSignal | undefined,
  ): Promise<{ at?: Visit<PutProbe>; messages: number }> {
    const self: Visit<PutProbe> = {
      contact: this.#contact!,
      hop: 0,
      result: this.store.probe(level, key, ttl, this.id),
    };
    const order = [...visited];
    const i = order.findIndex((v) => compareDistance(this.id, v.contact.id, key) < 0);
    order.splice(i < 0 ? order.length : i, 0, self);
    let messages = 0;
    let tries = 0;
    const maxTries = this.options.putReverseTries ?? PUT_REVERSE_TRIES;
    for (const v of order) {
      if (tries >= maxTries) break;
      if (v.result.full || v.result.loaded) continue;
      tries++;
      if (v === self) {
        if (this.store.store(level, key, this.id, value, ttl) === StoreStatus.ACCEPTED)
          return { at: v, messages };
        continue;
      }
      messages++;
      try {
        const r = await this.#query(v.contact, { type: 'STORE', level, key, value, ttl }, signal);
        if (r.body.type === 'STORE_RESULT' && r.body.status === StoreStatus.ACCEPTED)
          return { at: v, messages };
      } catch (err) {
        if (err instanceof AbortedError) throw err;
      }
    }
    return { messages };
  }

  /** Clock time this node last heard from member `id` (a round-trip-verified datagram), or undefined. */
  lastHeard(id: Id): number | undefined {
    return this.#registry.get(toHex(id))?.lastHeard;
  }

  /** A verified member heard from within `windowMs` and no failed RPC to it since. */
  isLive(id: Id, windowMs: number): boolean {
    const rec = this.#registry.get(toHex(id));
    if (!rec || this.clock.now() - rec.lastHeard > windowMs) return false;
    return rec.failedAt === undefined || rec.failedAt < rec.lastHeard;
  }

  /** Did the last RPC to `id` fail after the last time it was heard from? */
  isSuspect(id: Id): boolean {
    const hex = toHex(id);
    const failed = this.#failed.get(hex);
    if (failed === undefined) return false;
    return failed >= (this.#registry.get(hex)?.lastHeard ?? -Infinity);
  }

  /**
   * The verified live members: nodes this node completed a round trip with (keyed mode: over
   * authenticated datagrams), heard from within `liveWindowMs` with no failed RPC since, at most
   * `maxIdsPerIp` per IP. This node itself is not included.
   */
  members(): DshtMember[] {
    const now = this.clock.now();
    const out: DshtMember[] = [];
    for (const rec of this.#registry.all())
      if (this.#registry.isLive(rec, now)) out.push(this.#member(rec));
    return out;
  }

  /** The verified live member with this id (40 hex digits), or undefined. */
  member(idHex: string): DshtMember | undefined {
    const rec = this.#registry.get(idHex.toLowerCase());
    return rec && this.#registry.isLive(rec) ? this.#member(rec) : undefined;
  }

  /** Trust mode, drop counters by reason, isolation. */
  authState(): DshtAuthState {
    const auth = this.#auth;
    const rc = this.#rpc?.counters ?? emptyCounters();
    const ac: AuthCounters = auth ? { ...auth.counters } : emptyAuthCounters();
    const iso = auth?.isolation() ?? {
      isolated: false,
      unknownKeyIds: [],
      lastAuthenticatedAt: this.clock.now(),
    };
    const state: DshtAuthState = {
      mode: this.#keyring ? 'keyed' : 'open',
      keyIds: this.#keyring?.list().map((k) => k.id) ?? [],
      ...iso,
      counters: {
        ...ac,
        malformed: rc.malformed,
        spoofed: rc.spoofed,
        unexpected: rc.unexpected,
        listedIdMismatch: rc.listedIdMismatch,
        listedIpLimited: rc.listedIpLimited,
        tokenRefused: rc.tokenRefused,
        rateLimited: rc.rateLimited,
        amplificationTrimmed: rc.amplificationTrimmed,
        amplificationDropped: rc.amplificationDropped,
        ipLimited: this.#registry.refused,
        quotaRefused: this.store.quotaRefused,
      },
      unknownKeys: auth?.unknownKeys() ?? [],
      authBytesPerDatagram: ac.sealed > 0 ? ac.authBytesSent / ac.sealed : 0,
      amplificationMax: rc.amplificationMax,
    };
    if (this.#keyring) state.primaryKeyId = this.#keyring.primaryId;
    return state;
  }

  /** The hint keys this node publishes under (/24, /16, region). */
  hintKeys(): HintKey[] {
    return hintKeysFor(this.contact);
  }

  /** Put this node's record under its hint keys (level 0). Failures are ignored. */
  async publishHints(opts: { signal?: AbortSignal } = {}): Promise<number> {
    const record = encodeNodeRecord(this.contact);
    let ok = 0;
    for (const h of this.hintKeys()) {
      try {
        await this.put(h.key, record, HINT_TTL_SECONDS, { signal: opts.signal, level: 0 });
        ok++;
      } catch (err) {
        if (err instanceof AbortedError) throw err;
      }
    }
    return ok;
  }

  /** The nodes recorded under a hint key (level-0 get; invalid records dropped). */
  async lookupHint(key: Id, opts: { signal?: AbortSignal } = {}): Promise<Contact[]> {
    const r = await this.#getAtLevel0(key, opts.signal);
    const out: Contact[] = [];
    for (const v of r) {
      const c = decodeNodeRecord(v);
      if (c && !out.some((o) => idEquals(o.id, c.id))) out.push(c);
    }
    return out;
  }

  /**
   * Collect values for a key at level 0 from several holders: the walk goes on past the first holder
   * (sloppy storage spreads a popular key's values over the nodes near it) until `want` are found.
   */
  async #getAtLevel0(key: Id, signal?: AbortSignal, want = 16): Promise<Uint8Array[]> {
    const found = new Map<string, Uint8Array>();
    for (const v of this.store.get(0, key)) found.set(toHex(v.publisher), v.value);
    if (found.size >= want) return [...found.values()];
    for await (const e of lookup<GetProbe>({
      target: key,
      level: 0,
      selfId: this.id,
      seeds: this.#tables[0]!.closest(key, this.#tables[0]!.k),
      alpha: this.options.alpha ?? ALPHA,
      halving: false,
      termination: ALPHA * 2,
      signal,
      query: async (c, sig): Promise<QueryOutcome<GetProbe>> => {
        const r = await this.#query(c, { type: 'GET', level: 0, key, max: 16 }, sig);
        if (r.body.type !== 'VALUES') return { contacts: [], result: { values: [] } };
        for (const v of r.body.values) found.set(toHex(v.publisher), v.value);
        // A holder answers with values only, so ask the table for the way on.
        const more = r.body.values.length > 0 ? this.#tables[0]!.closest(key, 8) : r.body.contacts;
        return { contacts: more, stop: found.size >= want, result: { values: r.body.values } };
      },
    })) {
      void e;
    }
    return [...found.values()];
  }

  /** Join-time use of hints: ping the nodes under this node's hint keys (RTT samples for clustering). */
  async #useHints(signal?: AbortSignal): Promise<void> {
    const self = this.id;
    const seen = new Set<string>();
    const pings: Promise<unknown>[] = [];
    for (const h of this.hintKeys()) {
      const found = await this.lookupHint(h.key, { signal }).catch(() => [] as Contact[]);
      for (const c of found) {
        const hex = toHex(c.id);
        if (idEquals(c.id, self) || seen.has(hex) || seen.size >= 16) continue;
        seen.add(hex);
        pings.push(this.ping(c, { signal, retries: 0 }).catch(() => undefined));
      }
    }
    await Promise.all(pings);
    await this.publishHints({ signal });
  }

  /** A plain JSON view of the node for admin APIs and tests. */
  snapshot(): DshtSnapshot {
    const rpc = this.#rpc;
    const c = this.#contact;
    return {
      id: c ? toHex(c.id) : '',
      address: this.transport.address,
      contact: c
        ? {
            id: toHex(c.id),
            ip: c.ip,
            port: c.port,
            httpPort: c.httpPort,
            dnsPort: c.dnsPort,
            region: c.region,
          }
        : { id: '', ip: '', port: 0 },
      levels: this.#tables.map((t) => ({ level: t.level, contacts: t.size, buckets: t.shape() })),
      store: { values: this.store.size, keys: this.store.keyCount, bytes: this.store.bytes },
      rpc: {
        ...(rpc?.counters ?? emptyCounters()),
        byType: structuredClone(rpc?.counters.byType ?? {}),
        amplificationMaxByType: { ...rpc?.counters.amplificationMaxByType },
        pending: rpc?.pendingCount ?? 0,
        rttPeers: rpc?.rtt.size ?? 0,
      },
      malformed: rpc?.counters.malformed ?? 0,
      spoofed: rpc?.counters.spoofed ?? 0,
      clusters: this.#cluster?.snapshot?.() ?? this.#clusterAdverts(),
      rtt: [...(rpc?.rtt.entries() ?? [])]
        .slice(-64)
        .map(([peer, e]) => ({ peer, srttMs: Math.round(e.srtt * 10) / 10, samples: e.samples })),
      auth: this.authState(),
      members: { live: this.members().length, known: this.#registry.size },
      limits: { buckets: rpc?.limiter.size ?? 0, storeSources: this.store.sources().slice(0, 8) },
    };
  }

  #clusterAdverts():
    Array<{ level: number; clusterId: string; size: number; age: number }> | undefined {
    const ads = this.#cluster?.adverts();
    if (!ads || ads.length === 0) return undefined;
    return ads.map((a) => ({
      level: a.level,
      clusterId: toHex(a.clusterId),
      size: a.size,
      age: a.age,
    }));
  }

  /**
   * Rebuild a level's table (the cluster module calls this when membership changes): drop it and
   * refill from `seeds` plus every known contact the policy admits.
   */
  resetLevel(level: number, seeds: Contact[] = []): void {
    this.#requireTable(level);
    const fresh = this.#newTable(level);
    const known = [...seeds, ...this.#tables.flatMap((t) => t.all().map((e) => e.contact))];
    // Only verified members: a seed nobody completed a round trip with stays out.
    for (const c of known) {
      if (this.#registry.get(toHex(c.id)) && this.#admits(level, c)) fresh.add(c);
    }
    this.#tables[level] = fresh;
  }

  // ---- internals ----------------------------------------------------------------------------

  #admits(level: number, c: Contact): boolean {
    if (level === 0) return true;
    return this.#cluster?.admits(level, c) ?? false;
  }

  /**
   * A round trip with `sender` from `sourceIp`: a member (unless that IP is taken), then the tables
   * that admit it. Identities are counted per source IP, which is the advertised IP unless allowNat.
   */
  #learn(sender: Contact, sourceIp: string): void {
    const hex = toHex(sender.id);
    const rec = this.#registry.admit(sender, hex, sourceIp);
    if (!rec) return;
    for (let level = 0; level < this.#tables.length; level++) {
      if (this.#admits(level, sender)) {
        const r = this.#tables[level]!.add(sender, hex);
        if (r === 'added') this.#contactsDirty = true;
      }
    }
    this.emit('contact', sender);
  }

  /**
   * Would `peer` likely keep this node in a routing table? Its bucket for this node has the same
   * index i as this node's bucket for it (the common prefix length is symmetric), and bucket i
   * holds about n / 2^(i+1) of a fleet of n everywhere. n is about 2^d, d being this table's
   * deepest bucket (the nearest neighbour's prefix). So: introduce only where that estimate is
   * under 2k and this node's own bucket i is not full — the near peers, which must know this node
   * for lookups of nearby keys to reach it; far peers' buckets are full and would only queue it.
   */
  #wantsIntroduction(peer: Contact): boolean {
    for (let level = 0; level < this.#tables.length; level++) {
      const t = this.#tables[level]!;
      if (!this.#admits(level, peer)) continue;
      const i = t.bucketIndex(peer.id);
      const expected = 2 ** (t.deepestBucket - i - 1);
      if (expected < 2 * t.k && t.bucketSize(i) < t.k) return true;
    }
    return false;
  }

  /** A member was dropped from the registry: drop it everywhere. */
  #evicted(rec: MemberRecord): void {
    for (const t of this.#tables) t.remove(rec.contact.id);
    this.emit('evicted', rec.contact);
  }

  #member(rec: MemberRecord): DshtMember {
    const c = rec.contact;
    const m: DshtMember = {
      id: rec.hex,
      ip: c.ip,
      port: c.port,
      lastHeard: rec.lastHeard,
      verifiedAt: rec.verifiedAt,
      authenticated: this.#keyring !== undefined,
    };
    if (c.httpPort) m.httpPort = c.httpPort;
    if (c.dnsPort) m.dnsPort = c.dnsPort;
    if (c.region) m.region = c.region;
    return m;
  }

  #newTable(level: number): RoutingTable {
    return new RoutingTable(
      { clock: this.clock, ping: (c) => this.#pingAlive(c) },
      {
        selfId: this.id,
        level,
        k: this.options.k ?? KBUCKET_SIZE,
        maxIdsPerIp: this.#maxIdsPerIp,
      },
    );
  }

  #isolationChanged(iso: IsolationState): void {
    const state = this.authState();
    if (iso.isolated)
      this.#logger.error(
        { reason: iso.reason, unknownKeyIds: iso.unknownKeyIds },
        'dsht isolated: fleet keys changed without this node',
      );
    else
      this.#logger.warn(
        { keyIds: state.keyIds },
        'dsht no longer isolated: authenticated traffic again',
      );
    this.emit('isolated', state);
  }

  async #query(to: Contact, body: Parameters<Rpc['request']>[1], signal?: AbortSignal) {
    try {
      return await this.rpc.request(to, body, { signal });
    } catch (err) {
      if (!(err instanceof AbortedError)) this.#noteFailure(to.id);
      throw err;
    }
  }

  #noteFailure(id: Id): void {
    for (const t of this.#tables) t.recordFailure(id);
    const hex = toHex(id);
    bump(this.#failed, hex, this.clock.now());
    this.#registry.noteFailure(hex);
  }

  async #pingAlive(c: Contact): Promise<boolean> {
    if (!this.#running) return true;
    try {
      await this.rpc.request(c, { type: 'PING' });
      return true;
    } catch {
      return false;
    }
  }

  #remember(hex: string, contact: Contact, level: number): void {
    const ttl = this.options.shortcutTtlMs ?? SHORTCUT_TTL_MS;
    if (ttl <= 0) return;
    this.#shortcuts.delete(hex);
    this.#shortcuts.set(hex, { contact, level, expiresAt: this.clock.now() + ttl });
    if (this.#shortcuts.size > SHORTCUT_ENTRIES) {
      const oldest = this.#shortcuts.keys().next().value;
      if (oldest !== undefined) this.#shortcuts.delete(oldest);
    }
  }

  /** Copy the found values to the node that pointed the walk at the holder (the last one lacking them). */
  #pathCache(key: Id, level: number, hit: Visit<GetProbe>, visited: Visit<GetProbe>[]): void {
    const min = this.options.pathCacheMinHops ?? PATH_CACHE_MIN_HOPS;
    if (min <= 0 || hit.hop < min) return;
    let lacking: Visit<GetProbe> | undefined;
    for (const v of visited) {
      if (v.result.values.length > 0) continue;
      if (compareDistance(v.contact.id, hit.contact.id, key) < 0) continue;
      if (!lacking || compareDistance(v.contact.id, lacking.contact.id, key) < 0) lacking = v;
    }
    if (!lacking) return;
    const target = lacking.contact;
    for (const rec of hit.result.values.slice(0, 2)) {
      // A copy, marked as one: the receiver keeps it apart and it never replaces the original.
      void this.#query(target, {
        type: 'STORE',
        level,
        key,
        value: rec.value,
        ttl: rec.ttl,
        copyOf: rec.publisher,
      }).catch(() => undefined);
    }
  }

  #startTimers(): void {
    const every = (ms: number, fn: () => void): void => {
      const tick = (): void => {
        if (!this.#running) return;
        try {
          fn();
        } catch (err) {
          this.#logger.warn({ err }, 'periodic task failed');
        }
        this.#timers.push(this.clock.setTimeout(tick, ms));
      };
      this.#timers.push(this.clock.setTimeout(tick, ms));
    };
    every(EXPIRY_SWEEP_MS, () => {
      this.store.sweep();
      const now = this.clock.now();
      for (const [k, s] of this.#shortcuts) if (s.expiresAt <= now) this.#shortcuts.delete(k);
      this.#timers = this.#timers.slice(-8);
    });
    every(REFRESH_CHECK_MS, () => this.#refreshStale());
    if (this.#keyring) every(ISOLATION_CHECK_MS, () => this.#auth?.evaluate());
    if (this.options.hints) {
      every(HINT_REFRESH_MS, () => void this.publishHints().catch(() => undefined));
    }
    if (this.#persistence) {
      const p = this.#persistence;
      every(this.options.persistIntervalMs ?? PERSIST_INTERVAL_MS, () => {
        if (this.#contactsDirty) this.#saveContacts();
        void p.flush().catch((err: unknown) => this.#logger.warn({ err }, 'persist failed'));
      });
    }
  }

  #refreshStale(): void {
    for (const table of this.#tables) {
      for (const b of table.staleBuckets()) {
        table.touchBucket(b);
        void this.findNode(randomIdInBucket(this.id, b, this.random), { level: table.level }).catch(
          () => undefined,
        );
      }
    }
  }

  #saveContacts(): void {
    this.#contactsDirty = false;
    const p = this.#persistence;
    if (!p) return;
    const entries = this.#tables.flatMap((t) =>
      t
        .all()
        .sort((a, b) => b.lastSeen - a.lastSeen)
        .slice(0, PERSIST_MAX_CONTACTS)
        .map((e) => ({ level: t.level, contact: e.contact, lastSeen: e.lastSeen })),
    );
    p.setContacts(entries);
  }

  #requireRunning(): void {
    if (!this.#running) throw new NotRunningError();
  }

  #requireTable(level: number): RoutingTable {
    this.#requireRunning();
    const t = this.#tables[level];
    if (!t)
      throw new InvalidArgumentError(
        `level ${level} is not run by this node (levels: ${this.levels})`,
      );
    return t;
  }

  #checkKey(key: unknown): void {
    if (!(key instanceof Uint8Array) || key.length !== ID_BYTES) {
      throw new InvalidArgumentError(`key must be a ${ID_BYTES}-byte Uint8Array`);
    }
  }
}

/** Set `key` to `value`, most recent last, keeping at most 8192 entries. */
function bump(map: Map<string, number>, key: string, value: number): void {
  // Bounded by dropping the entry inserted first (cheaper than keeping LRU order on every datagram).
  if (map.size >= 8192 && !map.has(key)) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

export type { StoredValue };
