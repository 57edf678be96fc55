/**
 * A gossip loop among ClusterManagers over a simulated topology, without the DSHT core: every round
 * each node exchanges one request/response with a few random peers and with the peers its manager
 * asks to probe. A request carries the sender's advertisement; the response carries the receiver's
 * advertisement and gives the sender an RTT sample (base RTT plus the topology's jitter, plus any
 * distortion a test applies). Then time moves on by one round and every manager ticks.
 */
import { ManualClock, SeededRandom, shuffle } from '@coral/testkit';
import {
  type ClusterChange,
  ClusterManager,
  type ClusterManagerOptions,
} from '@coral/dsht/internal';
import type { Topology } from '../../../src/index.js';

export interface SimOptions {
  seed: number;
  /** Random peers contacted per node per round. */
  fanout?: number;
  /** Probe targets contacted per node per round. */
  probes?: number;
  roundMs?: number;
  manager?: ClusterManagerOptions;
}

export interface LoggedChange extends ClusterChange {
  node: string;
  at: number;
}

export class ClusterSim {
  readonly clock = new ManualClock();
  readonly rng: SeededRandom;
  readonly managers = new Map<string, ClusterManager>();
  readonly changes: LoggedChange[] = [];
  readonly ips: string[];
  /** Distorts a sampled RTT (a moved node, links that got faster); identity by default. */
  distort: (a: string, b: string, rttMs: number) => number = (_a, _b, rtt) => rtt;
  readonly #fanout: number;
  readonly #probes: number;
  readonly #roundMs: number;

  constructor(
    readonly topo: Topology,
    options: SimOptions,
  ) {
    this.rng = new SeededRandom(options.seed);
    this.#fanout = options.fanout ?? 3;
    this.#probes = options.probes ?? 4;
    this.#roundMs = options.roundMs ?? 5_000;
    this.ips = topo.nodes.map((n) => n.ip);
    for (const ip of this.ips) {
      const m = new ClusterManager(
        { clock: this.clock, random: this.rng.fork() },
        { ...options.manager, selfId: ip },
      );
      m.on('change', (c) => this.changes.push({ ...c, node: ip, at: this.clock.now() }));
      this.managers.set(ip, m);
    }
  }

  manager(ip: string): ClusterManager {
    const m = this.managers.get(ip);
    if (!m) throw new Error(`no node ${ip}`);
    return m;
  }

  /** One request from `a` to `b` and its response. */
  exchange(a: string, b: string): void {
    const ma = this.manager(a);
    const mb = this.manager(b);
    mb.onAdvertisement(a, ma.advertisement());
    const rtt = this.distort(a, b, this.topo.sampleRttMs(a, b));
    ma.onRttSample(b, rtt);
    ma.onAdvertisement(b, mb.advertisement());
  }

  async round(): Promise<void> {
    for (const a of shuffle([...this.ips], this.rng)) {
      const targets = new Set<string>(this.manager(a).probeTargets(this.#probes));
      for (let i = 0; i < this.#fanout; i++) {
        const b = this.ips[this.rng.int(this.ips.length)]!;
        if (b !== a) targets.add(b);
      }
      for (const b of targets) this.exchange(a, b);
    }
    await this.clock.advance(this.#roundMs);
    for (const ip of this.ips) this.manager(ip).tick();
  }

  /** Run rounds for `ms` of simulated time, or until `until()` holds; returns the time it took. */
  async run(ms: number, until?: () => boolean): Promise<number> {
    const start = this.clock.now();
    while (this.clock.now() - start < ms) {
      await this.round();
      if (until?.()) break;
    }
    return this.clock.now() - start;
  }

  /** ip → cluster id per level. */
  assignment(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [ip, m] of this.managers) {
      out.set(
        ip,
        Array.from({ length: m.levels }, (_, level) => m.clusterOf(level)),
      );
    }
    return out;
  }

  /**
   * Whether the clusters at `level` are exactly the groups given by `label` (same cluster iff same
   * label), e.g. metro for level 2 and region for level 1.
   */
  matches(level: number, label: (ip: string) => string): boolean {
    const clusterOfLabel = new Map<string, string>();
    const labelOfCluster = new Map<string, string>();
    for (const ip of this.ips) {
      const c = this.manager(ip).clusterOf(level);
      const l = label(ip);
      if ((clusterOfLabel.get(l) ?? c) !== c || (labelOfCluster.get(c) ?? l) !== l) return false;
      clusterOfLabel.set(l, c);
      labelOfCluster.set(c, l);
    }
    return true;
  }
}
