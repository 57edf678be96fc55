/**
 * A fleet of DSHT nodes over W shards — worker threads by default — run in conservative
 * synchronous time windows (classic parallel discrete-event simulation).
 *
 * The latency model's minimum one-way delay L bounds how soon a datagram sent at time t can
 * arrive: t + L. So when the earliest thing pending anywhere (a timer, or a datagram in flight
 * between shards) is at T, every shard may fire all its timers before T + L: nothing another shard
 * sends meanwhile can arrive before then. After each window the coordinator hands each shard the
 * datagrams addressed to it (one transferred buffer per source shard), the shard injects them in
 * canonical order (deliverAt, sender, sender's order), and the next window starts at the new
 * earliest time — idle time is skipped. Results depend on the seed and the shard count, never on
 * thread timing: each shard's step depends only on what the step was sent.
 *
 * Operations start at the fleet's time, which is the end of the window in which the last run's
 * operations settled (every shard is brought there before the next run), so figures differ from
 * the in-process `SimFleet`'s (it stops at the very timer that settles a run) but are as
 * deterministic.
 */
import { MessageChannel, Worker, type ResourceLimits } from 'node:worker_threads';
import { compareDistance } from '@coral/dsht';
import { defaultIp } from '../fleet/fleet.js';
import { uniformRttLatency, type SimStats } from '../network/sim-network.js';
import type { FleetDriver } from './driver.js';
import {
  addStats,
  mergeTrust,
  zeroStats,
  type FleetOp,
  type OpResult,
  type TrustPart,
} from './ops.js';
import {
  SIM_EPOCH,
  Shard,
  type ShardConfig,
  type ShardQuery,
  type StepMessage,
  type StepReply,
  type TraceEntry,
} from './shard.js';
import { ANSWER, awaitFlag, REQUEST, SPIN_US, takeMessage, type WorkerData } from './handoff.js';

/** How many windows past the earliest pending time anywhere a shard may run (see #ends). */
const MAX_AHEAD = 8;

export interface ParallelFleetOptions extends Omit<ShardConfig, 'shard' | 'shards'> {
  /** Shards (worker threads). Default 2. */
  workers?: number;
  /** Nodes joining at once after the first ten (SimFleet's joinBatch). Default 25. */
  joinBatch?: number;
  /**
   * Run the shards as worker threads (default) or in this thread, one after the other (tests:
   * the same figures, without threads).
   */
  threads?: boolean;
  /** Worker options (V8 flags for the worker's isolate are process-wide: pass them to node). */
  resourceLimits?: ResourceLimits;
  /** The worker script. Default: parallel/worker.js next to this module in dist/. */
  workerUrl?: URL;
  /** Give up when a run has not settled after this much simulated time. Default 24 h. */
  limitMs?: number;
}

/** How the coordinator talks to one shard: hand over a request, then take its answer. */
interface ShardLink {
  post(m: StepMessage | ({ type: 'query' } & ShardQuery)): void;
  answer(): Promise<unknown>;
  close(): Promise<void>;
}

export class ParallelFleet implements FleetDriver {
  readonly size: number;
  readonly workers: number;
  /** Window length: the latency model's minimum one-way delay. */
  readonly windowMs: number;
  /** Windows run so far. */
  windows = 0;
  /**
   * Wall milliseconds of the windows so far: `wall` in all, `slowest` the sum over windows of the
   * slowest shard's step (the rest of `wall` is handing over), `steps` the sum of all steps.
   */
  readonly timing = { wall: 0, slowest: 0, steps: 0 };
  readonly #links: ShardLink[];
  readonly #options: ParallelFleetOptions;
  /** Batches in flight, [destination][source]. */
  #inflight: Array<Array<ArrayBuffer | undefined>>;
  /** Earliest `deliverAt` in flight to each shard. */
  #inMin: number[];
  #nextAt: number[];
  #now = SIM_EPOCH;

  constructor(options: ParallelFleetOptions) {
    const w = options.workers ?? 2;
    if (!Number.isInteger(w) || w < 1) throw new RangeError(`bad workers: ${w}`);
    this.#options = options;
    this.size = options.nodes;
    this.workers = w;
    const model = uniformRttLatency(options.minRttMs ?? 20, options.maxRttMs ?? 200, options.seed);
    const l = model.minOneWayMs;
    if (l === undefined || !(l > 0)) throw new RangeError('the latency model has no minimum delay');
    this.windowMs = l;
    // Shard 0 runs on this thread (it works while it waits for the others), the rest on workers.
    this.#links = Array.from({ length: w }, (_, shard) => {
      const config: ShardConfig = { ...shardConfig(options), shard, shards: w };
      return shard === 0 || options.threads === false
        ? inlineLink(config)
        : threadLink(config, options);
    });
    this.#inflight = Array.from({ length: w }, () =>
      new Array<ArrayBuffer | undefined>(w).fill(undefined),
    );
    this.#nextAt = new Array<number>(w).fill(Infinity);
    this.#inMin = new Array<number>(w).fill(Infinity);
  }

  now(): number {
    return this.#now;
  }

  async start(opts: { onProgress?: (joined: number) => void } = {}): Promise<void> {
    if (this.size === 0) return;
    await this.run([{ kind: 'start', node: 0 }]);
    const boot = [`${defaultIp(0)}:${this.#options.port ?? 4000}`];
    const batch = this.#options.joinBatch ?? 25;
    let i = 1;
    while (i < this.size) {
      const n = i < 10 ? 1 : batch;
      const ops: FleetOp[] = [];
      for (let j = i; j < Math.min(i + n, this.size); j++)
        ops.push({ kind: 'start', node: j, bootstrap: boot });
      await this.run(ops);
      i += n;
      opts.onProgress?.(Math.min(i, this.size));
    }
  }

  async run(ops: readonly FleetOp[]): Promise<OpResult[]> {
    const results: OpResult[] = new Array<OpResult>(ops.length);
    let pending = ops.length;
    const byShard = this.#links.map((): Array<{ id: number; op: FleetOp }> => []);
    ops.forEach((op, id) => {
      if (!(op.node >= 0 && op.node < this.size)) throw new RangeError(`no node ${op.node}`);
      byShard[op.node % this.workers]!.push({ id, op });
    });
    const onDone = (id: number, r: OpResult): void => {
      results[id] = r;
      pending--;
    };
    const stop = this.#now + (this.#options.limitMs ?? 24 * 3_600_000);
    // The first window starts at the fleet's time, where every shard stands.
    let end = this.#now + this.windowMs;
    await this.#step(
      this.#links.map(() => end),
      byShard,
      onDone,
      this.#now,
    );
    while (pending > 0) {
      const t = this.#earliest();
      if (t === Infinity) throw new Error('simulation stalled: nothing scheduled');
      if (t > stop) throw new Error('simulation ran past its limit');
      const ends = this.#ends(Infinity);
      end = Math.max(end, ...ends);
      await this.#step(ends, undefined, onDone);
    }
    // The run ends where its last window did (no shard's clock is past it).
    await this.#settle(end);
    return results;
  }

  async advanceTo(at: number): Promise<void> {
    if (at <= this.#now) return;
    await this.#settle(at);
  }

  /** Windows until nothing is pending before `at`; then the fleet's time is `at`. */
  async #settle(at: number): Promise<void> {
    while (this.#earliest() < at) await this.#step(this.#ends(at), undefined, undefined);
    this.#now = at;
  }

  /** The earliest thing pending in shard `w`: its next timer or a datagram in flight to it. */
  #earliestOf(w: number): number {
    return Math.min(this.#nextAt[w]!, this.#inMin[w]!);
  }

  #earliest(): number {
    return Math.min(...this.#nextAt, ...this.#inMin);
  }

  /**
   * Each shard's window end. Shard v can act (fire a timer, take a datagram) no sooner than
   * A_v = min(its earliest pending time, the earliest time anything another shard sends in this
   * step can reach it: their earliest + L), in this step or any later one; so nothing v ever
   * sends from now on reaches shard w before A_v + L, and w may fire everything before the least
   * A_v + L over the other shards (≥ the global earliest + L, at most 2 L past w's own earliest
   * when the others are busy later). Capped at `at` and at MAX_AHEAD windows past the earliest
   * time anywhere (with one shard, nothing else bounds it).
   */
  #ends(at: number): number[] {
    const l = this.windowMs;
    const cap = Math.min(at, this.#earliest() + MAX_AHEAD * l);
    const e = this.#links.map((_, w) => this.#earliestOf(w));
    const act = e.map((ev, v) => {
      let a = ev;
      for (let u = 0; u < e.length; u++) if (u !== v) a = Math.min(a, e[u]! + l);
      return a;
    });
    return e.map((_, w) => {
      let end = cap;
      for (let v = 0; v < act.length; v++) if (v !== w) end = Math.min(end, act[v]! + l);
      return end;
    });
  }

  async #step(
    ends: number[],
    ops: Array<Array<{ id: number; op: FleetOp }>> | undefined,
    onDone: ((id: number, r: OpResult) => void) | undefined,
    now?: number,
  ): Promise<void> {
    this.windows++;
    const started = performance.now();
    // The workers first: shard 0 (this thread) starts working as soon as it is posted.
    for (let w = this.workers - 1; w >= 0; w--) {
      const end = ends[w]!;
      this.#links[w]!.post({ type: 'step', now, inbox: this.#inflight[w]!, ops: ops?.[w], end });
    }
    const replies: StepReply[] = [];
    for (const link of this.#links) replies.push((await link.answer()) as StepReply);
    this.timing.wall += performance.now() - started;
    let slowest = 0;
    for (const r of replies) {
      slowest = Math.max(slowest, r.ms);
      this.timing.steps += r.ms;
    }
    this.timing.slowest += slowest;
    this.#inMin.fill(Infinity);
    replies.forEach((r, src) => {
      this.#nextAt[src] = r.nextAt;
      r.outMins.forEach((m, dst) => (this.#inMin[dst] = Math.min(this.#inMin[dst]!, m)));
      r.outbox.forEach((buf, dst) => (this.#inflight[dst]![src] = buf));
      if (r.done.length > 0 && !onDone) throw new Error('an operation settled outside its run');
      for (const [id, result] of r.done) onDone!(id, result);
    });
  }

  async #ask<T>(q: ShardQuery): Promise<T[]> {
    for (const link of this.#links) link.post({ type: 'query', ...q });
    const out: T[] = [];
    for (const link of this.#links) out.push((await link.answer()) as T);
    return out;
  }

  async tableSizes(level: number): Promise<number[]> {
    return (await this.#ask<number[]>({ q: 'tableSizes', level })).flat();
  }

  async closest(key: Uint8Array): Promise<number> {
    let best: { index: number; id: Uint8Array } | undefined;
    for (const c of await this.#ask<{ index: number; id: Uint8Array } | undefined>({
      q: 'closest',
      key,
    })) {
      if (c && (!best || compareDistance(c.id, best.id, key) < 0)) best = c;
    }
    if (!best) throw new RangeError('empty fleet');
    return best.index;
  }

  async slotCounters(node: number, slot: string): Promise<{ accepted: number; requests: number }> {
    const link = this.#links[node % this.workers]!;
    link.post({ type: 'query', q: 'slot', node, slot });
    return (await link.answer()) as { accepted: number; requests: number };
  }

  async holders(key: Uint8Array): Promise<number> {
    return (await this.#ask<number>({ q: 'holders', key })).reduce((a, b) => a + b, 0);
  }

  async trust(): Promise<TrustPart> {
    return mergeTrust(await this.#ask<TrustPart>({ q: 'trust' }));
  }

  async stats(): Promise<SimStats> {
    return (await this.#ask<SimStats>({ q: 'stats' })).reduce(addStats, zeroStats());
  }

  /** Datagrams that crossed between shards, by receiving shard (with `trace: true`). */
  async trace(): Promise<TraceEntry[][]> {
    return this.#ask<TraceEntry[]>({ q: 'trace' });
  }

  /** Each shard's clock (every one at most the fleet's time between runs). */
  async shardTimes(): Promise<number[]> {
    return this.#ask<number>({ q: 'now' });
  }

  /** Wall milliseconds each shard spent in its steps so far (the rest of its time it waited). */
  async busyMs(): Promise<number[]> {
    return this.#ask<number>({ q: 'busyMs' });
  }

  async close(): Promise<void> {
    await Promise.all(this.#links.map((l) => l.close()));
  }
}

function shardConfig(o: ParallelFleetOptions): Omit<ShardConfig, 'shard' | 'shards'> {
  const { nodes, seed, keys, dsht, port, minRttMs, maxRttMs, lossRate, trace } = o;
  return { nodes, seed, keys, dsht, port, minRttMs, maxRttMs, lossRate, trace };
}

function inlineLink(config: ShardConfig): ShardLink {
  const shard = new Shard(config);
  let pending: Promise<unknown> | undefined;
  return {
    post: (m) => {
      pending = m.type === 'step' ? shard.step(m) : Promise.resolve(shard.query(m));
    },
    answer: () => {
      const p = pending ?? Promise.reject(new Error('nothing asked'));
      pending = undefined;
      return p;
    },
    close: async () => {},
  };
}

/** The compiled worker script (tests import this module from src/, the worker runs from dist/). */
function defaultWorkerUrl(): URL {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    return new URL(
      here.replace('/src/parallel/', '/dist/parallel/').replace(/[^/]+\.ts$/, 'worker.js'),
    );
  }
  return new URL('./worker.js', here);
}

function threadLink(config: ShardConfig, options: ParallelFleetOptions): ShardLink {
  const { port1, port2 } = new MessageChannel();
  const shared = new SharedArrayBuffer(8);
  const flags = new Int32Array(shared);
  const data: WorkerData = { config, port: port2, flags: shared };
  const worker = new Worker(options.workerUrl ?? defaultWorkerUrl(), {
    workerData: data,
    transferList: [port2],
    resourceLimits: options.resourceLimits,
  });
  // A worker blocks in Atomics.wait between steps: it must not keep the process alive by itself
  // (a caller that ends without close() still exits).
  worker.unref();
  let failure: Error | undefined;
  let exited = false;
  worker.on('error', (err: Error) => (failure ??= err));
  worker.on('exit', (code) => {
    exited = true;
    failure ??= new Error(`shard ${config.shard} exited (${code})`);
  });
  const post = (m: object, transfer: ArrayBuffer[] = []): void => {
    port1.postMessage(m, transfer);
    Atomics.store(flags, REQUEST, 1);
    Atomics.notify(flags, REQUEST);
  };
  return {
    post: (m) => {
      if (failure) return;
      post(m, m.type === 'step' ? m.inbox.filter((b): b is ArrayBuffer => b !== undefined) : []);
    },
    answer: async () => {
      // Block on the flag; every second let the event loop run, to hear of a worker that died.
      while (!failure && !awaitFlag(flags, ANSWER, SPIN_US, 1000)) {
        await new Promise((r) => setImmediate(r));
      }
      if (failure) throw failure;
      Atomics.store(flags, ANSWER, 0);
      const m = takeMessage(port1) as { ok?: unknown; error?: string };
      if (m.error !== undefined) throw new Error(`shard ${config.shard}: ${m.error}`);
      return m.ok;
    },
    close: async () => {
      if (!failure) post({ type: 'close' });
      failure ??= new Error('closed');
      // Waiting for the exit must keep the process alive (the worker is unref'd).
      worker.ref();
      if (!exited) await new Promise((r) => worker.once('exit', r));
      port1.close();
    },
  };
}
