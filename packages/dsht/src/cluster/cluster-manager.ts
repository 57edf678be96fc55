/**
 * Coral's epidemic clustering (levels 1..n; level 0 is the single global cluster).
 *
 * Every message a node sends carries its cluster per level — `{ level, clusterId, size, age }` —
 * and every round trip gives an RTT sample. From those two streams alone a `ClusterManager`
 * decides, at each `tick()`, which cluster it belongs to at every level:
 *
 * - A cluster C at level i is *acceptable* when the node has robust RTT estimates (median of recent
 *   samples, at least `minPeerSamples` each) to at least `min(minMembersSampled, |known members|)`
 *   of C's members, and at least `joinFraction` (default: all) of them are under the level's
 *   threshold.
 * - The node's own cluster *no longer fits* when more than `leaveFraction` of the members it has
 *   estimates for are above `threshold × (1 + leaveMargin)` — the margin is the hysteresis band
 *   between joining (under T) and leaving (over T·(1+m)).
 * - Among acceptable clusters (and its own, if it still fits) it prefers the clearly larger (more
 *   than `sizeTieFraction` apart), then the older, then the lower id, so clusters merge instead of
 *   splitting the fleet, in the same direction on every node. If its own no longer fits
 *   and nothing else is acceptable it founds a new cluster. Every node starts alone, having founded
 *   its own cluster at each level.
 * - A change happens only when the same decision was reached at `confirmTicks` consecutive ticks and
 *   the node has been in its cluster for at least `minDwellMs` (unless it is alone in it), so
 *   membership does not flap under jitter.
 *
 * Size estimate: a node advertises its *direct count* for its cluster — itself plus the distinct live
 * peers it has heard advertising the same cluster id. Its estimate of any cluster's size is the
 * maximum of its own direct count (for its own cluster) and the direct counts advertised by live
 * members. Advertising direct counts rather than estimates keeps the epidemic free of feedback: a
 * size can never be held up by nodes repeating each other's stale maxima, so it shrinks when members
 * leave (their ads stop, and after `peerTtlMs` they are no longer counted).
 *
 * Age: advertised in whole seconds since the cluster was founded. Receivers convert it to a local
 * founding time (`receivedAt - age`), so clocks never need to agree. A node that joins a cluster
 * takes on the cluster's founding time.
 *
 * Pure and clock-injected: no I/O, nothing scheduled unless `start()` is called.
 */
import type { Clock, Random, TimerHandle } from '@coral/runtime';
import { shuffle } from '@coral/runtime';
import { ClusterError, ERR_BAD_LEVEL, ERR_CLUSTER_OPTIONS } from './errors.js';
import { RttEstimator, type RttEstimatorOptions } from './rtt.js';

/** RTT threshold per level in ms (index = level); level 0 is global (Infinity). */
export const DEFAULT_CLUSTER_THRESHOLDS_MS: readonly number[] = Object.freeze([Infinity, 60, 20]);
/** Hysteresis band: a cluster no longer fits above `threshold × (1 + CLUSTER_LEAVE_MARGIN)`. */
export const CLUSTER_LEAVE_MARGIN = 0.25;
/** Fraction of sampled members that must be under the threshold to join a cluster. */
export const CLUSTER_JOIN_FRACTION = 1;
/** A cluster no longer fits when more than this fraction of sampled members are over T·(1+m). */
export const CLUSTER_LEAVE_FRACTION = 0.5;
/** Members of a cluster to have RTT estimates for before judging it (fewer if fewer are known). */
export const CLUSTER_MIN_MEMBERS_SAMPLED = 3;
/** RTT samples a peer's estimate needs before it counts in a decision. */
export const CLUSTER_MIN_PEER_SAMPLES = 3;
/** Consecutive ticks a decision must hold before it is carried out. */
export const CLUSTER_CONFIRM_TICKS = 3;
/** Minimum time in a cluster before leaving it for another (waived when alone in it). */
export const CLUSTER_MIN_DWELL_MS = 60_000;
/** A peer not heard from for this long no longer counts as a member (ms). */
export const CLUSTER_PEER_TTL_MS = 10 * 60_000;
/** Peers remembered at most (least recently heard dropped first). */
export const CLUSTER_MAX_PEERS = 4_096;
/** Bytes of a random cluster id. */
export const CLUSTER_ID_BYTES = 8;
/**
 * Sizes count as equal unless they differ by more than this fraction of the larger (and by more
 * than 1); then the older cluster wins. Size estimates differ a little from node to node, and
 * without this band two clusters of about the same size would trade members instead of merging.
 */
export const CLUSTER_SIZE_TIE_FRACTION = 0.5;
/** Founding times closer than this count as equally old (then the lower id wins). */
export const CLUSTER_AGE_TIE_MS = 2_000;
/** Interval of the self-scheduled tick after `start()`. */
export const CLUSTER_TICK_MS = 5_000;
/** A member's estimate older than this makes it a probe target again (ms). */
export const CLUSTER_REPROBE_MS = 120_000;
/** Largest advertised size accepted (larger entries are dropped as malformed). */
export const CLUSTER_MAX_ADVERTISED_SIZE = 2 ** 31 - 1;
/** Largest advertised age accepted, in seconds (about 100 years). */
export const CLUSTER_MAX_ADVERTISED_AGE_S = 100 * 365 * 86_400;

/**
 * One level of a node's cluster membership, as carried in every message. Structurally the same as
 * the core's `ClusterAdvert` (contact.ts), so the two are interchangeable.
 */
export interface ClusterAd {
  /** 0 global, 1, 2 (more local). */
  level: number;
  /** Cluster id (random bytes; all zeros for level 0). */
  clusterId: Uint8Array;
  /** The sender's direct count of the cluster's members (itself included). */
  size: number;
  /** Whole seconds since the cluster was founded. */
  age: number;
}

/** Emitted when the node's cluster at a level changes; the core rebuilds that level's table. */
export interface ClusterChange {
  level: number;
  /** Hex id of the cluster left. */
  oldClusterId: string;
  /** Hex id of the cluster joined or founded. */
  newClusterId: string;
  /** `better`: moved to a larger/older acceptable cluster; `misfit`: the old one no longer fit. */
  reason: 'better' | 'misfit';
  /** True when the node founded `newClusterId` itself (nothing else was acceptable). */
  founded: boolean;
}

export interface ClusterManagerComponents {
  clock: Clock;
  /** Draws cluster ids and probe order. */
  random: Random;
  /** Share an estimator with the RPC layer; by default the manager builds its own. */
  rtt?: RttEstimator;
}

export interface ClusterManagerOptions {
  /** RTT threshold per level, ms; [0] must be Infinity (default {@link DEFAULT_CLUSTER_THRESHOLDS_MS}). */
  thresholdsMs?: readonly number[];
  /** Default {@link CLUSTER_LEAVE_MARGIN}. */
  leaveMargin?: number;
  /** Default {@link CLUSTER_JOIN_FRACTION}. */
  joinFraction?: number;
  /** Default {@link CLUSTER_LEAVE_FRACTION}. */
  leaveFraction?: number;
  /** Default {@link CLUSTER_MIN_MEMBERS_SAMPLED}. */
  minMembersSampled?: number;
  /** Default {@link CLUSTER_MIN_PEER_SAMPLES}. */
  minPeerSamples?: number;
  /** Default {@link CLUSTER_CONFIRM_TICKS}. */
  confirmTicks?: number;
  /** Default {@link CLUSTER_MIN_DWELL_MS}. */
  minDwellMs?: number;
  /** Default {@link CLUSTER_PEER_TTL_MS}. */
  peerTtlMs?: number;
  /** Default {@link CLUSTER_MAX_PEERS}. */
  maxPeers?: number;
  /** Default {@link CLUSTER_ID_BYTES}. */
  clusterIdBytes?: number;
  /** Default {@link CLUSTER_AGE_TIE_MS}. */
  ageTieMs?: number;
  /** Default {@link CLUSTER_SIZE_TIE_FRACTION}. */
  sizeTieFraction?: number;
  /** Default {@link CLUSTER_TICK_MS}. */
  tickMs?: number;
  /** Default {@link CLUSTER_REPROBE_MS}. */
  reprobeMs?: number;
  /** This node's own peer id: advertisements and samples claiming it are ignored. */
  selfId?: string;
  /** Options of the RTT estimator the manager builds (ignored when one is injected). */
  rtt?: RttEstimatorOptions;
}

/** Per-level state, as shown by `snapshot()`. */
export interface ClusterLevelSnapshot {
  level: number;
  thresholdMs: number;
  clusterId: string;
  size: number;
  ageMs: number;
  /** Live peers believed to be in this cluster. */
  members: number;
  joinedAt: number;
  /** Decision waiting for confirmation, if any (`''` as target = found a new cluster). */
  pending?: { target: string; ticks: number };
}

export interface ClusterSnapshot {
  levels: ClusterLevelSnapshot[];
  /** Live peers (heard within `peerTtlMs`). */
  peers: number;
  /** Peers with an RTT estimate. */
  rttPeers: number;
  /** Membership changes since construction. */
  changes: number;
  /** Advertisement entries dropped as malformed. */
  rejectedAds: number;
}

interface PeerAd {
  clusterId: string;
  size: number;
  /** Local clock time at which the cluster was founded, per this ad. */
  createdAt: number;
}

interface PeerInfo {
  lastHeard: number;
  /** Index = level. */
  ads: (PeerAd | undefined)[];
}

interface LevelState {
  clusterId: string;
  /** `clusterId` as bytes, for advertisements. */
  idBytes: Uint8Array;
  createdAt: number;
  joinedAt: number;
  pending?: { target: string; ticks: number };
}

interface Fitness {
  sampled: number;
  under: number;
  over: number;
}

interface Rank {
  id: string;
  size: number;
  createdAt: number;
}

/** Target meaning "found a new cluster". */
const FOUND = '';
const NONE: ReadonlySet<string> = new Set();

type ChangeListener = (change: ClusterChange) => void;

export class ClusterManager {
  readonly rtt: RttEstimator;
  readonly thresholdsMs: readonly number[];
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #o: Required<Omit<ClusterManagerOptions, 'thresholdsMs' | 'selfId' | 'rtt'>>;
  readonly #selfId: string | undefined;
  readonly #levels: LevelState[];
  /** Insertion order = least recently heard first. */
  readonly #peers = new Map<string, PeerInfo>();
  /** Per level: known peers grouped by the cluster they last advertised (index 0 unused). */
  readonly #groupsByLevel: Map<string, Set<string>>[];
  #lastRttPrune = -Infinity;
  readonly #listeners = new Set<ChangeListener>();
  readonly #zeroId: Uint8Array;
  #changes = 0;
  #rejectedAds = 0;
  #timer: TimerHandle | undefined;

  constructor(components: ClusterManagerComponents, options: ClusterManagerOptions = {}) {
    this.#clock = components.clock;
    this.#random = components.random;
    this.rtt = components.rtt ?? new RttEstimator({ clock: components.clock }, options.rtt);
    this.thresholdsMs = Object.freeze([...(options.thresholdsMs ?? DEFAULT_CLUSTER_THRESHOLDS_MS)]);
    this.#selfId = options.selfId;
    this.#o = {
      leaveMargin: options.leaveMargin ?? CLUSTER_LEAVE_MARGIN,
      joinFraction: options.joinFraction ?? CLUSTER_JOIN_FRACTION,
      leaveFraction: options.leaveFraction ?? CLUSTER_LEAVE_FRACTION,
      minMembersSampled: options.minMembersSampled ?? CLUSTER_MIN_MEMBERS_SAMPLED,
      minPeerSamples: options.minPeerSamples ?? CLUSTER_MIN_PEER_SAMPLES,
      confirmTicks: options.confirmTicks ?? CLUSTER_CONFIRM_TICKS,
      minDwellMs: options.minDwellMs ?? CLUSTER_MIN_DWELL_MS,
      peerTtlMs: options.peerTtlMs ?? CLUSTER_PEER_TTL_MS,
      maxPeers: options.maxPeers ?? CLUSTER_MAX_PEERS,
      clusterIdBytes: options.clusterIdBytes ?? CLUSTER_ID_BYTES,
      ageTieMs: options.ageTieMs ?? CLUSTER_AGE_TIE_MS,
      sizeTieFraction: options.sizeTieFraction ?? CLUSTER_SIZE_TIE_FRACTION,
      tickMs: options.tickMs ?? CLUSTER_TICK_MS,
      reprobeMs: options.reprobeMs ?? CLUSTER_REPROBE_MS,
    };
    validateOptions(this.thresholdsMs, this.#o);
    this.#zeroId = new Uint8Array(this.#o.clusterIdBytes);
    const now = this.#clock.now();
    this.#levels = this.thresholdsMs.map((_, level) => {
      const clusterId = level === 0 ? toHex(this.#zeroId) : this.#newId();
      return { clusterId, idBytes: fromHex(clusterId), createdAt: now, joinedAt: now };
    });
    this.#groupsByLevel = this.#levels.map(() => new Map<string, Set<string>>());
  }

  /** Number of levels (including level 0). */
  get levels(): number {
    return this.#levels.length;
  }

  // ---- inputs --------------------------------------------------------------------------------

  /** A round trip to `peerId` took `rttMs`. Throws `DSHT_ERR_BAD_RTT` on a bad value. */
  onRttSample(peerId: string, rttMs: number): void {
    if (peerId === this.#selfId) return;
    this.rtt.add(peerId, rttMs);
    this.#heard(peerId);
  }

  /**
   * `peerId` sent a message carrying `ads`. Malformed entries are dropped and counted (see
   * `snapshot().rejectedAds`); entries for levels this node does not run are ignored. Returns the
   * number of entries accepted.
   */
  onAdvertisement(peerId: string, ads: readonly ClusterAd[]): number {
    if (typeof peerId !== 'string' || peerId.length === 0 || peerId === this.#selfId) return 0;
    if (!Array.isArray(ads)) {
      this.#rejectedAds++;
      return 0;
    }
    const now = this.#clock.now();
    const info = this.#heard(peerId);
    let accepted = 0;
    for (const ad of ads as unknown[]) {
      if (!isValidAd(ad)) {
        this.#rejectedAds++;
        continue;
      }
      if (ad.level >= this.#levels.length) continue;
      const entry: PeerAd = {
        clusterId: toHex(ad.clusterId),
        size: ad.size,
        createdAt: now - ad.age * 1000,
      };
      const before = info.ads[ad.level]?.clusterId;
      info.ads[ad.level] = entry;
      if (ad.level === 0) {
        accepted++;
        continue;
      }
      if (before !== entry.clusterId) {
        if (before !== undefined) this.#ungroup(ad.level, before, peerId);
        const groups = this.#groupsByLevel[ad.level]!;
        let g = groups.get(entry.clusterId);
        if (!g) groups.set(entry.clusterId, (g = new Set()));
        g.add(peerId);
      }
      // A member that knows an older founding time of my cluster: take it on.
      const mine = this.#levels[ad.level]!;
      if (entry.clusterId === mine.clusterId && entry.createdAt < mine.createdAt) {
        mine.createdAt = entry.createdAt;
      }
      accepted++;
    }
    return accepted;
  }

  /** `peerId` is gone (failed RPCs, evicted): forget its membership and RTT. */
  onPeerGone(peerId: string): void {
    this.#drop(peerId);
    this.rtt.forget(peerId);
  }

  /** Subscribe to membership changes; returns an unsubscribe function. */
  on(event: 'change', listener: ChangeListener): () => void {
    if (event !== 'change')
      throw new ClusterError(ERR_CLUSTER_OPTIONS, `unknown event ${String(event)}`);
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Re-evaluate every level (1..n) and carry out confirmed decisions. Returns the changes made
   * (also emitted as `change` events, after the state is updated).
   */
  tick(): ClusterChange[] {
    this.#prune();
    const changes: ClusterChange[] = [];
    for (let level = 1; level < this.#levels.length; level++) {
      const change = this.#tickLevel(level);
      if (change) changes.push(change);
    }
    for (const change of changes) for (const l of [...this.#listeners]) l(change);
    return changes;
  }

  /** Call `tick()` every `tickMs` on the injected clock until `stop()`. */
  start(): void {
    if (this.#timer) return;
    const loop = (): void => {
      this.#timer = this.#clock.setTimeout(() => {
        this.tick();
        if (this.#timer) loop();
      }, this.#o.tickMs);
    };
    loop();
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  // ---- outputs -------------------------------------------------------------------------------

  /** This node's membership per level, to put in every outgoing message. */
  advertisement(): ClusterAd[] {
    const now = this.#clock.now();
    return this.#levels.map((s, level) => ({
      level,
      clusterId: s.idBytes,
      size: this.#memberCount(level) + 1,
      age: Math.max(0, Math.floor((now - s.createdAt) / 1000)),
    }));
  }

  /** Hex id of this node's cluster at `level`. */
  clusterOf(level: number): string {
    return this.#level(level).clusterId;
  }

  /** Live peers believed to be in this node's cluster at `level` (all live peers at level 0). */
  members(level: number): string[] {
    this.#level(level);
    return this.#members(level);
  }

  /** Whether `peerId` last advertised this node's cluster at `level` (and is live). */
  isMember(peerId: string, level: number): boolean {
    const s = this.#level(level);
    const info = this.#peers.get(peerId);
    if (!info || !this.#live(info)) return false;
    return level === 0 || info.ads[level]?.clusterId === s.clusterId;
  }

  /** Hex id of the cluster `peerId` last advertised at `level`, if known. */
  peerCluster(peerId: string, level: number): string | undefined {
    this.#level(level);
    return this.#peers.get(peerId)?.ads[level]?.clusterId;
  }

  /** Estimated size of this node's cluster at `level` (see the module comment). */
  sizeEstimate(level: number): number {
    const s = this.#level(level);
    return this.#rankOf(level, s.clusterId, this.#groups(level).get(s.clusterId) ?? NONE).size;
  }

  /**
   * Peers worth a PING now so decisions have data. Only clusters that matter are considered: its
   * own, and others that rank above it (or any, while its own no longer fits). For those it first
   * wants members it has too few estimates for (up to `minMembersSampled` per cluster), then, for
   * its own cluster and for clusters that look near (a sampled member under T·(1+m)), up to
   * `minMembersSampled` members whose newest sample is older than `reprobeMs`. Far clusters (a
   * member whose fastest sample is over T·(1+m)) and smaller ones cost no probes.
   */
  probeTargets(max: number): string[] {
    const now = this.#clock.now();
    const urgent = new Set<string>();
    const stale = new Set<string>();
    for (let level = 1; level < this.#levels.length; level++) {
      const s = this.#levels[level]!;
      const nearBelow = this.thresholdsMs[level]! * (1 + this.#o.leaveMargin);
      const groups = this.#groups(level);
      const ownMembers = groups.get(s.clusterId) ?? NONE;
      const ownRank = this.#rankOf(level, s.clusterId, ownMembers);
      const own = this.#fitness(ownMembers, this.thresholdsMs[level]!);
      const misfit = own.sampled > 0 && own.over / own.sampled > this.#o.leaveFraction;
      for (const [id, members] of groups) {
        const isOwn = id === s.clusterId;
        if (!isOwn && !misfit && !this.#better(this.#rankOf(level, id, members), ownRank)) continue;
        // A member whose fastest round trip is already far over the threshold rules its cluster
        // out (the join needs every sampled member under it): no need to measure the others.
        if (!isOwn && this.#anyFar(members, nearBelow)) continue;
        let sampled = 0;
        let near = false;
        const unsampled: string[] = [];
        const staleHere: string[] = [];
        for (const p of members) {
          const median = this.rtt.median(p, this.#o.minPeerSamples);
          if (median !== undefined) {
            sampled++;
            if (median <= nearBelow) near = true;
            const last = this.rtt.lastSampleAt(p);
            if (last === undefined || now - last >= this.#o.reprobeMs) staleHere.push(p);
          } else {
            unsampled.push(p);
          }
        }
        const need = Math.min(this.#o.minMembersSampled, members.size) - sampled;
        for (const p of shuffle(unsampled, this.#random).slice(0, Math.max(0, need))) urgent.add(p);
        if (!isOwn && !near) continue;
        for (const p of shuffle(staleHere, this.#random).slice(0, this.#o.minMembersSampled)) {
          stale.add(p);
        }
      }
    }
    for (const p of urgent) stale.delete(p);
    const out = [...shuffle([...urgent], this.#random), ...shuffle([...stale], this.#random)];
    return out.slice(0, Math.max(0, max));
  }

  /** State for admin pages and tests. */
  snapshot(): ClusterSnapshot {
    const now = this.#clock.now();
    let live = 0;
    for (const info of this.#peers.values()) if (this.#live(info)) live++;
    return {
      levels: this.#levels.map((s, level) => {
        const members = this.#members(level);
        const snap: ClusterLevelSnapshot = {
          level,
          thresholdMs: this.thresholdsMs[level]!,
          clusterId: s.clusterId,
          size: level === 0 ? members.length + 1 : this.sizeEstimate(level),
          ageMs: now - s.createdAt,
          members: members.length,
          joinedAt: s.joinedAt,
        };
        if (s.pending) snap.pending = { ...s.pending };
        return snap;
      }),
      peers: live,
      rttPeers: this.rtt.peers().length,
      changes: this.#changes,
      rejectedAds: this.#rejectedAds,
    };
  }

  // ---- decisions -----------------------------------------------------------------------------

  #tickLevel(level: number): ClusterChange | undefined {
    const s = this.#levels[level]!;
    const threshold = this.thresholdsMs[level]!;
    const groups = this.#groups(level);
    const ownMembers = groups.get(s.clusterId) ?? NONE;
    const own = this.#fitness(ownMembers, threshold);
    const misfit = own.sampled > 0 && own.over / own.sampled > this.#o.leaveFraction;
    const ownRank = this.#rankOf(level, s.clusterId, ownMembers);

    let best: Rank | undefined;
    for (const [id, members] of groups) {
      if (id === s.clusterId) continue;
      // Rank first (cheap): a cluster that would not win is not worth judging.
      const rank = this.#rankOf(level, id, members);
      if (!misfit && !this.#better(rank, ownRank)) continue;
      if (best && !this.#better(rank, best)) continue;
      const f = this.#fitness(members, threshold);
      const need = Math.min(this.#o.minMembersSampled, members.size);
      if (f.sampled === 0 || f.sampled < need) continue;
      if (f.under < this.#o.joinFraction * f.sampled) continue;
      best = rank;
    }

    let target: string;
    if (!misfit && (!best || !this.#better(best, ownRank))) target = s.clusterId;
    else if (best) target = best.id;
    else target = FOUND;

    if (target === s.clusterId) {
      delete s.pending;
      return undefined;
    }
    if (s.pending?.target === target) s.pending.ticks++;
    else s.pending = { target, ticks: 1 };
    if (s.pending.ticks < this.#o.confirmTicks) return undefined;
    const now = this.#clock.now();
    const alone = ownRank.size <= 1;
    if (!alone && now - s.joinedAt < this.#o.minDwellMs) return undefined;

    const old = s.clusterId;
    delete s.pending;
    s.joinedAt = now;
    if (target === FOUND) {
      s.clusterId = this.#newId();
      s.createdAt = now;
    } else {
      s.clusterId = target;
      s.createdAt = best!.createdAt;
    }
    s.idBytes = fromHex(s.clusterId);
    this.#changes++;
    return {
      level,
      oldClusterId: old,
      newClusterId: s.clusterId,
      reason: misfit ? 'misfit' : 'better',
      founded: target === FOUND,
    };
  }

  #anyFar(members: ReadonlySet<string>, above: number): boolean {
    for (const p of members) {
      const min = this.rtt.minimum(p);
      if (min !== undefined && min > above) return true;
    }
    return false;
  }

  /** RTT fitness of a set of members against a level threshold. */
  #fitness(members: ReadonlySet<string>, threshold: number): Fitness {
    const f: Fitness = { sampled: 0, under: 0, over: 0 };
    const leaveAbove = threshold * (1 + this.#o.leaveMargin);
    for (const p of members) {
      const m = this.rtt.median(p, this.#o.minPeerSamples);
      if (m === undefined) continue;
      f.sampled++;
      if (m < threshold) f.under++;
      else if (m > leaveAbove) f.over++;
    }
    return f;
  }

  /** Size and founding time of cluster `id` as this node sees it. */
  #rankOf(level: number, id: string, members: ReadonlySet<string>): Rank {
    const s = this.#levels[level]!;
    const mine = id === s.clusterId;
    let size = members.size + (mine ? 1 : 0);
    let createdAt = mine ? s.createdAt : Infinity;
    for (const p of members) {
      const ad = this.#peers.get(p)?.ads[level];
      if (!ad) continue;
      if (ad.size > size) size = ad.size;
      if (ad.createdAt < createdAt) createdAt = ad.createdAt;
    }
    return { id, size, createdAt };
  }

  /** Whether cluster `a` is preferred to `b`: clearly larger, then older, then the lower id. */
  #better(a: Rank, b: Rank): boolean {
    const gap = Math.max(1, this.#o.sizeTieFraction * Math.max(a.size, b.size));
    if (Math.abs(a.size - b.size) > gap) return a.size > b.size;
    if (Math.abs(a.createdAt - b.createdAt) > this.#o.ageTieMs) return a.createdAt < b.createdAt;
    return a.id < b.id;
  }

  // ---- bookkeeping ---------------------------------------------------------------------------

  /** Known peers grouped by the cluster they advertise at `level` (silent peers pruned at ticks). */
  #groups(level: number): ReadonlyMap<string, ReadonlySet<string>> {
    return this.#groupsByLevel[level]!;
  }

  /** Known members (pruned of silent peers at every tick). */
  #members(level: number): string[] {
    if (level === 0) return [...this.#peers.keys()];
    return [...(this.#groupsByLevel[level]!.get(this.#levels[level]!.clusterId) ?? NONE)];
  }

  #memberCount(level: number): number {
    if (level === 0) return this.#peers.size;
    return this.#groupsByLevel[level]!.get(this.#levels[level]!.clusterId)?.size ?? 0;
  }

  #ungroup(level: number, clusterId: string, peerId: string): void {
    const groups = this.#groupsByLevel[level]!;
    const g = groups.get(clusterId);
    if (!g) return;
    g.delete(peerId);
    if (g.size === 0) groups.delete(clusterId);
  }

  #drop(peerId: string): void {
    const info = this.#peers.get(peerId);
    if (!info) return;
    this.#peers.delete(peerId);
    info.ads.forEach((ad, level) => {
      if (ad && level > 0) this.#ungroup(level, ad.clusterId, peerId);
    });
  }

  #heard(peerId: string): PeerInfo {
    let info = this.#peers.get(peerId);
    if (info) this.#peers.delete(peerId);
    else info = { lastHeard: 0, ads: [] };
    info.lastHeard = this.#clock.now();
    this.#peers.set(peerId, info);
    while (this.#peers.size > this.#o.maxPeers) {
      this.#drop(this.#peers.keys().next().value as string);
    }
    return info;
  }

  #live(info: PeerInfo): boolean {
    return this.#clock.now() - info.lastHeard <= this.#o.peerTtlMs;
  }

  #prune(): void {
    for (const [peerId, info] of this.#peers) {
      if (this.#live(info)) break; // least recently heard first: the rest are live too
      this.#drop(peerId);
    }
    // Aged-out samples are ignored anyway; dropping them is housekeeping, once a minute is enough.
    const now = this.#clock.now();
    if (now - this.#lastRttPrune >= 60_000) {
      this.#lastRttPrune = now;
      this.rtt.prune();
    }
  }

  #level(level: number): LevelState {
    const s = Number.isInteger(level) ? this.#levels[level] : undefined;
    if (!s) {
      throw new ClusterError(
        ERR_BAD_LEVEL,
        `level must be an integer in 0..${this.#levels.length - 1}, got ${level}`,
      );
    }
    return s;
  }

  #newId(): string {
    const bytes = this.#random.bytes(new Uint8Array(this.#o.clusterIdBytes));
    // All zeros is reserved for level 0.
    if (bytes.every((b) => b === 0)) bytes[0] = 1;
    return toHex(bytes);
  }
}

function validateOptions(
  thresholds: readonly number[],
  o: Required<Omit<ClusterManagerOptions, 'thresholdsMs' | 'selfId' | 'rtt'>>,
): void {
  const problems: string[] = [];
  if (thresholds.length < 1 || thresholds[0] !== Infinity) {
    problems.push('thresholdsMs[0] must be Infinity (level 0 is the global cluster)');
  }
  for (let i = 1; i < thresholds.length; i++) {
    const t = thresholds[i]!;
    if (!(typeof t === 'number' && Number.isFinite(t) && t > 0)) {
      problems.push(`thresholdsMs[${i}] must be a finite number > 0, got ${String(t)}`);
    } else if (!(t < thresholds[i - 1]!)) {
      problems.push(`thresholdsMs must decrease with the level (thresholdsMs[${i}] = ${t})`);
    }
  }
  const check = (name: string, ok: boolean, v: number): void => {
    if (!ok) problems.push(`${name} is out of range: ${String(v)}`);
  };
  check('leaveMargin', o.leaveMargin >= 0 && Number.isFinite(o.leaveMargin), o.leaveMargin);
  check('joinFraction', o.joinFraction > 0 && o.joinFraction <= 1, o.joinFraction);
  check('leaveFraction', o.leaveFraction >= 0 && o.leaveFraction < 1, o.leaveFraction);
  check(
    'minMembersSampled',
    Number.isInteger(o.minMembersSampled) && o.minMembersSampled >= 1,
    o.minMembersSampled,
  );
  check(
    'minPeerSamples',
    Number.isInteger(o.minPeerSamples) && o.minPeerSamples >= 1,
    o.minPeerSamples,
  );
  check('confirmTicks', Number.isInteger(o.confirmTicks) && o.confirmTicks >= 1, o.confirmTicks);
  check('minDwellMs', o.minDwellMs >= 0, o.minDwellMs);
  check('peerTtlMs', o.peerTtlMs > 0, o.peerTtlMs);
  check('maxPeers', Number.isInteger(o.maxPeers) && o.maxPeers >= 1, o.maxPeers);
  check(
    'clusterIdBytes',
    Number.isInteger(o.clusterIdBytes) && o.clusterIdBytes >= 4 && o.clusterIdBytes <= 32,
    o.clusterIdBytes,
  );
  check('ageTieMs', o.ageTieMs >= 0, o.ageTieMs);
  check('sizeTieFraction', o.sizeTieFraction >= 0 && o.sizeTieFraction < 1, o.sizeTieFraction);
  check('tickMs', o.tickMs > 0, o.tickMs);
  check('reprobeMs', o.reprobeMs > 0, o.reprobeMs);
  if (problems.length > 0) {
    throw new ClusterError(ERR_CLUSTER_OPTIONS, `invalid cluster options: ${problems.join('; ')}`);
  }
}

function isValidAd(ad: unknown): ad is ClusterAd {
  if (typeof ad !== 'object' || ad === null) return false;
  const a = ad as Record<string, unknown>;
  return (
    typeof a.level === 'number' &&
    Number.isInteger(a.level) &&
    a.level >= 0 &&
    a.clusterId instanceof Uint8Array &&
    a.clusterId.length >= 1 &&
    a.clusterId.length <= 32 &&
    typeof a.size === 'number' &&
    Number.isInteger(a.size) &&
    a.size >= 1 &&
    a.size <= CLUSTER_MAX_ADVERTISED_SIZE &&
    typeof a.age === 'number' &&
    Number.isFinite(a.age) &&
    a.age >= 0 &&
    a.age <= CLUSTER_MAX_ADVERTISED_AGE_S
  );
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** Lower-case hex of a byte array. */
export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += HEX[b]!;
  return s;
}

/** Bytes of an even-length hex string (as produced by {@link toHex}). */
export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}
