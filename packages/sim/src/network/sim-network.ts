/**
 * An in-memory datagram network for tests and simulations, driven by an injected clock and a
 * seeded random source, so a 1,000-node fleet runs deterministically in one process.
 *
 * - latency: a `latencyMs(fromIp, toIp)` function giving the one-way delay of each datagram
 *   (topologies plug in here); by default every pair of IPs gets a fixed RTT drawn uniformly from
 *   20-200 ms, derived from the seed and the pair, so it is stable for the whole run;
 * - loss: each datagram is dropped with probability `lossRate`;
 * - partitions: `partition(a, b)` drops everything between two groups of IPs until `heal()`.
 */
import type { Clock, Random } from '@coral/runtime';
import { TransportError, type Address, type DatagramHandler, type Transport } from '@coral/dsht';
import { fmix32 } from '@coral/dsht/internal';

/**
 * One-way latency in ms of a datagram from `fromIp` to `toIp`. `minOneWayMs`, when the model
 * knows it, is a lower bound over every pair of distinct IPs: a parallel fleet's time window.
 */
export interface LatencyModel {
  (fromIp: string, toIp: string): number;
  readonly minOneWayMs?: number;
}

/**
 * Where a parallel fleet's worker sends a datagram for a node another worker owns: returns true
 * when it took the datagram (to arrive at `at`, the sender's now + latency).
 */
export type RemoteRoute = (data: Uint8Array, from: Address, to: Address, at: number) => boolean;

export interface SimNetworkComponents {
  clock: Clock;
  random: Random;
}

export interface SimNetworkOptions {
  /** One-way latency in ms. Default: uniformRttLatency(20, 200, seed). */
  latencyMs?: LatencyModel;
  /** Probability a datagram is lost. Default 0. */
  lossRate?: number;
  /** Seed of the default latency model. Default 1. */
  seed?: number;
}

/** Default latency model: RTT uniform in [minRtt, maxRtt] per unordered IP pair, stable for a seed. */
export function uniformRttLatency(minRttMs = 20, maxRttMs = 200, seed = 1): LatencyModel {
  // The hash of `${seed}|${x}|${y}`, computed part by part (no string built per datagram).
  const prefix = fnv(FNV_OFFSET, `${seed}|`);
  const model = (a: string, b: string): number => {
    if (a === b) return 0.05;
    const h =
      a < b
        ? finalize(fnv(fnv(fnv(prefix, a), '|'), b))
        : finalize(fnv(fnv(fnv(prefix, b), '|'), a));
    return (minRttMs + (h / 4294967296) * (maxRttMs - minRttMs)) / 2;
  };
  // h ≥ 0 (fmix32 is unsigned), so no distinct pair is faster than half the smallest RTT.
  return Object.assign(model, { minOneWayMs: minRttMs / 2 });
}

const FNV_OFFSET = 0x811c9dc5;

/** FNV-1a over the UTF-16 code units of `s`, continuing from `h`. */
function fnv(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h;
}

/** FNV-1a, then a finalizer: a cheap, well-spread hash for the latency model. */
const finalize = fmix32;

export interface SimStats {
  sent: number;
  delivered: number;
  lost: number;
  partitioned: number;
  unreachable: number;
  bytes: number;
}

export class SimNetwork {
  readonly clock: Clock;
  #random: Random;
  latencyMs: LatencyModel;
  lossRate: number;
  /** @internal A parallel fleet's route to nodes other workers own (see parallel/). */
  remote: RemoteRoute | undefined = undefined;
  /** ip → port → endpoint (no `ip:port` string built per datagram). */
  #endpoints = new Map<string, Map<number, SimTransport>>();
  #partitions: Array<[Set<string>, Set<string>]> = [];
  readonly stats: SimStats = {
    sent: 0,
    delivered: 0,
    lost: 0,
    partitioned: 0,
    unreachable: 0,
    bytes: 0,
  };

  constructor(components: SimNetworkComponents, options: SimNetworkOptions = {}) {
    this.clock = components.clock;
    this.#random = components.random;
    this.latencyMs = options.latencyMs ?? uniformRttLatency(20, 200, options.seed ?? 1);
    this.lossRate = options.lossRate ?? 0;
  }

  /** A transport endpoint at `ip:port` (port 0 is not allowed in the simulation). */
  createTransport(ip: string, port: number): SimTransport {
    return new SimTransport(this, { ip, port });
  }

  /** Drop every datagram between the IPs of `a` and those of `b` (both directions). */
  partition(a: Iterable<string>, b: Iterable<string>): void {
    this.#partitions.push([new Set(a), new Set(b)]);
  }

  heal(): void {
    this.#partitions = [];
  }

  /** @internal */
  attach(t: SimTransport): void {
    const { ip, port } = t.address;
    let ports = this.#endpoints.get(ip);
    if (ports?.has(port)) throw new TransportError(`address in use: ${ip}:${port}`);
    if (!ports) this.#endpoints.set(ip, (ports = new Map<number, SimTransport>()));
    ports.set(port, t);
  }

  /** @internal */
  detach(t: SimTransport): void {
    const { ip, port } = t.address;
    const ports = this.#endpoints.get(ip);
    if (ports?.get(port) !== t) return;
    ports.delete(port);
    if (ports.size === 0) this.#endpoints.delete(ip);
  }

  #blocked(a: string, b: string): boolean {
    for (const [x, y] of this.#partitions) {
      if ((x.has(a) && y.has(b)) || (y.has(a) && x.has(b))) return true;
    }
    return false;
  }

  /** @internal */
  deliver(data: Uint8Array, from: Address, to: Address): void {
    this.stats.sent++;
    this.stats.bytes += data.length;
    if (this.lossRate > 0 && this.#random.next() < this.lossRate) {
      this.stats.lost++;
      return;
    }
    if (this.#partitions.length > 0 && this.#blocked(from.ip, to.ip)) {
      this.stats.partitioned++;
      return;
    }
    const delay = Math.max(0, this.latencyMs(from.ip, to.ip));
    if (this.remote?.(data, from, to, this.clock.now() + delay)) return;
    const copy = data.slice();
    this.clock.setTimeout(() => this.arrive(copy, from, to), delay);
  }

  /** @internal A datagram reaches `to` (now, or when a parallel fleet's worker injects it). */
  arrive(data: Uint8Array, from: Address, to: Address): void {
    const dest = this.#endpoints.get(to.ip)?.get(to.port);
    if (!dest) {
      this.stats.unreachable++;
      return;
    }
    this.stats.delivered++;
    dest.receive(data, from);
  }
}

export class SimTransport implements Transport {
  readonly #network: SimNetwork;
  readonly address: Address;
  #handler: DatagramHandler | undefined;
  #open = false;

  constructor(network: SimNetwork, address: Address) {
    this.#network = network;
    this.address = address;
  }

  async start(): Promise<void> {
    if (this.#open) return;
    this.#network.attach(this);
    this.#open = true;
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#network.detach(this);
    this.#open = false;
  }

  onDatagram(handler: DatagramHandler): void {
    this.#handler = handler;
  }

  send(data: Uint8Array, to: Address): void {
    if (!this.#open) return;
    this.#network.deliver(data, this.address, to);
  }

  /** @internal */
  receive(data: Uint8Array, from: Address): void {
    if (this.#open) this.#handler?.(data, from);
  }
}
