/**
 * What every component of one DSHT node shares, and where they are wired together — each given
 * its collaborators in its constructor, none of them told anything afterwards:
 *
 * - the value store, written through to the database when there is one (`persistence/node-state.ts`);
 * - the peers (`membership/peers.ts`: members and routing tables), told failure detection's
 *   verdict; each member admitted or dropped goes to failure detection and out as a
 *   'contact' / 'evicted' event;
 * - failure detection (`membership/failure-detector.ts`), whose verdicts drop members from the
 *   tables and restore them (`#memberChanged`);
 * - while the node runs: its contact, its RPC layer and its authenticator (`rpc/node-rpc.ts`
 *   builds those two).
 *
 * The walks (find-node, get, put), the locality hints and the periodic maintenance each take this
 * instead of the whole `Dsht`. The members that only exist while the node runs (`id`, `rpc`, the
 * tables) throw `NotRunningError` before `start()`, exactly as the public getters do.
 */
import type { Keyring } from '@coral/keyring';
import type { Clock, Random } from '@coral/runtime';
import type { DatagramAuth } from './auth/datagram-auth.js';
import { MAX_IDS_PER_IP } from './constants.js';
import type { Contact } from './contact.js';
import { AbortedError, NotRunningError } from './errors.js';
import { toHex, type Id } from './id/id.js';
import { FailureDetector, type MemberChange } from './membership/failure-detector.js';
import { Peers } from './membership/peers.js';
import { restoreState, saveContacts, writeThrough } from './persistence/node-state.js';
import { Persistence, type KeyValueDb } from './persistence/persistence.js';
import type { RoutingTable } from './routing-table/routing-table.js';
import type { DshtMetrics, Logger, Rpc, RpcReply } from './rpc/rpc.js';
import type { ReportSources } from './snapshot.js';
import { ValueStore } from './store/value-store.js';
import type { Transport } from './transport/transport.js';
import type { ClusterPolicy, DshtEvents, DshtOptions } from './types.js';
import type { Request } from './wire/messages.js';

/** Where a node's events go (the `Dsht`, an EventEmitter of `DshtEvents`). */
export interface NodeEvents {
  emit<E extends keyof DshtEvents>(event: E, ...args: DshtEvents[E]): boolean;
}

export interface NodeContextComponents {
  transport: Transport;
  clock: Clock;
  random: Random;
  /** Default: none (every line dropped). */
  logger?: Logger;
  metrics?: DshtMetrics;
  keyring?: Keyring;
  cluster?: ClusterPolicy;
  db?: KeyValueDb;
  events: NodeEvents;
}

const noopLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** What a running node has that a stopped one lacks (kept after a stop for the reports). */
interface Run {
  contact: Contact;
  rpc: Rpc;
  auth: DatagramAuth;
}

export class NodeContext {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly metrics: DshtMetrics | undefined;
  readonly options: DshtOptions;
  readonly keyring: Keyring | undefined;
  readonly cluster: ClusterPolicy | undefined;
  readonly events: NodeEvents;
  /** Cluster levels this node runs. */
  readonly levels: number;
  readonly store: ValueStore;
  readonly persistence: Persistence | undefined;
  readonly peers: Peers;
  /** Failure detection (SWIM), when `options.swim` is not false and timers run. */
  readonly detector: FailureDetector | undefined;
  #run: Run | undefined;
  #running = false;

  constructor(components: NodeContextComponents, options: DshtOptions, levels: number) {
    const { clock, random } = components;
    const logger = components.logger ?? noopLogger;
    this.transport = components.transport;
    this.clock = clock;
    this.random = random;
    this.logger = logger;
    this.metrics = components.metrics;
    this.keyring = components.keyring;
    this.cluster = components.cluster;
    this.events = components.events;
    this.options = options;
    this.levels = levels;
    // Failure detection runs only with timers; its options default to swim.ts's constants.
    const swim = options.swim === false || !(options.timers ?? true) ? false : (options.swim ?? {});
    this.peers = new Peers(
      {
        clock,
        cluster: this.cluster,
        ping: (c) => this.#pingAlive(c),
        isDown: swim ? (hex) => this.detector!.isDown(hex) : undefined,
        onLearn: (peer) => {
          this.detector?.heard(toHex(peer.id));
          this.events.emit('contact', peer);
        },
        onEvict: (peer) => {
          this.detector?.removed(toHex(peer.id));
          this.events.emit('evicted', peer);
        },
      },
      {
        k: options.k,
        maxIdsPerIp: options.maxIdsPerIp ?? MAX_IDS_PER_IP,
        liveWindowMs: options.liveWindowMs,
        maxMembers: options.maxMembers,
        authenticated: this.keyring !== undefined,
      },
    );
    this.detector = swim
      ? new FailureDetector(
          {
            clock,
            random,
            peers: this.peers,
            rpc: () => this.rpc,
            logger,
            allowNat: options.allowNat,
            onChange: (change) => this.#memberChanged(change),
          },
          swim,
        )
      : undefined;
    this.persistence = components.db ? new Persistence({ db: components.db }) : undefined;
    this.store = new ValueStore(
      {
        clock,
        random,
        onChange: this.persistence ? writeThrough(this.persistence, logger) : undefined,
      },
      options.store,
    );
  }

  get id(): Id {
    if (!this.#run) throw new NotRunningError('DSHT node not started: id unknown');
    return this.#run.contact.id;
  }

  /** This node's contact, with its current cluster adverts. */
  get contact(): Contact {
    const plain = this.plainContact;
    const adverts = this.cluster?.adverts();
    return adverts && adverts.length > 0 ? { ...plain, clusters: adverts } : plain;
  }

  /** This node's contact as made at start (id, address, service ports), without adverts. */
  get plainContact(): Contact {
    if (!this.#run) throw new NotRunningError('DSHT node not started: contact unknown');
    return this.#run.contact;
  }

  get rpc(): Rpc {
    if (!this.#run) throw new NotRunningError();
    return this.#run.rpc;
  }

  get running(): boolean {
    return this.#running;
  }

  /**
   * Start running as `contact` over `rpc`: fresh tables around its id, and the keyring's changes
   * going to the authenticator until `end()`.
   */
  begin(contact: Contact, rpc: Rpc, auth: DatagramAuth): void {
    this.#run = { contact, rpc, auth };
    this.keyring?.on('change', this.#onKeys);
    this.peers.reset(contact.id, this.levels);
    this.#running = true;
  }

  /** Stop running: the keyring is no longer followed and pending requests fail. */
  end(): void {
    this.#running = false;
    this.keyring?.off('change', this.#onKeys);
    this.#run?.rpc.cancelAll();
  }

  /**
   * The routing table of `level`, a level this node runs (tables are replaced when a level is
   * reset: never keep one across an await).
   */
  table(level: number): RoutingTable {
    return this.peers.tables[level]!;
  }

  /** Every table, level 0 first. */
  tables(): readonly RoutingTable[] {
    return this.peers.tables;
  }

  /** An RPC to a contact; a failure (not an abort) counts against it. */
  async query(to: Contact, body: Request, signal?: AbortSignal): Promise<RpcReply> {
    try {
      return await this.rpc.request(to, body, { signal });
    } catch (err) {
      if (!(err instanceof AbortedError)) this.peers.noteFailure(to.id);
      throw err;
    }
  }

  /** Queue the routing tables' contacts for the database (no-op without one). */
  saveContacts(): void {
    this.peers.contactsDirty = false;
    if (this.persistence) saveContacts(this.persistence, this.peers.tables);
  }

  /**
   * At start: the stored values back into the store (expired ones deleted), and the stored
   * contacts to ping first (none without a database).
   */
  async restore(): Promise<Contact[]> {
    const persistence = this.persistence;
    if (!persistence) return [];
    const stored = await restoreState(persistence, this.store);
    const { damaged } = persistence;
    if (damaged.contacts + damaged.values > 0)
      this.logger.warn({ ...damaged }, 'skipped stored records that could not be decoded');
    return stored;
  }

  /** Write the contacts and pending values to the database now (and close it with `close`). */
  async flush(opts: { close?: boolean } = {}): Promise<void> {
    const persistence = this.persistence;
    if (!persistence) return;
    this.saveContacts();
    if (opts.close) await persistence.close();
    else await persistence.flush();
  }

  /** The parts `authState()` and `snapshot()` read. */
  reports(): ReportSources {
    return {
      clock: this.clock,
      transport: this.transport,
      store: this.store,
      peers: this.peers,
      keyring: this.keyring,
      cluster: this.cluster,
      rpc: this.#run?.rpc,
      auth: this.#run?.auth,
      contact: this.#run?.contact,
    };
  }

  readonly #onKeys = (): void => this.#run?.auth.refreshKeys();

  async #pingAlive(c: Contact): Promise<boolean> {
    if (!this.#running) return true;
    try {
      await this.rpc.request(c, { type: 'PING' });
      return true;
    } catch {
      return false;
    }
  }

  /** Failure detection's verdicts: dead or departed members leave the tables, and come back. */
  #memberChanged(change: MemberChange): void {
    const { id, state, from } = change;
    const log = { id, ip: change.ip, port: change.port, incarnation: change.incarnation };
    if (state === 'dead' || state === 'left') {
      this.peers.drop(id);
      this.logger.warn(log, state === 'dead' ? 'dsht member dead' : 'dsht member left');
      this.events.emit(state === 'dead' ? 'member-dead' : 'member-left', change);
    } else if (state === 'suspect') {
      this.logger.info(log, 'dsht member suspect');
      this.events.emit('member-suspect', change);
    } else if (from === 'dead' || from === 'left') {
      this.peers.restore(id);
      this.logger.info(log, 'dsht member alive again');
      this.events.emit('member-alive', change);
    }
  }
}
