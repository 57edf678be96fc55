/**
 * A `ClusterManager` wired into the `Dsht` node that owns it (`DshtOptions.clustering`), through
 * the node's public surface only:
 *
 * - it is the node's `ClusterPolicy`: `adverts()` puts the manager's advertisement in every
 *   message; `admits(level, contact)` lets a contact into the level's routing table when it last
 *   advertised this node's cluster at that level;
 * - from its construction it feeds the node's `rtt` events to `onRttSample` and its `contact`
 *   events (every verified sender, carrying its adverts) to `onAdvertisement`; on a membership
 *   change it pings a few members of the cluster it left and calls `node.resetLevel(level,
 *   members)` so the level's table holds the new cluster; every `tickMs` while the node runs it
 *   ticks the manager, pings a few of its `probeTargets()` (whose answers come back as `rtt`) and,
 *   when due, explores with a random level-0 lookup.
 *
 * ```ts
 * const node = new Dsht({ transport, clock, random }, { levels: 3, clustering: {} });
 * await node.start({ bootstrap });
 * node.clustering!.manager.snapshot();
 * ```
 */
import type { TimerHandle } from '@coral/runtime';
import { shuffle } from '@coral/runtime';
import { ID_BYTES } from '../constants.js';
import type { Contact } from '../contact.js';
import type { Dsht } from '../dsht.js';
import type { FindNodeOptions } from '../lookup/find-node.js';
import type { ClusterPolicy } from '../types.js';
import {
  ClusterManager,
  CLUSTER_MAX_PEERS,
  CLUSTER_TICK_MS,
  toHex,
  type ClusterAd,
  type ClusterChange,
  type ClusterManagerOptions,
} from './cluster-manager.js';

/** Probe pings sent per tick. */
export const CLUSTER_PROBES_PER_TICK = 2;
/** Members of the cluster just left that are pinged after a change. */
export const CLUSTER_ANNOUNCE = 3;
/** Interval of exploration lookups while the node is alone in a cluster at some level (ms). */
export const CLUSTER_EXPLORE_ALONE_MS = 15_000;
/** Interval of exploration lookups otherwise (ms). */
export const CLUSTER_EXPLORE_MS = 300_000;

export interface DshtClusterBindingComponents {
  /** The node whose clusters this binding forms (its owner). */
  node: Dsht;
}

export interface DshtClusterBindingOptions {
  /** Options of the manager the binding builds on the node's clock and random source. */
  manager?: ClusterManagerOptions;
  /** Default {@link CLUSTER_PROBES_PER_TICK}. */
  probesPerTick?: number;
  /** Tick interval; default the manager's `tickMs` option or {@link CLUSTER_TICK_MS}. */
  tickMs?: number;
  /** Default {@link CLUSTER_ANNOUNCE}. */
  announce?: number;
  /** Default {@link CLUSTER_EXPLORE_ALONE_MS}. */
  exploreAloneMs?: number;
  /** Default {@link CLUSTER_EXPLORE_MS}; 0 turns exploration off. */
  exploreMs?: number;
}

/** The key a peer has in the manager: its `ip:port` (from which its node id is derived). */
export function peerKey(c: { ip: string; port: number }): string {
  return c.ip.includes(':') ? `[${c.ip}]:${c.port}` : `${c.ip}:${c.port}`;
}

export class DshtClusterBinding implements ClusterPolicy {
  readonly #options: DshtClusterBindingOptions;
  readonly #manager: ClusterManager;
  readonly #node: Dsht;
  /** Last contact seen per peer key (least recently seen first), for probes and table seeds. */
  readonly #contacts = new Map<string, Contact>();
  #timer: TimerHandle | undefined;
  #probes = 0;
  #explores = 0;
  #lookupsFailed = 0;
  #lastExplore = -Infinity;

  /** Subscribes to `node` and starts ticking on its clock (a tick does nothing while it is stopped). */
  constructor(components: DshtClusterBindingComponents, options: DshtClusterBindingOptions = {}) {
    const node = components.node;
    this.#node = node;
    this.#options = options;
    const m = new ClusterManager({ clock: node.clock, random: node.random }, options.manager);
    this.#manager = m;
    node.on('rtt', (peer, rttMs) => {
      this.#remember(peer);
      m.onRttSample(peerKey(peer), rttMs);
    });
    node.on('contact', (peer) => {
      this.#remember(peer);
      if (!peer.clusters) return;
      const key = peerKey(peer);
      const was = this.#memberLevels(key);
      m.onAdvertisement(key, peer.clusters);
      // A member that moved to another cluster leaves that level's table.
      for (const level of was) {
        if (!m.isMember(key, level)) node.table(level)?.remove(peer.id);
      }
    });
    // A member the node dropped (another id took its IP, or it was forgotten) leaves the view too:
    // the cluster view never holds more ids per IP than the node's member registry.
    node.on('evicted', (peer) => {
      const key = peerKey(peer);
      this.#contacts.delete(key);
      m.onPeerGone(key);
    });
    m.on('change', (change: ClusterChange) => {
      this.#announce(change);
      this.#rebuild(change.level);
    });
    this.resume();
  }

  get manager(): ClusterManager {
    return this.#manager;
  }

  /** Probe pings sent so far. */
  get probesSent(): number {
    return this.#probes;
  }

  /** Exploration lookups started so far. */
  get explorations(): number {
    return this.#explores;
  }

  /** Lookups of this binding (explorations, joins of a rebuilt level) that failed. */
  get lookupsFailed(): number {
    return this.#lookupsFailed;
  }

  // ---- ClusterPolicy -------------------------------------------------------------------------

  adverts(): ClusterAd[] {
    return this.#manager.advertisement();
  }

  admits(level: number, contact: Contact): boolean {
    if (level === 0) return true;
    const m = this.#manager;
    if (level >= m.levels) return false;
    const mine = m.clusterOf(level);
    const known = m.peerCluster(peerKey(contact), level);
    if (known !== undefined) return known === mine && m.isMember(peerKey(contact), level);
    const advert = contact.clusters?.find((a) => a.level === level);
    return advert !== undefined && toHex(advert.clusterId) === mine;
  }

  // ---- ticking (the node calls these) --------------------------------------------------------

  /** Tick every `tickMs` of the node's clock (from construction; again after `pause()`). */
  resume(): void {
    if (this.#timer) return;
    const node = this.#node;
    const every = this.#options.tickMs ?? this.#options.manager?.tickMs ?? CLUSTER_TICK_MS;
    const loop = (): void => {
      this.#timer = node.clock.setTimeout(() => {
        this.#tick();
        if (this.#timer) loop();
      }, every);
    };
    loop();
  }

  /** Stop ticking (the node stopped). */
  pause(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #tick(): void {
    const node = this.#node;
    const m = this.#manager;
    if (!node.running) return;
    m.tick();
    const max = this.#options.probesPerTick ?? CLUSTER_PROBES_PER_TICK;
    for (const key of m.probeTargets(max)) {
      const c = this.#contacts.get(key);
      if (!c) continue;
      this.#probes++;
      // The answer's RTT arrives through the node's `rtt` event; a peer that does not answer is gone.
      node.ping({ ip: c.ip, port: c.port }).catch(() => {
        m.onPeerGone(key);
        this.#contacts.delete(key);
      });
    }
    this.#explore(node, m);
  }

  /**
   * Meet more of the fleet: a level-0 lookup of a random id reaches nodes this node has never heard
   * from, and every answer carries the answering node's clusters. Frequent while the node is alone
   * in a cluster at some level (it has not found its neighbours yet), rare otherwise.
   */
  #explore(node: Dsht, m: ClusterManager): void {
    const rare = this.#options.exploreMs ?? CLUSTER_EXPLORE_MS;
    if (rare <= 0) return;
    let alone = false;
    for (let level = 1; level < Math.min(m.levels, node.levels); level++) {
      if (m.sizeEstimate(level) <= 1) alone = true;
    }
    const every = alone ? (this.#options.exploreAloneMs ?? CLUSTER_EXPLORE_ALONE_MS) : rare;
    const now = node.clock.now();
    if (now - this.#lastExplore < every) return;
    this.#lastExplore = now;
    this.#explores++;
    const target = node.random.bytes(new Uint8Array(ID_BYTES));
    // A survey: every answer names k contacts, each with its clusters.
    this.#lookup(node, target, { level: 0, count: node.table(0)?.k });
  }

  /**
   * Tell a few members of the cluster just left: their counts of it drop at once, and the ping
   * carries the new cluster's advert, which may draw them along (clusters merge faster).
   */
  #announce(change: ClusterChange): void {
    const node = this.#node;
    const m = this.#manager;
    if (!node.running) return;
    const old: string[] = [];
    for (const [key] of this.#contacts) {
      if (m.peerCluster(key, change.level) === change.oldClusterId) old.push(key);
    }
    const max = this.#options.announce ?? CLUSTER_ANNOUNCE;
    for (const key of shuffle(old, node.random).slice(0, max)) {
      const c = this.#contacts.get(key)!;
      node.ping({ ip: c.ip, port: c.port }).catch(() => undefined);
    }
  }

  /**
   * The cluster at `level` changed: rebuild that routing table from the members known, then join
   * the cluster's DSHT as a node joins the fleet's — a self-lookup in that level, which meets the
   * members nearest this node (and introduces it to them) beyond those this node had heard from.
   */
  #rebuild(level: number): void {
    const node = this.#node;
    const m = this.#manager;
    if (!node.running || level >= node.levels) return;
    const seeds: Contact[] = [];
    for (const key of m.members(level)) {
      const c = this.#contacts.get(key);
      if (c) seeds.push(c);
    }
    node.resetLevel(level, seeds);
    const k = node.table(level)?.k;
    if (seeds.length > 0 && k !== undefined)
      this.#lookup(node, node.id, { level, termination: k, count: k });
  }

  /** A lookup in the background; one that fails (the node stopping) is counted, never thrown. */
  #lookup(node: Dsht, target: Uint8Array, opts: FindNodeOptions): void {
    node.findNode(target, opts).catch(() => {
      this.#lookupsFailed++;
    });
  }

  #memberLevels(key: string): number[] {
    const m = this.#manager;
    const out: number[] = [];
    for (let level = 1; level < Math.min(m.levels, this.#node.levels); level++) {
      if (m.isMember(key, level)) out.push(level);
    }
    return out;
  }

  #remember(peer: Contact): void {
    const key = peerKey(peer);
    this.#contacts.delete(key);
    this.#contacts.set(key, peer);
    const max = this.#options.manager?.maxPeers ?? CLUSTER_MAX_PEERS;
    while (this.#contacts.size > max) {
      this.#contacts.delete(this.#contacts.keys().next().value as string);
    }
  }
}
