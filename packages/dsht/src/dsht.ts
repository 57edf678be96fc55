/**
 * The public DSHT node. `Dsht` owns a node's lifecycle — bind, restore, join, stop — and is the
 * facade over its jobs, each in a file of its own:
 *
 * - `lookup/find-node.ts`, `lookup/get.ts`, `lookup/put.ts`: the walks (FIND_NODE, Coral's get
 *   with the i3 shortcut and path caching, the sloppy put);
 * - `membership/peers.ts`: verified members and the routing table of each level, kept in step;
 * - `directory/hint-walks.ts`: publishing and looking up locality hints;
 * - `maintenance/maintenance.ts`: expiry, bucket refresh, isolation checks, hint refresh, persistence;
 * - `persistence/node-state.ts`: what is restored at start and written back;
 * - `snapshot.ts`: `authState()` and `snapshot()`.
 *
 * They share a `NodeContext` (context.ts); the public types are in types.ts.
 */
import { EventEmitter } from 'node:events';
import { systemClock, systemRandom, type Clock, type Random } from '@coral/runtime';
import type { Keyring, KeyringChange } from '@coral/keyring';
import { DatagramAuth, type IsolationState } from './auth/datagram-auth.js';
import type { Address, Contact } from './contact.js';
import {
  DB_CACHE_BYTES,
  DB_WRITE_BUFFER_BYTES,
  ID_BYTES,
  INTRODUCE_DELAY_MS,
  KBUCKET_SIZE,
  LEVEL_COUNT,
  MAX_IDS_PER_IP,
  MAX_TTL_SECONDS,
  MAX_VALUE_BYTES,
  MEMBER_DISCOVERY_BELOW,
  MEMBER_DISCOVERY_MS,
  WALK_CONTACTS,
} from './constants.js';
import type { NodeContext } from './context.js';
import { hintKeys, lookupHint, publishHints, useHints } from './directory/hint-walks.js';
import type { HintKey } from './directory/hints.js';
import { AbortedError, InvalidArgumentError, NotRunningError, throwIfAborted } from './errors.js';
import { addressKey, nodeIdFor, randomIdInBucket, toHex, type Id } from './id/id.js';
import { findNode, type FindNodeOptions } from './lookup/find-node.js';
import { Getter, type GetOptions, type GetProbe } from './lookup/get.js';
import type { LookupEvent } from './lookup/lookup.js';
import { Putter, type PutOptions } from './lookup/put.js';
import { SourceLimiter } from './limits/rate-limiter.js';
import { Maintenance } from './maintenance/maintenance.js';
import { FailureDetector, type MemberChange } from './membership/failure-detector.js';
import { Peers } from './membership/peers.js';
import { Persistence, type KeyValueDb } from './persistence/persistence.js';
import { restoreState, saveContacts, writeThrough } from './persistence/node-state.js';
import type { RoutingEntry, RoutingTable } from './routing-table/routing-table.js';
import { dispatch } from './rpc/handlers/index.js';
import { Rpc, type DshtMetrics, type Logger, type RpcReply } from './rpc/rpc.js';
import { WriteTokens } from './rpc/tokens.js';
import { authStateOf, snapshotOf, type ReportSources } from './snapshot.js';
import { ValueStore, type StoredValue } from './store/value-store.js';
import type { Transport } from './transport/transport.js';
import { UdpTransport } from './transport/udp.js';
import type {
  ClusterPolicy,
  DshtAuthState,
  DshtComponents,
  DshtMember,
  DshtOptions,
  DshtSnapshot,
  FailureDetectionState,
  GetResult,
  PutResult,
} from './types.js';
import type { Request } from './wire/messages.js';

type DshtEvents = {
  /** Every RTT sample from a round trip. */
  rtt: [peer: Contact, rttMs: number];
  /** Every round-trip-verified sender admitted as a member (its contact carries its cluster adverts). */
  contact: [peer: Contact];
  /** A member dropped: replaced at its IP by a newer id, or forgotten beyond capacity. */
  evicted: [peer: Contact];
  /** Keyed mode: the node became isolated (its fleet's keys changed without it) or recovered. */
  isolated: [state: DshtAuthState];
  /** Failure detection: a member did not answer probes, direct or indirect (still a member). */
  'member-suspect': [change: MemberChange];
  /** Failure detection: a suspicion ran out unrefuted; the member is out of members() and the tables. */
  'member-dead': [change: MemberChange];
  /** A member left gracefully (its LEAVE): out at once. */
  'member-left': [change: MemberChange];
  /** A dead or departed member is back (a round trip with a higher incarnation). */
  'member-alive': [change: MemberChange];
};

const noopLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function parseAddress(s: string): Address {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s.trim());
  if (!m) throw new InvalidArgumentError(`bad address "${s}" (expected ip:port)`);
  const port = Number(m[2]);
  if (!(port > 0 && port < 65536)) throw new InvalidArgumentError(`bad port in "${s}"`);
  return { ip: m[1]!, port };
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
  #id: Id | undefined;
  #contact: Contact | undefined;
  #running = false;
  #keyring: Keyring | undefined;
  #onKeys: ((c: KeyringChange) => void) | undefined;
  #auth: DatagramAuth | undefined;
  #peers: Peers;
  #ctx: NodeContext;
  #getter: Getter;
  #putter: Putter;
  #maintenance: Maintenance;
  #detector: FailureDetector | undefined;
  #left = false;

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
    this.#peers = new Peers(
      { clock: this.clock, cluster: this.#cluster, ping: (c) => this.#pingAlive(c) },
      {
        k: options.k,
        maxIdsPerIp: options.maxIdsPerIp ?? MAX_IDS_PER_IP,
        liveWindowMs: options.liveWindowMs,
        maxMembers: options.maxMembers,
        authenticated: this.#keyring !== undefined,
      },
    );
    this.#peers.onLearn = (peer) => {
      this.#detector?.heard(toHex(peer.id));
      this.emit('contact', peer);
    };
    this.#peers.onEvict = (peer) => {
      this.#detector?.removed(toHex(peer.id));
      this.emit('evicted', peer);
    };
    if (options.swim !== false && (options.timers ?? true)) {
      const detector = new FailureDetector(
        {
          clock: this.clock,
          random: this.random,
          peers: this.#peers,
          rpc: () => this.rpc,
          logger: this.#logger,
          allowNat: options.allowNat,
        },
        options.swim ?? {},
      );
      detector.onChange = (change) => this.#memberChanged(change);
      this.#peers.registry.isDown = (hex) => detector.isDown(hex);
      this.#detector = detector;
    }
    this.levels = Math.min(LEVEL_COUNT, Math.max(1, options.levels ?? 1));
    this.store = new ValueStore({ clock: this.clock, random: this.random }, options.store);
    if (components.db) this.#persistence = new Persistence({ db: components.db });
    this.#ctx = this.#context();
    this.#getter = new Getter(this.#ctx);
    this.#putter = new Putter(this.#ctx);
    this.#maintenance = new Maintenance(this.#ctx, {
      sweep: (now) => {
        this.#getter.sweep(now);
        this.#putter.sweep(now);
      },
      checkIsolation: this.#keyring
        ? () => {
            this.#auth?.evaluate();
            return this.#auth?.judging ?? false;
          }
        : undefined,
      discovery:
        options.discovery === false
          ? undefined
          : {
              intervalMs: options.discovery?.intervalMs ?? MEMBER_DISCOVERY_MS,
              below: options.discovery?.below ?? MEMBER_DISCOVERY_BELOW,
              members: () => this.#peers.registry.liveContacts(),
              isMember: (hex) => this.#peers.member(hex) !== undefined,
            },
      persist: this.#persistence
        ? () => {
            if (this.#peers.contactsDirty) this.#saveContacts();
            void this.#persistence!.flush().catch((err: unknown) =>
              this.#logger.warn({ err }, 'persist failed'),
            );
          }
        : undefined,
    });
  }

  /**
   * Production node: UDP on `bind`, LevelDB in `dataDir` (memory only without one), opened with
   * a small write buffer and block cache (`dbWriteBufferBytes`, `dbCacheBytes`): the node writes
   * its values through and reads them back only at a restart, so LevelDB's defaults (4 MiB and
   * 8 MiB) would only hold memory.
   */
  static async open(
    options: DshtOptions & {
      dataDir?: string;
      bind: { host: string; port: number };
      /** LevelDB memtable size. Default DB_WRITE_BUFFER_BYTES (1 MiB). */
      dbWriteBufferBytes?: number;
      /** LevelDB block cache. Default DB_CACHE_BYTES (1 MiB). */
      dbCacheBytes?: number;
    },
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
      const level = new Level<string, string>(options.dataDir, {
        valueEncoding: 'utf8',
        writeBufferSize: options.dbWriteBufferBytes ?? DB_WRITE_BUFFER_BYTES,
        cacheSize: options.dbCacheBytes ?? DB_CACHE_BYTES,
      });
      await level.open();
      db = level;
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
    return this.#peers.tables[level];
  }

  /** Routing table dump of a level. */
  routes(level = 0): Contact[] {
    return this.#peers.tables[level]?.all().map((e) => e.contact) ?? [];
  }

  /** Routing table entries of a level with `lastSeen` and failure counts. */
  routeEntries(level = 0): RoutingEntry[] {
    return this.#peers.tables[level]?.all() ?? [];
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

    this.#startRpc();
    this.#peers.reset(this.#id, this.levels);
    this.#running = true;
    // Before the first PING goes out, so that it carries this life's incarnation (its start time).
    this.#left = false;
    this.#detector?.start(toHex(this.#id), Math.floor(this.clock.now()));

    let stored: Contact[] = [];
    if (this.#persistence) {
      stored = await restoreState(this.#persistence, this.store);
      const { damaged } = this.#persistence;
      if (damaged.contacts + damaged.values > 0)
        this.#logger.warn({ ...damaged }, 'skipped stored records that could not be decoded');
      writeThrough(this.store, this.#persistence, this.#logger);
    }

    if (this.options.timers ?? true) this.#maintenance.start();

    const contacts = [...stored.map((c) => ({ ip: c.ip, port: c.port })), ...bootstrap].filter(
      (a) => !(a.ip === addr.ip && a.port === addr.port),
    );
    await Promise.all(
      contacts.map((a) => this.ping(a, { signal: opts.signal }).catch(() => undefined)),
    );
    if (this.#peers.tables[0]!.size > 0) await this.join({ signal: opts.signal });
    if (this.options.hints) {
      await useHints(this.#ctx, (c, o) => this.ping(c, o), opts.signal);
    }
    this.#logger.info(
      { id: toHex(this.#id), address: addr, contacts: this.#peers.tables[0]!.size },
      'dsht started',
    );
  }

  /**
   * Self-lookup in every level, then a refresh lookup in each bucket that is not full, from the
   * farthest down to the bucket of the k-th closest node the self-lookup found. The deeper buckets
   * (nearer than that node) hold nodes closer to this one than the k-th closest, which the
   * self-lookup — ending only when the k closest had all answered — has already met: a refresh
   * would find no one new there (Kademlia refreshes every bucket below the nearest neighbour's).
   */
  async join(opts: { signal?: AbortSignal } = {}): Promise<void> {
    const id = this.id;
    for (let level = 0; level < this.levels; level++) {
      const table = this.#peers.tables[level]!;
      if (table.size === 0) continue;
      const found = await this.findNode(id, {
        level,
        signal: opts.signal,
        termination: table.k,
        count: table.k,
      });
      if (this.options.joinRefresh ?? true) {
        const nearest = table.closest(id, 1)[0];
        if (!nearest) continue;
        const kth = found[table.k - 1];
        const deepest = Math.min(
          table.bucketIndex(nearest.id),
          kth ? table.bucketIndex(kth.id) + 1 : Infinity,
        );
        for (let b = 0; b < deepest; b++) {
          if ((table.shape()[b] ?? 0) >= table.k) continue;
          table.touchBucket(b);
          await this.findNode(randomIdInBucket(id, b, this.random), { level, signal: opts.signal });
        }
      }
    }
  }

  /**
   * Leave the fleet gracefully: LEAVE to every member (resolves when they acknowledged it, or
   * after `swim.leaveTimeoutMs`), so that they drop this node at once instead of detecting its
   * silence. Probing stops; the node still answers requests until `stop()`. Resolves to the
   * number of members that acknowledged (0 when failure detection is off).
   */
  async leave(): Promise<number> {
    if (!this.#running || !this.#detector?.running || this.#left) return 0;
    this.#left = true;
    const acked = await this.#detector.leave();
    this.#logger.info({ acked }, 'dsht left the fleet');
    return acked;
  }

  /** Stop. With `leave`, `leave()` first. */
  async stop(opts: { leave?: boolean } = {}): Promise<void> {
    if (!this.#running) return;
    if (opts.leave) await this.leave();
    this.#detector?.stop();
    this.#running = false;
    if (this.#onKeys) this.#keyring?.off('change', this.#onKeys);
    this.#onKeys = undefined;
    this.#maintenance.stop();
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
      if (!(err instanceof AbortedError)) this.#peers.noteFailure(nodeIdFor(to.ip, to.port));
      throw err;
    }
  }

  /** Iterative FIND_NODE; resolves with the closest contacts found (closest first). */
  async findNode(target: Id, opts: FindNodeOptions = {}): Promise<Contact[]> {
    this.#requireTable(opts.level ?? 0);
    return findNode(this.#ctx, target, opts);
  }

  /**
   * The get walk as a stream of events, level by level (most local first), each level continuing
   * from the closest node the previous one reached. Ends after the first level that returns values.
   */
  getEvents(
    key: Uint8Array,
    opts: GetOptions = {},
  ): AsyncGenerator<LookupEvent<GetProbe>, void, undefined> {
    return this.#getter.events(key, opts);
  }

  /** Find values for `key`: the local store, then the i3 shortcut, then the walk, level by level. */
  async get(key: Uint8Array, opts: GetOptions = {}): Promise<GetResult> {
    this.#checkKey(key);
    this.#requireRunning();
    throwIfAborted(opts.signal);
    return this.#getter.get(key, opts);
  }

  /**
   * Sloppy put, in every level this node runs, most local first (see lookup/put.ts). Rejects with
   * PutRejectedError when no visited node accepted the value.
   */
  async put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    opts: PutOptions = {},
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
    return this.#putter.put(key, value, ttlSeconds, opts);
  }

  /** Clock time this node last heard from member `id` (a round-trip-verified datagram), or undefined. */
  lastHeard(id: Id): number | undefined {
    return this.#peers.lastHeard(id);
  }

  /** A verified member heard from within `windowMs` and no failed RPC to it since. */
  isLive(id: Id, windowMs: number): boolean {
    return this.#peers.isLive(id, windowMs);
  }

  /** Did the last RPC to `id` fail after the last time it was heard from? */
  isSuspect(id: Id): boolean {
    return this.#peers.isSuspect(id);
  }

  /**
   * The verified live members: nodes this node completed a round trip with (keyed mode: over
   * authenticated datagrams), heard from within `liveWindowMs` with no failed RPC since, at most
   * `maxIdsPerIp` per IP. This node itself is not included.
   */
  members(): DshtMember[] {
    return this.#peers.members();
  }

  /** The verified live member with this id (40 hex digits), or undefined. */
  member(idHex: string): DshtMember | undefined {
    return this.#peers.member(idHex);
  }

  /**
   * Failure detection: whether it runs, this node's incarnation, the current suspicion timeout,
   * each member's state and the counters (undefined when `options.swim` is false or timers are off).
   */
  failureDetection(): FailureDetectionState | undefined {
    const d = this.#detector;
    const swim = d?.swim;
    if (!d || !swim) return undefined;
    const states = { alive: 0, suspect: 0, dead: 0, left: 0 };
    const members = swim.snapshot();
    for (const m of members) states[m.state]++;
    return {
      incarnation: swim.incarnation,
      suspicionMs: swim.suspicionMs(),
      states,
      members,
      counters: { ...swim.counters, ...d.counters },
    };
  }

  /** Trust mode, drop counters by reason, isolation. */
  authState(): DshtAuthState {
    return authStateOf(this.#reportSources());
  }

  /** The hint keys this node publishes under (/24, /16, region). */
  hintKeys(): HintKey[] {
    return hintKeys(this.#ctx);
  }

  /** Put this node's record under its hint keys (level 0). Failures are ignored. */
  async publishHints(opts: { signal?: AbortSignal } = {}): Promise<number> {
    return publishHints(this.#ctx, opts);
  }

  /** The nodes recorded under a hint key (level-0 get; invalid records dropped). */
  async lookupHint(key: Id, opts: { signal?: AbortSignal } = {}): Promise<Contact[]> {
    return lookupHint(this.#ctx, key, opts);
  }

  /** A plain JSON view of the node for admin APIs and tests. */
  snapshot(): DshtSnapshot {
    return snapshotOf(this.#reportSources());
  }

  /**
   * Rebuild a level's table (the cluster module calls this when membership changes): drop it and
   * refill from `seeds` plus every known contact the policy admits.
   */
  resetLevel(level: number, seeds: Contact[] = []): void {
    this.#requireTable(level);
    this.#peers.resetLevel(level, seeds);
    this.#putter.forgetLevel(level);
  }

  // ---- internals ----------------------------------------------------------------------------

  /** The RPC layer of a starting node, its authenticator, and the hooks that tie them to the peers. */
  #startRpc(): void {
    const clock = this.clock;
    const auth = new DatagramAuth({ clock, keyring: this.#keyring }, this.options.auth);
    auth.onIsolation = (state) => this.#isolationChanged(state);
    auth.onUnknownKey = () => this.#maintenance.wakeIsolationCheck();
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
        maxIdsPerIp: this.options.maxIdsPerIp ?? MAX_IDS_PER_IP,
        unverifiedReplies: this.options.unverifiedReplies,
      },
    );
    this.#rpc = rpc;
    const peers = this.#peers;
    const ctx = {
      table: (l: number) => peers.tables[l],
      store: this.store,
      k: this.options.k ?? KBUCKET_SIZE,
      walkContacts: this.options.walkContacts ?? WALK_CONTACTS,
    };
    const detector = this.#detector;
    rpc.onRequest = (req, sender, from, source) =>
      detector?.handle(req, sender, from, source) ??
      dispatch(ctx, req, sender, this.clock.now(), source);
    if (detector) {
      rpc.decorate = (body, to) =>
        body.type === 'PING' ? detector.decorate(body, toHex(nodeIdFor(to.ip, to.port))) : body;
      rpc.onAnswer = (sender, body) => detector.answered(sender, body);
    }
    rpc.onSeen = (sender, roundTrip, from) => {
      if (roundTrip) peers.learn(sender, from.ip);
    };
    // Introduce this node to a peer met for the first time: a PING with its fresh token is the
    // round trip the peer needs before it may admit this node (see Peers.wantsIntroduction).
    rpc.onFirstToken = (peer) => {
      const addr = addressKey(peer.ip, peer.port);
      this.clock.setTimeout(() => {
        // A lookup that asked the peer again in the meantime has introduced this node already;
        // judged late, so a joining node's tables have filled (see Peers.wantsIntroduction).
        if (!this.#running || rpc.peerTokens.used(addr) || !peers.wantsIntroduction(peer)) return;
        void rpc.request(peer, { type: 'PING' }, { retries: 0 }).catch(() => undefined);
      }, INTRODUCE_DELAY_MS);
    };
    rpc.onRtt = (sender, rtt) => {
      if (peers.registry.has(toHex(sender.id))) this.emit('rtt', sender, rtt);
    };
  }

  /** The context the jobs share: live views of this node's parts. */
  #context(): NodeContext {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const node = this;
    return {
      clock: this.clock,
      random: this.random,
      options: this.options,
      logger: this.#logger,
      metrics: this.#metrics,
      store: this.store,
      levels: this.levels,
      get id() {
        return node.id;
      },
      get contact() {
        return node.contact;
      },
      get plainContact() {
        if (!node.#contact) throw new NotRunningError('DSHT node not started: contact unknown');
        return node.#contact;
      },
      get rpc() {
        return node.rpc;
      },
      get running() {
        return node.#running;
      },
      table: (level) => this.#peers.tables[level]!,
      tables: () => this.#peers.tables,
      query: (to, body, signal) => this.#query(to, body, signal),
    };
  }

  #reportSources(): ReportSources {
    return {
      clock: this.clock,
      transport: this.transport,
      store: this.store,
      peers: this.#peers,
      keyring: this.#keyring,
      cluster: this.#cluster,
      rpc: this.#rpc,
      auth: this.#auth,
      contact: this.#contact,
    };
  }

  #memberChanged(change: MemberChange): void {
    const { id, state, from } = change;
    const log = { id, ip: change.ip, port: change.port, incarnation: change.incarnation };
    if (state === 'dead' || state === 'left') {
      this.#peers.drop(id);
      this.#logger.warn(log, state === 'dead' ? 'dsht member dead' : 'dsht member left');
      this.emit(state === 'dead' ? 'member-dead' : 'member-left', change);
    } else if (state === 'suspect') {
      this.#logger.info(log, 'dsht member suspect');
      this.emit('member-suspect', change);
    } else if (from === 'dead' || from === 'left') {
      this.#peers.restore(id);
      this.#logger.info(log, 'dsht member alive again');
      this.emit('member-alive', change);
    }
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

  async #query(to: Contact, body: Request, signal?: AbortSignal): Promise<RpcReply> {
    try {
      return await this.rpc.request(to, body, { signal });
    } catch (err) {
      if (!(err instanceof AbortedError)) this.#peers.noteFailure(to.id);
      throw err;
    }
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

  #saveContacts(): void {
    this.#peers.contactsDirty = false;
    if (this.#persistence) saveContacts(this.#persistence, this.#peers.tables);
  }

  #requireRunning(): void {
    if (!this.#running) throw new NotRunningError();
  }

  #requireTable(level: number): RoutingTable {
    this.#requireRunning();
    const t = this.#peers.tables[level];
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

export type { StoredValue };
