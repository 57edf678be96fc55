/**
 * A geographic latency model: regions on a world map, metros inside each region, nodes inside
 * each metro. Base RTTs fall in three bands (defaults as in Coral's setting):
 *
 * - same metro: `metroRttMs` [1, 10) — a per-metro base plus the two nodes' access delays;
 * - same region, different metros: `regionRttMs` [20, 60) — grows with the metros' distance in the
 *   region (metros sit in a unit disk);
 * - different regions: `worldRttMs` [80, 300) — grows with the distance between the metros on the
 *   world map (regions in a unit square, metros within 0.05 of their region's centre).
 *
 * Each node adds an access (last-mile) delay in [0, accessMs) to every RTT it is part of; the site
 * part is drawn in [lo, hi − 2·accessMs), so every base RTT stays inside its band. Jitter only adds
 * delay (see `makeTopology`), so a measured RTT is never below the base.
 *
 * Addresses: node n of metro m of region r is `10.{r+1}.{m+1}.{n+1}` — one /24 per metro and one
 * /16 per region, which is what the DSHT's locality hints key on.
 */
import { SeededRandom } from '@coral/runtime';
import { ERR_TOPOLOGY_OPTIONS, TopologyError } from './errors.js';
import {
  jitterProblems,
  makeTopology,
  type JitterOptions,
  type SimNode,
  type Topology,
} from './topology.js';

/** Base RTT band between two nodes of the same metro, ms [lo, hi). */
export const GEO_METRO_RTT_MS: readonly [number, number] = [1, 10];
/** Base RTT band between metros of the same region, ms [lo, hi). */
export const GEO_REGION_RTT_MS: readonly [number, number] = [20, 60];
/** Base RTT band between regions, ms [lo, hi). */
export const GEO_WORLD_RTT_MS: readonly [number, number] = [80, 300];
/** Largest access (last-mile) delay a node adds to each RTT, ms. */
export const GEO_ACCESS_MS = 0.5;
/** Most nodes a metro can hold (one /24). */
export const GEO_MAX_NODES_PER_METRO = 254;

export interface GeoTopologyOptions extends JitterOptions {
  seed: number;
  /** Number of regions (1..254). */
  regions: number;
  /** Metros in every region (1..254). */
  metrosPerRegion: number;
  /** Nodes, spread evenly over the metros (node i goes to metro i mod metros). */
  nodes: number;
  metroRttMs?: readonly [number, number];
  regionRttMs?: readonly [number, number];
  worldRttMs?: readonly [number, number];
  accessMs?: number;
}

export interface GeoNode extends SimNode {
  regionIndex: number;
  /** Index of the metro within its region. */
  metroIndex: number;
}

export interface GeoTopology extends Topology {
  readonly nodes: readonly GeoNode[];
  /** Metro labels, region-major. */
  readonly metros: readonly string[];
  readonly regions: readonly string[];
}

export function geoTopology(options: GeoTopologyOptions): GeoTopology {
  const metroBand = options.metroRttMs ?? GEO_METRO_RTT_MS;
  const regionBand = options.regionRttMs ?? GEO_REGION_RTT_MS;
  const worldBand = options.worldRttMs ?? GEO_WORLD_RTT_MS;
  const access = options.accessMs ?? GEO_ACCESS_MS;
  validate(options, metroBand, regionBand, worldBand, access);

  const rng = new SeededRandom(options.seed >>> 0);
  const R = options.regions;
  const M = options.metrosPerRegion;
  const regionPos = Array.from({ length: R }, () => [rng.next(), rng.next()] as const);
  // Metros: a position in the region's unit disk (intra-region distance) and on the world map.
  const metroLocal: (readonly [number, number])[] = [];
  const metroWorld: (readonly [number, number])[] = [];
  const metroBase: number[] = [];
  const metroSpan = metroBand[1] - 2 * access - metroBand[0];
  for (let r = 0; r < R; r++) {
    for (let m = 0; m < M; m++) {
      const [x, y] = inDisk(rng);
      metroLocal.push([x, y]);
      metroWorld.push([regionPos[r]![0] + 0.05 * x, regionPos[r]![1] + 0.05 * y]);
      metroBase.push(metroBand[0] + metroSpan * rng.next());
    }
  }

  const nodes: GeoNode[] = [];
  const nodeMetro: number[] = [];
  const nodeAccess: number[] = [];
  const perMetro = new Array<number>(R * M).fill(0);
  for (let i = 0; i < options.nodes; i++) {
    const g = i % (R * M);
    const r = Math.floor(g / M);
    const m = g % M;
    const n = perMetro[g]!++;
    const metro = `r${r + 1}m${m + 1}`;
    nodes.push({
      ip: `10.${r + 1}.${m + 1}.${n + 1}`,
      site: metro,
      metro,
      region: `r${r + 1}`,
      regionIndex: r,
      metroIndex: m,
    });
    nodeMetro.push(g);
    nodeAccess.push(access * rng.next());
  }

  const siteRtt = (ga: number, gb: number): number => {
    if (ga === gb) return metroBase[ga]!;
    const ra = Math.floor(ga / M);
    const rb = Math.floor(gb / M);
    if (ra === rb) {
      const d = dist(metroLocal[ga]!, metroLocal[gb]!) / 2; // unit disk: distance < 2
      return band(regionBand, access, d);
    }
    const d = dist(metroWorld[ga]!, metroWorld[gb]!) / Math.SQRT2;
    return band(worldBand, access, d);
  };
  const topo = makeTopology(
    nodes,
    (a, b) => siteRtt(nodeMetro[a]!, nodeMetro[b]!) + nodeAccess[a]! + nodeAccess[b]!,
    options,
  );
  const metros: string[] = [];
  for (let r = 0; r < R; r++) for (let m = 0; m < M; m++) metros.push(`r${r + 1}m${m + 1}`);
  return {
    ...topo,
    nodes: topo.nodes as readonly GeoNode[],
    metros,
    regions: Array.from({ length: R }, (_, r) => `r${r + 1}`),
  };
}

/** A point of `band` [lo, hi − 2·access) at fraction `f` (clamped to [0, 1)). */
function band(b: readonly [number, number], access: number, f: number): number {
  const span = b[1] - 2 * access - b[0];
  const x = Math.min(Math.max(f, 0), 1 - 1e-9);
  return b[0] + span * x;
}

function inDisk(rng: SeededRandom): [number, number] {
  for (;;) {
    const x = 2 * rng.next() - 1;
    const y = 2 * rng.next() - 1;
    if (x * x + y * y < 1) return [x, y];
  }
}

function dist(a: readonly [number, number], b: readonly [number, number]): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1]);
}

function validate(
  o: GeoTopologyOptions,
  metroBand: readonly [number, number],
  regionBand: readonly [number, number],
  worldBand: readonly [number, number],
  access: number,
): void {
  const problems: string[] = [];
  const int = (name: string, v: unknown, lo: number, hi: number): void => {
    if (!(typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi)) {
      problems.push(`${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
    }
  };
  int('seed', o.seed, 0, 2 ** 32 - 1);
  int('regions', o.regions, 1, 254);
  int('metrosPerRegion', o.metrosPerRegion, 1, 254);
  if (problems.length === 0) {
    int('nodes', o.nodes, 1, GEO_MAX_NODES_PER_METRO * o.regions * o.metrosPerRegion);
  }
  if (!(Number.isFinite(access) && access >= 0))
    problems.push(`accessMs must be ≥ 0, got ${access}`);
  for (const [name, b] of [
    ['metroRttMs', metroBand],
    ['regionRttMs', regionBand],
    ['worldRttMs', worldBand],
  ] as const) {
    const ok =
      Array.isArray(b) &&
      b.length === 2 &&
      b.every((v) => typeof v === 'number' && Number.isFinite(v)) &&
      b[0] >= 0 &&
      b[1] - b[0] > 2 * access;
    if (!ok) {
      problems.push(
        `${name} must be [lo, hi] with 0 ≤ lo and hi − lo > 2·accessMs, got ${JSON.stringify(b)}`,
      );
    }
  }
  problems.push(...jitterProblems(o.jitter ?? 0, o.spikeProbability ?? 0, o.spikeMs ?? 0));
  if (problems.length > 0) throw new TopologyError(ERR_TOPOLOGY_OPTIONS, problems);
}
