/**
 * A {@link NodeDirectory} copied from another one, for a DNS server that runs away from the fleet
 * state: a node's worker threads (issue 26) answer DNS from a snapshot that the node's main thread
 * (which owns the DSHT and the membership) takes of its own directory and pushes on change.
 *
 * Everything the DNS server asks synchronously — `self`, `isLive`, `get`, `cluster`, `random`,
 * `inRegion`, the level thresholds — is answered from the snapshot, with no round trip. Only
 * `hinted()`, a DSHT walk already asynchronous and cached per /24 by the server's hint walks, goes
 * to the owner through the `hinted` component.
 *
 * ```ts
 * // owner
 * const snap = snapshotDirectory(dshtDirectory);
 * if (!sameSnapshot(snap, last)) port.postMessage({ type: 'directory', snapshot: snap });
 * // worker
 * const directory = new ReplicaNodeDirectory({ hinted: askOwner }, snap);
 * directory.update(next);
 * ```
 */
import { type Random, shuffle, systemRandom } from '@coral/runtime';
import type { HintResult, NodeDirectory, NodeInfo } from '../node-directory.js';

/** The synchronous state of a directory, as plain data (structured-clone and JSON safe). */
export interface DirectorySnapshot {
  self: NodeInfo;
  /** Whether `self` is a live proxy (`isLive(self.id)` of the source). */
  selfLive: boolean;
  /** RTT thresholds of levels 1.. (level 0, Infinity, is implied). */
  levelThresholdsMs: number[];
  /** Every live node the source's `random()` can name, in its order. */
  members: NodeInfo[];
  /** `cluster(level)` of the source, per level (index = level; index 0 is empty). */
  clusters: string[][];
}

/** More nodes than any fleet answer asks for: "all of them" for the source's list calls. */
const ALL = 100_000;

/** The snapshot of `dir` now. */
export function snapshotDirectory(dir: NodeDirectory): DirectorySnapshot {
  const self = dir.self();
  const levels = dir.levelThresholdsMs.length;
  const clusters: string[][] = [[]];
  for (let level = 1; level < levels; level++) {
    clusters.push(dir.cluster(level, ALL).map((n) => n.id));
  }
  return {
    self,
    selfLive: dir.isLive ? dir.isLive(self.id) : true,
    levelThresholdsMs: dir.levelThresholdsMs.slice(1).map(Number),
    members: dir.random(ALL),
    clusters,
  };
}

/**
 * Whether two snapshots name the same nodes with the same facts, in any order: the order of the
 * source's lists (random, most recently heard first) changes without anything to tell a replica.
 */
export function sameSnapshot(a: DirectorySnapshot | undefined, b: DirectorySnapshot): boolean {
  return a !== undefined && canonical(a) === canonical(b);
}

function canonical(s: DirectorySnapshot): string {
  const byId = (x: NodeInfo, y: NodeInfo) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
  return JSON.stringify([
    s.self,
    s.selfLive,
    s.levelThresholdsMs,
    [...s.members].sort(byId),
    s.clusters.map((ids) => [...ids].sort()),
  ]);
}

export interface ReplicaNodeDirectoryComponents {
  /** The source's `hinted()`, asked wherever it lives (the owner thread of a node). */
  hinted: NodeDirectory['hinted'];
  random?: Random;
}

export class ReplicaNodeDirectory implements NodeDirectory {
  readonly #hinted: NodeDirectory['hinted'];
  readonly #random: Random;
  #snap!: DirectorySnapshot;
  #members = new Map<string, NodeInfo>();
  #thresholds: readonly number[] = [Infinity];

  constructor(components: ReplicaNodeDirectoryComponents, snapshot: DirectorySnapshot) {
    this.#hinted = components.hinted;
    this.#random = components.random ?? systemRandom;
    this.update(snapshot);
  }

  /** Replace the state with a newer snapshot. */
  update(snapshot: DirectorySnapshot): void {
    this.#snap = snapshot;
    this.#members = new Map(snapshot.members.map((n) => [n.id, n]));
    this.#thresholds = Object.freeze([Infinity, ...snapshot.levelThresholdsMs]);
  }

  get levelThresholdsMs(): readonly number[] {
    return this.#thresholds;
  }

  self(): NodeInfo {
    return this.#snap.self;
  }

  isLive(id: string): boolean {
    return id === this.#snap.self.id ? this.#snap.selfLive : this.#members.has(id);
  }

  get(id: string): NodeInfo | undefined {
    if (id === this.#snap.self.id) return this.#snap.selfLive ? this.#snap.self : undefined;
    return this.#members.get(id);
  }

  cluster(level: number, count: number): NodeInfo[] {
    const ids = this.#snap.clusters[level] ?? [];
    const out: NodeInfo[] = [];
    for (const id of ids) {
      if (out.length >= count) break;
      const n = this.get(id);
      if (n) out.push(n);
    }
    return out;
  }

  random(count: number): NodeInfo[] {
    return shuffle([...this.#snap.members], this.#random).slice(0, Math.max(0, count));
  }

  inRegion(region: string, count: number): NodeInfo[] {
    const self = this.#snap.self;
    const out = self.region === region && this.#snap.selfLive ? [self] : [];
    for (const n of this.#snap.members) {
      if (n.region === region && n.id !== self.id) out.push(n);
    }
    return out.slice(0, Math.max(0, count));
  }

  hinted(
    target: { ip: string; subnet?: string },
    count: number,
    opts?: { signal?: AbortSignal },
  ): Promise<HintResult> {
    return this.#hinted(target, count, opts);
  }

  /** The source's `near()`, from the replica: hints, then live nodes at random. */
  async near(
    target: { ip: string; subnet?: string },
    count: number,
    opts?: { signal?: AbortSignal },
  ): Promise<NodeInfo[]> {
    const out = new Map<string, NodeInfo>();
    for (const n of (await this.hinted(target, count, opts)).nodes) out.set(n.id, n);
    for (const n of this.random(count)) if (out.size < count) out.set(n.id, n);
    return [...out.values()].slice(0, count);
  }
}
