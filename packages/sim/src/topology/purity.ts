/**
 * Cluster purity: of all pairs of nodes that share a cluster at a level, the fraction whose
 * (jitter-free) RTT is under the level's threshold. 1.0 means no cluster holds a pair that is too
 * far apart. Purity alone is satisfied by never clustering at all (no pairs: purity 1), so reports
 * also give the number of clusters and pairs.
 */

/** Node id (or ip) → its cluster id at every level (index = level), e.g. from `clusterOf(level)`. */
export type ClusterAssignment = ReadonlyMap<string, readonly string[]>;

export interface PurityReport {
  level: number;
  thresholdMs: number;
  /** Distinct clusters at this level among the assigned nodes. */
  clusters: number;
  /** Size of the largest cluster. */
  largest: number;
  /** Same-cluster pairs. */
  pairs: number;
  /** Same-cluster pairs whose base RTT is under the threshold. */
  purePairs: number;
  /** purePairs / pairs (1 when there are no pairs). */
  purity: number;
}

/** The full purity report of one level. Throws a RangeError if a node has no cluster at `level`. */
export function purityReport(
  level: number,
  assignment: ClusterAssignment,
  baseRtt: (a: string, b: string) => number,
  thresholdMs: number,
): PurityReport {
  const byCluster = new Map<string, string[]>();
  for (const [node, ids] of assignment) {
    const id = ids[level];
    if (id === undefined) throw new RangeError(`node ${node} has no cluster at level ${level}`);
    let g = byCluster.get(id);
    if (!g) byCluster.set(id, (g = []));
    g.push(node);
  }
  let pairs = 0;
  let purePairs = 0;
  let largest = 0;
  for (const members of byCluster.values()) {
    largest = Math.max(largest, members.length);
    for (let i = 0; i < members.length; i++) {
      for (let j = i + 1; j < members.length; j++) {
        pairs++;
        if (baseRtt(members[i]!, members[j]!) < thresholdMs) purePairs++;
      }
    }
  }
  return {
    level,
    thresholdMs,
    clusters: byCluster.size,
    largest,
    pairs,
    purePairs,
    purity: pairs === 0 ? 1 : purePairs / pairs,
  };
}

/** Fraction of same-cluster pairs at `level` whose base RTT is under `thresholdMs`. */
export function clusterPurity(
  level: number,
  assignment: ClusterAssignment,
  baseRtt: (a: string, b: string) => number,
  thresholdMs: number,
): number {
  return purityReport(level, assignment, baseRtt, thresholdMs).purity;
}
