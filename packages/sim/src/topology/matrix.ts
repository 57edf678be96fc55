/**
 * A measured latency model: a JSON all-pairs RTT matrix by site,
 *
 * ```json
 * { "sites": ["nyc", "lon", "tok"], "rttMs": [[2, 70, 180], [71, 3, 230], [180, 230, 1]] }
 * ```
 *
 * and an assignment of nodes to sites. `rttMs[i][j]` is the RTT in ms between a node of site i and
 * a node of site j; the diagonal is the RTT between two nodes of the same site. Measured matrices are
 * rarely exactly symmetric, so the RTT used for a pair is the mean of `rttMs[i][j]` and `rttMs[j][i]`.
 * Every problem in the file is reported at once (`DSHT_ERR_TOPOLOGY_MATRIX`, with `problems`).
 *
 * Addresses: node n of site s is `10.{s >> 8}.{s & 255}.{n+1}` (one /24 per site). A site is its own
 * metro and region label.
 */
import { ERR_TOPOLOGY_MATRIX, ERR_TOPOLOGY_OPTIONS, TopologyError } from './errors.js';
import { makeTopology, type JitterOptions, type SimNode, type Topology } from './topology.js';

/** Most sites a matrix may have (two address bytes). */
export const MATRIX_MAX_SITES = 65_536;
/** Most nodes one site can hold (one /24). */
export const MATRIX_MAX_NODES_PER_SITE = 254;
/** Largest RTT accepted in a matrix, ms (a minute: anything above is a unit mistake). */
export const MATRIX_MAX_RTT_MS = 60_000;

export interface RttMatrix {
  sites: string[];
  rttMs: number[][];
}

export interface MatrixTopologyOptions extends JitterOptions {
  seed: number;
  /**
   * Either a node count, spread evenly over the sites in order (node i at site i mod sites), or the
   * site name of every node.
   */
  nodes: number | readonly string[];
  /** Largest access delay each node adds to its RTTs, ms (default 0: the matrix as measured). */
  accessMs?: number;
}

export interface MatrixTopology extends Topology {
  readonly matrix: RttMatrix;
}

/** Parse (if given a string) and validate a topology file; throws `DSHT_ERR_TOPOLOGY_MATRIX`. */
export function parseRttMatrix(input: unknown): RttMatrix {
  let data = input;
  if (typeof input === 'string') {
    try {
      data = JSON.parse(input) as unknown;
    } catch (err) {
      throw new TopologyError(ERR_TOPOLOGY_MATRIX, [
        `topology file is not JSON: ${(err as Error).message}`,
      ]);
    }
  }
  const problems: string[] = [];
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new TopologyError(ERR_TOPOLOGY_MATRIX, ['topology must be an object { sites, rttMs }']);
  }
  const { sites, rttMs } = data as Record<string, unknown>;
  if (!Array.isArray(sites)) problems.push('"sites" must be an array of site names');
  if (!Array.isArray(rttMs)) problems.push('"rttMs" must be an array of rows');
  if (problems.length > 0) throw new TopologyError(ERR_TOPOLOGY_MATRIX, problems);
  const s = sites as unknown[];
  const rows = rttMs as unknown[];
  if (s.length === 0) problems.push('"sites" is empty');
  if (s.length > MATRIX_MAX_SITES)
    problems.push(`too many sites: ${s.length} > ${MATRIX_MAX_SITES}`);
  const seen = new Set<string>();
  s.forEach((name, i) => {
    if (typeof name !== 'string' || name.length === 0) {
      problems.push(`sites[${i}] must be a non-empty string, got ${JSON.stringify(name)}`);
    } else if (seen.has(name)) {
      problems.push(`sites[${i}] duplicates "${name}"`);
    } else {
      seen.add(name);
    }
  });
  if (rows.length !== s.length) {
    problems.push(`"rttMs" has ${rows.length} rows but there are ${s.length} sites`);
  }
  rows.forEach((row, i) => {
    if (!Array.isArray(row)) {
      problems.push(`rttMs[${i}] must be an array`);
      return;
    }
    if (row.length !== s.length) {
      problems.push(`rttMs[${i}] has ${row.length} entries, expected ${s.length}`);
    }
    row.forEach((v: unknown, j) => {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MATRIX_MAX_RTT_MS) {
        problems.push(
          `rttMs[${i}][${j}] must be a number in [0, ${MATRIX_MAX_RTT_MS}], got ${show(v)}`,
        );
      }
    });
  });
  if (problems.length > 0) throw new TopologyError(ERR_TOPOLOGY_MATRIX, problems);
  return { sites: s as string[], rttMs: rows as number[][] };
}

function show(v: unknown): string {
  return typeof v === 'number' ? String(v) : JSON.stringify(v);
}

/** A topology from a validated (or raw, or JSON-text) RTT matrix and an assignment of nodes to sites. */
export function matrixTopology(input: unknown, options: MatrixTopologyOptions): MatrixTopology {
  const matrix = parseRttMatrix(input);
  const n = matrix.sites.length;
  const siteIndex = new Map(matrix.sites.map((name, i) => [name, i]));
  const access = options.accessMs ?? 0;
  const problems: string[] = [];
  if (!(typeof options.seed === 'number' && Number.isInteger(options.seed))) {
    problems.push(`seed must be an integer, got ${String(options.seed)}`);
  }
  if (!(Number.isFinite(access) && access >= 0))
    problems.push(`accessMs must be ≥ 0, got ${access}`);
  let assignment: number[] = [];
  if (typeof options.nodes === 'number') {
    const count = options.nodes;
    if (!(Number.isInteger(count) && count >= 1 && count <= n * MATRIX_MAX_NODES_PER_SITE)) {
      problems.push(
        `nodes must be an integer in [1, ${n * MATRIX_MAX_NODES_PER_SITE}], got ${count}`,
      );
    } else {
      assignment = Array.from({ length: count }, (_, i) => i % n);
    }
  } else if (Array.isArray(options.nodes)) {
    options.nodes.forEach((name: string, i) => {
      const s = siteIndex.get(name);
      if (s === undefined) problems.push(`nodes[${i}]: unknown site ${JSON.stringify(name)}`);
      else assignment.push(s);
    });
    if (options.nodes.length === 0) problems.push('nodes is empty');
  } else {
    problems.push('nodes must be a count or an array of site names');
  }
  const perSite = new Array<number>(n).fill(0);
  for (const s of assignment) perSite[s]!++;
  perSite.forEach((c, s) => {
    if (c > MATRIX_MAX_NODES_PER_SITE) {
      problems.push(
        `site "${matrix.sites[s]}" has ${c} nodes, at most ${MATRIX_MAX_NODES_PER_SITE}`,
      );
    }
  });
  if (problems.length > 0) throw new TopologyError(ERR_TOPOLOGY_OPTIONS, problems);

  // Access delays are drawn from their own stream so they do not depend on the jitter stream.
  let x = (options.seed ^ 0x2545f491) >>> 0;
  const nextAccess = (): number => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return (x / 4294967296) * access;
  };
  const counters = new Array<number>(n).fill(0);
  const nodes: SimNode[] = [];
  const nodeSite: number[] = [];
  const nodeAccess: number[] = [];
  for (const s of assignment) {
    const k = counters[s]!++;
    const name = matrix.sites[s]!;
    nodes.push({ ip: `10.${s >> 8}.${s & 255}.${k + 1}`, site: name, metro: name, region: name });
    nodeSite.push(s);
    nodeAccess.push(nextAccess());
  }
  const sym = (i: number, j: number): number => (matrix.rttMs[i]![j]! + matrix.rttMs[j]![i]!) / 2;
  const topo = makeTopology(
    nodes,
    (a, b) => sym(nodeSite[a]!, nodeSite[b]!) + nodeAccess[a]! + nodeAccess[b]!,
    options,
  );
  return { ...topo, matrix };
}
