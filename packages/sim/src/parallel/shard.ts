/**
 * One worker's part of a parallel fleet: the nodes i with i % shards == shard, on a SimNetwork
 * and a SimClock of its own. Datagrams to nodes another shard owns leave through the network's
 * remote route into one batch per destination shard; the coordinator hands each shard the
 * batches addressed to it at the next step, and the shard injects them at their `deliverAt`.
 *
 * A step: set the time to the fleet's time (between runs), inject the incoming datagrams in
 * canonical order, start the step's operations, fire every timer strictly before the window's
 * end, then let every promise chain settle (one macrotask turn) before answering — so nothing
 * a step started runs during the next one, and a step's result depends only on what it was sent.
 */
import type { Address } from '@coral/dsht';
import { Dsht, type DshtOptions } from '@coral/dsht';
import { Keyring } from '@coral/keyring';
import { SeededRandom, type Random } from '@coral/runtime';
import { SimClock } from '../clock/sim-clock.js';
import { defaultIp } from '../fleet/fleet.js';
import { SimNetwork, uniformRttLatency, type SimStats } from '../network/sim-network.js';
import { BatchWriter, canonicalOrder, readBatch, type Crossing } from './batch.js';
import { closestOf, slotCounters, startOp, trustPart, type FleetOp, type OpResult } from './ops.js';

/** The simulation's epoch (SimFleet's). */
export const SIM_EPOCH = 1_700_000_000_000;

/** What a shard is built from (structured-cloneable: it is a worker's `workerData`). */
export interface ShardConfig {
  shard: number;
  shards: number;
  nodes: number;
  seed: number;
  /** Fleet keys (keyed mode), as SimFleetOptions.keys. */
  keys?: string[];
  /** Options of every node (plain data only). */
  dsht?: DshtOptions;
  port?: number;
  /** RTT range of the uniform latency model (seeded by `seed`). Default 20–200 ms. */
  minRttMs?: number;
  maxRttMs?: number;
  lossRate?: number;
  /** Record every datagram that crossed into this shard (tests). */
  trace?: boolean;
}

export interface StepMessage {
  type: 'step';
  /** Jump to this time first (the fleet's time when a run starts). */
  now?: number;
  /** Batches addressed to this shard, by source shard. */
  inbox: Array<ArrayBuffer | undefined>;
  ops?: Array<{ id: number; op: FleetOp }>;
  /** Fire the timers before this time. */
  end?: number;
}

export interface StepReply {
  /** Batches for each destination shard (undefined: nothing). */
  outbox: Array<ArrayBuffer | undefined>;
  /** Earliest `deliverAt` in each destination's batch (Infinity when empty). */
  outMins: number[];
  /** Earliest pending timer (Infinity when none). */
  nextAt: number;
  done: Array<[number, OpResult]>;
  /** Wall milliseconds the step took (load balance figures only). */
  ms: number;
}

/** A datagram that crossed into this shard: when it was sent, due and delivered. */
export interface TraceEntry {
  from: number;
  to: number;
  sentAt: number;
  deliverAt: number;
  at: number;
}

export type ShardQuery =
  | { q: 'tableSizes'; level: number }
  | { q: 'closest'; key: Uint8Array }
  | { q: 'slot'; node: number; slot: string }
  | { q: 'holders'; key: Uint8Array }
  | { q: 'trust' }
  | { q: 'stats' }
  | { q: 'trace' }
  | { q: 'now' }
  | { q: 'busyMs' };

export class Shard {
  readonly config: ShardConfig;
  readonly clock = new SimClock(SIM_EPOCH);
  readonly network: SimNetwork;
  /** [index, node] of the nodes this shard owns, by index. */
  readonly nodes: Array<[number, Dsht]> = [];
  readonly #byIndex = new Map<number, Dsht>();
  readonly #ipIndex = new Map<string, number>();
  readonly #addresses: Address[] = [];
  readonly #out: BatchWriter[];
  readonly #trace: TraceEntry[] = [];
  /** Operations settled since the last step's answer. */
  #done: Array<[number, OpResult]> = [];

  constructor(config: ShardConfig) {
    this.config = config;
    const { shard, shards, nodes, seed } = config;
    const port = config.port ?? 4000;
    // The fleet's random streams, forked as SimFleet forks them: the network's first, then one
    // per node in index order — node i gets the same stream whichever shard builds it.
    const random = new SeededRandom(seed);
    const networkBase = random.fork();
    let networkRandom: Random = networkBase;
    for (let s = 0; s <= shard; s++) networkRandom = networkBase.fork();
    this.network = new SimNetwork(
      { clock: this.clock, random: networkRandom },
      {
        latencyMs: uniformRttLatency(config.minRttMs ?? 20, config.maxRttMs ?? 200, seed),
        lossRate: config.lossRate ?? 0,
      },
    );
    for (let i = 0; i < nodes; i++) {
      const ip = defaultIp(i);
      this.#ipIndex.set(ip, i);
      this.#addresses.push({ ip, port });
      const nodeRandom = random.fork();
      if (i % shards !== shard) continue;
      const transport = this.network.createTransport(ip, port);
      const keyring = config.keys ? Keyring.parse(config.keys) : undefined;
      const node = new Dsht(
        { transport, clock: this.clock, random: nodeRandom, keyring },
        { swim: false, discovery: false, ...config.dsht },
      );
      this.nodes.push([i, node]);
      this.#byIndex.set(i, node);
    }
    this.#out = Array.from({ length: shards }, () => new BatchWriter());
    this.network.remote = (data, from, to, at) => {
      if (to.port !== port) return false;
      const j = this.#ipIndex.get(to.ip);
      if (j === undefined || j % shards === shard) return false;
      this.#out[j % shards]!.write(at, this.clock.now(), this.#ipIndex.get(from.ip)!, j, data);
      return true;
    };
  }

  node(i: number): Dsht {
    const n = this.#byIndex.get(i);
    if (!n) throw new RangeError(`node ${i} is not in shard ${this.config.shard}`);
    return n;
  }

  /** Wall milliseconds spent in steps (load balance; never part of a result). */
  busyMs = 0;

  async step(m: StepMessage): Promise<StepReply> {
    const started = performance.now();
    if (m.now !== undefined) this.clock.jumpTo(m.now);
    const incoming: Crossing[] = [];
    for (const buf of m.inbox) if (buf) readBatch(buf, incoming);
    for (const c of canonicalOrder(incoming)) this.#inject(c);
    for (const { id, op } of m.ops ?? []) {
      void startOp(this.node(op.node), op, this.clock).then((r) => this.#done.push([id, r]));
    }
    if (m.end !== undefined) await this.clock.runBefore(m.end);
    // Let every chain the window started settle before answering.
    await new Promise((r) => setImmediate(r));
    const outMins = this.#out.map((w) => w.minDeliverAt);
    const outbox = this.#out.map((w) => w.take());
    const done = this.#done;
    this.#done = [];
    const ms = performance.now() - started;
    this.busyMs += ms;
    return { outbox, outMins, nextAt: this.clock.nextAt() ?? Infinity, done, ms };
  }

  #inject(c: Crossing): void {
    const from = this.#addresses[c.from]!;
    const to = this.#addresses[c.to]!;
    this.clock.setTimeoutAt(() => {
      if (this.config.trace) {
        const { from: f, to: t, sentAt, deliverAt } = c;
        this.#trace.push({ from: f, to: t, sentAt, deliverAt, at: this.clock.now() });
      }
      this.network.arrive(c.data, from, to);
    }, c.deliverAt);
  }

  query(q: ShardQuery): unknown {
    switch (q.q) {
      case 'tableSizes':
        return this.nodes.map(([, n]) => n.table(q.level)?.size ?? 0);
      case 'closest':
        return closestOf(this.nodes, q.key);
      case 'slot':
        return slotCounters(this.node(q.node), q.slot);
      case 'holders':
        return this.nodes.filter(([, n]) => n.localGet(q.key).length > 0).length;
      case 'trust':
        return trustPart(this.nodes.map(([, n]) => n));
      case 'stats':
        return { ...this.network.stats } satisfies SimStats;
      case 'trace':
        return this.#trace;
      case 'now':
        return this.clock.now();
      case 'busyMs':
        return this.busyMs;
    }
  }
}
