/**
 * A fleet of DSHT nodes on a SimNetwork with a SimClock, for tests and the simulation benchmark.
 * `run(promise)` drives simulated time until the promise settles, so a thousand concurrent lookups
 * complete deterministically with no real waiting.
 */
import { Keyring } from '@coral/keyring';
import { SeededRandom } from '@coral/runtime';
import { Dsht, type ClusterPolicy, type DshtOptions } from '@coral/dsht';
import { SimClock } from '../clock/sim-clock.js';
import { SimNetwork, type LatencyModel } from '../network/sim-network.js';

export interface SimFleetOptions {
  nodes: number;
  seed?: number;
  lossRate?: number;
  latencyMs?: LatencyModel;
  /** IP of node i. Default 10.a.b.c counting from 10.0.0.1. */
  ipOf?: (i: number) => string;
  /** UDP port of every node. Default 4000. */
  port?: number;
  /**
   * Options of every node. Failure detection (`swim`) is off unless set here: the simulation
   * benchmark measures the DSHT's own traffic (probes would add about 2 datagrams per node per
   * probe interval of simulated time); tests of failure detection pass `swim: {}`.
   */
  dsht?: DshtOptions;
  /**
   * A fixed cluster policy per node. Nodes that form their clusters take `dsht.clustering`
   * instead (each then owns its binding: `fleet.nodes[i].clustering`).
   */
  clusterFor?: (i: number) => ClusterPolicy | undefined;
  /** Nodes joining at once after the first ten. Default 25. */
  joinBatch?: number;
  /**
   * Fleet keys (64 hex or base64 each; the first signs): every node runs in keyed mode with its own
   * `Keyring` parsed from them (`fleet.keyrings[i]`, so a test can rotate node by node). Without
   * keys the fleet runs in open mode.
   */
  keys?: readonly string[];
}

export function defaultIp(i: number): string {
  const n = i + 1;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

export class SimFleet {
  readonly clock: SimClock;
  readonly random: SeededRandom;
  readonly network: SimNetwork;
  readonly nodes: Dsht[] = [];
  /** Each node's keyring (keyed fleets only). */
  readonly keyrings: Keyring[] = [];
  readonly options: SimFleetOptions;

  constructor(options: SimFleetOptions) {
    this.options = options;
    this.clock = new SimClock(1_700_000_000_000);
    this.random = new SeededRandom(options.seed ?? 1);
    this.network = new SimNetwork(
      { clock: this.clock, random: this.random.fork() },
      { latencyMs: options.latencyMs, lossRate: 0, seed: options.seed ?? 1 },
    );
    const ipOf = options.ipOf ?? defaultIp;
    for (let i = 0; i < options.nodes; i++) {
      const transport = this.network.createTransport(ipOf(i), options.port ?? 4000);
      const cluster = options.clusterFor?.(i);
      const keyring = options.keys ? Keyring.parse(options.keys) : undefined;
      if (keyring) this.keyrings.push(keyring);
      const node = new Dsht(
        { transport, clock: this.clock, random: this.random.fork(), cluster, keyring },
        { swim: false, discovery: false, ...options.dsht },
      );
      this.nodes.push(node);
    }
  }

  /** Drive the clock until `p` settles; returns its value. */
  async run<T>(p: Promise<T>, limitMs = 24 * 3_600_000): Promise<T> {
    let settled = false;
    let value: T | undefined;
    let error: unknown;
    let failed = false;
    p.then(
      (v) => {
        settled = true;
        value = v;
      },
      (e: unknown) => {
        settled = true;
        failed = true;
        error = e;
      },
    );
    const stop = this.clock.now() + limitMs;
    await Promise.resolve();
    let idle = 0;
    while (!settled) {
      const at = this.clock.nextAt();
      if (at === undefined || at > stop) {
        // Work that only awaits promises (a stop, a flush) settles without the clock.
        if (idle++ < 3) {
          await new Promise((r) => setImmediate(r));
          continue;
        }
        throw new Error('simulation stalled: nothing scheduled');
      }
      idle = 0;
      await this.clock.runUntil(() => settled, stop);
    }
    if (failed) throw error;
    return value as T;
  }

  /**
   * Start every node: the first alone, the rest bootstrapped from it (in batches). `onProgress`
   * is called with the number of nodes running after each batch.
   */
  async start(opts: { onProgress?: (joined: number) => void } = {}): Promise<void> {
    const first = this.nodes[0];
    if (!first) return;
    await this.run(first.start());
    const boot = [`${first.transport.address.ip}:${first.transport.address.port}`];
    const batch = this.options.joinBatch ?? 25;
    let i = 1;
    while (i < this.nodes.length) {
      const n = i < 10 ? 1 : batch;
      const group = this.nodes.slice(i, i + n);
      await this.run(Promise.all(group.map((node) => node.start({ bootstrap: boot }))));
      i += n;
      opts.onProgress?.(Math.min(i, this.nodes.length));
    }
  }

  /** Set the loss rate (join usually runs lossless, the workload with loss). */
  setLoss(rate: number): void {
    this.network.lossRate = rate;
  }

  async stop(): Promise<void> {
    await this.run(Promise.all(this.nodes.map((n) => n.stop())));
  }
}
