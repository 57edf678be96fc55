/**
 * `FleetDriver`: what a benchmark asks of a simulated fleet — run operations, move the clock,
 * read figures back — whether the fleet is one in-process `SimFleet` (`LocalFleetDriver`) or a
 * `ParallelFleet` of worker threads.
 */
import type { SimStats } from '../network/sim-network.js';
import { SimFleet, type SimFleetOptions } from '../fleet/fleet.js';
import {
  addStats,
  zeroStats,
  closestOf,
  slotCounters,
  startOp,
  trustPart,
  type FleetOp,
  type OpResult,
  type TrustPart,
} from './ops.js';

export interface FleetDriver {
  /** Nodes in the fleet. */
  readonly size: number;
  /** Worker threads (1: the in-process fleet). */
  readonly workers: number;
  /** Start every node: the first alone, then bootstrapped from it (SimFleet.start's batches). */
  start(opts?: { onProgress?: (joined: number) => void }): Promise<void>;
  /** Start every op at the fleet's time; drive the clock until all have settled. */
  run(ops: readonly FleetOp[]): Promise<OpResult[]>;
  /** Drive the clock to `at` (nothing when it is already there). */
  advanceTo(at: number): Promise<void>;
  /** The fleet's simulated time. */
  now(): number;
  /** Routing table size at `level` of every node (in no particular order). */
  tableSizes(level: number): Promise<number[]>;
  /** Index of the node whose id is closest to `key`. */
  closest(key: Uint8Array): Promise<number>;
  /** Node `node`'s store counters for `slot` (`level:keyhex`). */
  slotCounters(node: number, slot: string): Promise<{ accepted: number; requests: number }>;
  /** Nodes holding a local copy of `key`. */
  holders(key: Uint8Array): Promise<number>;
  trust(): Promise<TrustPart>;
  stats(): Promise<SimStats>;
  close(): Promise<void>;
}

/** The in-process fleet behind the driver interface: the single-threaded run, event for event. */
export class LocalFleetDriver implements FleetDriver {
  readonly fleet: SimFleet;
  readonly workers = 1;

  constructor(options: SimFleetOptions) {
    this.fleet = new SimFleet(options);
    // SimFleet builds its network lossless; the rate given here holds from the join on.
    this.fleet.setLoss(options.lossRate ?? 0);
  }

  get size(): number {
    return this.fleet.nodes.length;
  }

  start(opts: { onProgress?: (joined: number) => void } = {}): Promise<void> {
    return this.fleet.start(opts);
  }

  run(ops: readonly FleetOp[]): Promise<OpResult[]> {
    const { nodes, clock } = this.fleet;
    return this.fleet.run(Promise.all(ops.map((op) => startOp(nodes[op.node]!, op, clock))));
  }

  async advanceTo(at: number): Promise<void> {
    const left = at - this.fleet.clock.now();
    if (left > 0)
      await this.fleet.run(new Promise<void>((r) => this.fleet.clock.setTimeout(() => r(), left)));
  }

  now(): number {
    return this.fleet.clock.now();
  }

  async tableSizes(level: number): Promise<number[]> {
    return this.fleet.nodes.map((n) => n.table(level)?.size ?? 0);
  }

  async closest(key: Uint8Array): Promise<number> {
    const best = closestOf(
      this.fleet.nodes.map((n, i) => [i, n]),
      key,
    );
    if (!best) throw new RangeError('empty fleet');
    return best.index;
  }

  async slotCounters(node: number, slot: string): Promise<{ accepted: number; requests: number }> {
    return slotCounters(this.fleet.nodes[node]!, slot);
  }

  async holders(key: Uint8Array): Promise<number> {
    return this.fleet.nodes.filter((n) => n.localGet(key).length > 0).length;
  }

  async trust(): Promise<TrustPart> {
    return trustPart(this.fleet.nodes);
  }

  async stats(): Promise<SimStats> {
    return addStats(zeroStats(), this.fleet.network.stats);
  }

  async close(): Promise<void> {}
}
