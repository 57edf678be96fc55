/**
 * What every latency model gives the simulated network: the nodes with their place labels, a
 * one-way latency with seeded jitter for each datagram, and the jitter-free RTT for measurements
 * such as cluster purity. Addresses are simulation-only labels (10.x.y.z); they never reach a socket.
 */
import { SeededRandom } from '@coral/runtime';
import { ERR_TOPOLOGY_OPTIONS, ERR_TOPOLOGY_UNKNOWN_IP, TopologyError } from './errors.js';

/** Largest extra share of the one-way latency added by jitter (drawn as `jitter × u²`). */
export const TOPOLOGY_JITTER = 0.1;
/** Probability that a datagram is delayed by a spike. */
export const TOPOLOGY_SPIKE_PROBABILITY = 0.01;
/** Largest extra one-way delay of a spike (uniform in [0, spikeMs)). */
export const TOPOLOGY_SPIKE_MS = 50;

export interface SimNode {
  /** Simulation-only address; nodes of one site share a /24, of one region a /16 (geo). */
  ip: string;
  /** Where the node is: the metro (geo) or the matrix site. */
  site: string;
  metro: string;
  region: string;
}

export interface JitterOptions {
  /** Default {@link TOPOLOGY_JITTER}. */
  jitter?: number;
  /** Default {@link TOPOLOGY_SPIKE_PROBABILITY}. */
  spikeProbability?: number;
  /** Default {@link TOPOLOGY_SPIKE_MS}. */
  spikeMs?: number;
}

export interface Topology {
  readonly nodes: readonly SimNode[];
  /**
   * One-way latency of a datagram from `fromIp` to `toIp` in ms: half the base RTT, plus jitter
   * (never negative: queues only add delay), plus an occasional spike. Draws from the topology's
   * seeded stream, so a run replays exactly when datagrams are sent in the same order.
   */
  latencyMs: (fromIp: string, toIp: string) => number;
  /** RTT between two nodes without jitter (symmetric; 0 from a node to itself). */
  baseRttMs: (a: string, b: string) => number;
  /** One simulated round trip (`latencyMs` there and back). */
  sampleRttMs: (a: string, b: string) => number;
  node(ip: string): SimNode | undefined;
}

/**
 * Build a `Topology` from nodes and a jitter-free RTT function. Shared by the geo and matrix
 * models; also handy for hand-made topologies in tests.
 */
export function makeTopology(
  nodes: readonly SimNode[],
  baseRtt: (a: number, b: number) => number,
  options: JitterOptions & { seed: number },
): Topology {
  const jitter = options.jitter ?? TOPOLOGY_JITTER;
  const spikeProbability = options.spikeProbability ?? TOPOLOGY_SPIKE_PROBABILITY;
  const spikeMs = options.spikeMs ?? TOPOLOGY_SPIKE_MS;
  const problems = jitterProblems(jitter, spikeProbability, spikeMs);
  if (problems.length > 0) throw new TopologyError(ERR_TOPOLOGY_OPTIONS, problems);
  const index = new Map<string, number>();
  nodes.forEach((n, i) => index.set(n.ip, i));
  const idx = (ip: string): number => {
    const i = index.get(ip);
    if (i === undefined) {
      throw new TopologyError(ERR_TOPOLOGY_UNKNOWN_IP, [`${ip} is not a node of this topology`]);
    }
    return i;
  };
  const rng = new SeededRandom((options.seed ^ 0x5bd1e995) >>> 0);
  const base = (a: string, b: string): number => {
    const i = idx(a);
    const j = idx(b);
    return i === j ? 0 : baseRtt(i, j);
  };
  const latencyMs = (from: string, to: string): number => {
    const half = base(from, to) / 2;
    const u = rng.next();
    let d = half * (1 + jitter * u * u);
    if (spikeProbability > 0 && rng.next() < spikeProbability) d += rng.next() * spikeMs;
    return d;
  };
  return {
    nodes: Object.freeze([...nodes]),
    latencyMs,
    baseRttMs: base,
    sampleRttMs: (a, b) => latencyMs(a, b) + latencyMs(b, a),
    node: (ip) => {
      const i = index.get(ip);
      return i === undefined ? undefined : nodes[i];
    },
  };
}

export function jitterProblems(
  jitter: number,
  spikeProbability: number,
  spikeMs: number,
): string[] {
  const problems: string[] = [];
  if (!(Number.isFinite(jitter) && jitter >= 0)) problems.push(`jitter must be ≥ 0, got ${jitter}`);
  if (!(spikeProbability >= 0 && spikeProbability <= 1)) {
    problems.push(`spikeProbability must be in [0, 1], got ${spikeProbability}`);
  }
  if (!(Number.isFinite(spikeMs) && spikeMs >= 0))
    problems.push(`spikeMs must be ≥ 0, got ${spikeMs}`);
  return problems;
}
