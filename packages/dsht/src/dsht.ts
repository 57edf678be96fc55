/**
 * The public DSHT node. `Dsht` owns a node's lifecycle — bind, restore, join, leave, stop — and is
 * the façade over its components, each in a file of its own and each given its collaborators in
 * its constructor:
 *
 * - `context.ts`: the `NodeContext` every component shares (store, peers, failure detection, the
 *   running node's contact and RPC layer), where they are wired together;
 * - `rpc/node-rpc.ts`: the RPC stack built at each start (authenticator, tokens, limiter, the
 *   request handlers of `rpc/handlers/`, the membership observer);
 * - `lookup/find-node.ts`, `lookup/join.ts`, `lookup/get.ts`, `lookup/put.ts`: the walks (FIND_NODE,
 *   join, Coral's get with the i3 shortcut and path caching, the sloppy put);
 * - `cluster/dsht-binding.ts`: the cluster binding the node owns with `options.clustering`;
 * - `directory/hint-walks.ts`: publishing and looking up locality hints;
 * - `maintenance/maintenance.ts`: expiry, bucket refresh, isolation checks, hint refresh, persistence;
 * - `persistence/node-state.ts`: what is restored at start and written back;
 * - `snapshot.ts`: `authState()`, `failureDetection()` and `snapshot()`.
 *
 * The public types are in types.ts.
 */
import { EventEmitter } from 'node:events';
import { systemClock, systemRandom, type Clock, type Random } from '@coral/runtime';
import { DshtClusterBinding } from './cluster/dsht-binding.js';
import { parseAddress, selfContact, type Address, type Contact } from './contact.js';
import { ID_BYTES, LEVEL_COUNT } from './constants.js';
import { NodeContext } from './context.js';
import { hintKeys, lookupHint, publishHints, useHints } from './directory/hint-walks.js';
import type { HintKey } from './directory/hints.js';
import { AbortedError, InvalidArgumentError, NotRunningError, throwIfAborted } from './errors.js';
import { nodeIdFor, toHex, type Id } from './id/id.js';
import { findNode, type FindNodeOptions } from './lookup/find-node.js';
import { Getter, type GetOptions, type GetProbe } from './lookup/get.js';
import { join } from './lookup/join.js';
import type { LookupEvent } from './lookup/lookup.js';
import { checkPut, Putter, type PutOptions } from './lookup/put.js';
import { Maintenance } from './maintenance/maintenance.js';
import { openLevelDb, type LevelDbOptions } from './persistence/level.js';
import type { RoutingEntry, RoutingTable } from './routing-table/routing-table.js';
import { createNodeRpc } from './rpc/node-rpc.js';
import type { Rpc } from './rpc/rpc.js';
import { authStateOf, failureDetectionOf, snapshotOf } from './snapshot.js';
import type { ValueStore } from './store/value-store.js';
import type { Transport } from './transport/transport.js';
import { UdpTransport } from './transport/udp.js';
import type {
  DshtAuthState,
  DshtComponents,
  DshtEvents,
  DshtMember,
  DshtOptions,
  DshtSnapshot,
  FailureDetectionState,
  GetResult,
  PutResult,
} from './types.js';

export class Dsht extends EventEmitter<DshtEvents> {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly random: Random;
  readonly store: ValueStore;
  readonly options: DshtOptions;
  readonly levels: number;
  readonly #ctx: NodeContext;
  readonly #clustering: DshtClusterBinding | undefined;
  readonly #getter: Getter;
  readonly #putter: Putter;
  readonly #maintenance: Maintenance;
  #ownsDb = false;
  #left = false;

  constructor(components: DshtComponents, options: DshtOptions = {}) {
    super();
    const keyring = components.keyring;
    if (options.open === true && keyring)
      throw new InvalidArgumentError('options.open is true but a keyring was given');
    if (options.open === false && !keyring)
      throw new InvalidArgumentError('keyed mode (options.open = false) needs components.keyring');
    if (options.clustering && components.cluster)
      throw new InvalidArgumentError('give components.cluster or options.clustering, not both');
    this.transport = components.transport;
    this.clock = components.clock ?? systemClock;
    this.random = components.random ?? systemRandom;
    this.options = options;
    this.levels = Math.min(LEVEL_COUNT, Math.max(1, options.levels ?? 1));
    this.#clustering = options.clustering
      ? new DshtClusterBinding({ node: this }, options.clustering)
      : undefined;
    const ctx = new NodeContext(
      {
        transport: this.transport,
        clock: this.clock,
        random: this.random,
        logger: components.logger,
        metrics: components.metrics,
        keyring,
        cluster: this.#clustering ?? components.cluster,
        db: components.db,
        events: this,
      },
      options,
      this.levels,
    );
    this.#ctx = ctx;
    this.store = ctx.store;
    this.#getter = new Getter(ctx);
    this.#putter = new Putter(ctx);
    this.#maintenance = new Maintenance(ctx, {
      sweep: (now) => {
        this.#getter.sweep(now);
        this.#putter.sweep(now);
      },
    });
  }

  /** Production node: UDP on `bind`, LevelDB in `dataDir` (memory only without one). */
  static async open(
    options: DshtOptions &
      LevelDbOptions & { dataDir?: string; bind: { host: string; port: number } },
    components: Omit<DshtComponents, 'transport' | 'db' | 'clock' | 'random'> = {},
  ): Promise<Dsht> {
    const transport = new UdpTransport({}, { host: options.bind.host, port: options.bind.port });
    const db = options.dataDir ? await openLevelDb(options.dataDir, options) : undefined;
    const node = new Dsht({ transport, db, ...components }, options);
    node.#ownsDb = db !== undefined;
    return node;
  }

  get id(): Id {
    return this.#ctx.id;
  }

  get contact(): Contact {
    return this.#ctx.contact;
  }

  get running(): boolean {
    return this.#ctx.running;
  }

  /** The RPC layer (for diagnostics: RTTs, counters). */
  get rpc(): Rpc {
    return this.#ctx.rpc;
  }

  /** The cluster binding this node owns (`options.clustering`), undefined without one. */
  get clustering(): DshtClusterBinding | undefined {
    return this.#clustering;
  }

  /** The routing table of `level`, undefined when this node does not run it. */
  table(level: number): RoutingTable | undefined {
    return this.#ctx.peers.tables[level];
  }

  /** Routing table dump of a level. */
  routes(level = 0): Contact[] {
    return this.routeEntries(level).map((e) => e.contact);
  }

  /** Routing table entries of a level with `lastSeen` and failure counts. */
  routeEntries(level = 0): RoutingEntry[] {
    return this.#ctx.peers.tables[level]?.all() ?? [];
  }

  /** Values stored on this node for `key`, at one level or all. */
  localGet(key: Uint8Array, level?: number): Uint8Array[] {
    const levels = level === undefined ? [...Array(LEVEL_COUNT).keys()] : [level];
    return levels.flatMap((l) => this.store.get(l, key).map((v) => v.value));
  }

  /** Start: bind, load persisted state, contact stored peers and bootstrap addresses, join. */
  async start(opts: { bootstrap?: string[]; signal?: AbortSignal } = {}): Promise<void> {
    const ctx = this.#ctx;
    if (ctx.running) return;
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
    const contact = selfContact(addr, this.options.service);
    const id = contact.id;
    const maintenance = this.#maintenance;
    const { rpc, auth } = createNodeRpc(ctx, {
      onUnknownKey: () => maintenance.wakeIsolationCheck(),
    });
    ctx.begin(contact, rpc, auth);
    this.#clustering?.resume();
    this.#left = false;
    // Before the first PING goes out, so that it carries this life's incarnation (its start time).
    ctx.detector?.start(toHex(id), Math.floor(this.clock.now()));

    const stored = await ctx.restore();

    if (this.options.timers ?? true) maintenance.start();

    const contacts = [...stored.map((c) => ({ ip: c.ip, port: c.port })), ...bootstrap].filter(
      (a) => !(a.ip === addr.ip && a.port === addr.port),
    );
    await Promise.all(
      contacts.map((a) => this.ping(a, { signal: opts.signal }).catch(() => undefined)),
    );
    if (ctx.table(0).size > 0) await this.join({ signal: opts.signal });
    if (this.options.hints) {
      await useHints(ctx, (c, o) => this.ping(c, o), opts.signal);
    }
    ctx.logger.info({ id: toHex(id), address: addr, contacts: ctx.table(0).size }, 'dsht started');
  }

  /** Self-lookup and bucket refresh in every level (see lookup/join.ts). */
  async join(opts: { signal?: AbortSignal } = {}): Promise<void> {
    return join(this.#ctx, opts);
  }

  /**
   * Leave the fleet gracefully: LEAVE to every member (resolves when they acknowledged it, or
   * after `swim.leaveTimeoutMs`), so that they drop this node at once instead of detecting its
   * silence. Probing stops; the node still answers requests until `stop()`. Resolves to the
   * number of members that acknowledged (0 when failure detection is off).
   */
  async leave(): Promise<number> {
    const detector = this.#ctx.detector;
    if (!this.running || !detector?.running || this.#left) return 0;
    this.#left = true;
    const acked = await detector.leave();
    this.#ctx.logger.info({ acked }, 'dsht left the fleet');
    return acked;
  }

  /** Stop. With `leave`, `leave()` first. */
  async stop(opts: { leave?: boolean } = {}): Promise<void> {
    const ctx = this.#ctx;
    if (!ctx.running) return;
    if (opts.leave) await this.leave();
    ctx.detector?.stop();
    ctx.end();
    this.#maintenance.stop();
    this.#clustering?.pause();
    await ctx.flush({ close: this.#ownsDb });
    await this.transport.close();
    ctx.logger.info({ id: toHex(ctx.id) }, 'dsht stopped');
  }

  /** Write pending contacts and values to the database now (no-op without one). */
  async flush(): Promise<void> {
    await this.#ctx.flush();
  }

  /** Ping an address; resolves with the RTT in ms, rejects on timeout. */
  async ping(to: Address, opts: { signal?: AbortSignal; retries?: number } = {}): Promise<number> {
    try {
      const r = await this.rpc.request(to, { type: 'PING' }, opts);
      return r.rttMs;
    } catch (err) {
      // A failed ping counts against the node at that address (its id follows from the address).
      if (!(err instanceof AbortedError)) this.#ctx.peers.noteFailure(nodeIdFor(to.ip, to.port));
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
    checkPut(value, ttlSeconds);
    this.#requireRunning();
    throwIfAborted(opts.signal);
    return this.#putter.put(key, value, ttlSeconds, opts);
  }

  /** Clock time this node last heard from member `id` (a round-trip-verified datagram), or undefined. */
  lastHeard(id: Id): number | undefined {
    return this.#ctx.peers.lastHeard(id);
  }

  /** A verified member heard from within `windowMs` and no failed RPC to it since. */
  isLive(id: Id, windowMs: number): boolean {
    return this.#ctx.peers.isLive(id, windowMs);
  }

  /** Did the last RPC to `id` fail after the last time it was heard from? */
  isSuspect(id: Id): boolean {
    return this.#ctx.peers.isSuspect(id);
  }

  /**
   * The verified live members: nodes this node completed a round trip with (keyed mode: over
   * authenticated datagrams), heard from within `liveWindowMs` with no failed RPC since, at most
   * `maxIdsPerIp` per IP. This node itself is not included.
   */
  members(): DshtMember[] {
    return this.#ctx.peers.members();
  }

  /** The verified live member with this id (40 hex digits), or undefined. */
  member(idHex: string): DshtMember | undefined {
    return this.#ctx.peers.member(idHex);
  }

  /**
   * Failure detection: whether it runs, this node's incarnation, the current suspicion timeout,
   * each member's state and the counters (undefined when `options.swim` is false or timers are off).
   */
  failureDetection(): FailureDetectionState | undefined {
    return failureDetectionOf(this.#ctx.detector);
  }

  /** Trust mode, drop counters by reason, isolation. */
  authState(): DshtAuthState {
    return authStateOf(this.#ctx.reports());
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
    return snapshotOf(this.#ctx.reports());
  }

  /**
   * Rebuild a level's table (the cluster binding calls this when membership changes): drop it and
   * refill from `seeds` plus every known contact the policy admits.
   */
  resetLevel(level: number, seeds: Contact[] = []): void {
    this.#requireTable(level);
    this.#ctx.peers.resetLevel(level, seeds);
    this.#putter.forgetLevel(level);
  }

  #requireRunning(): void {
    if (!this.running) throw new NotRunningError();
  }

  #requireTable(level: number): RoutingTable {
    this.#requireRunning();
    const t = this.#ctx.peers.tables[level];
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
