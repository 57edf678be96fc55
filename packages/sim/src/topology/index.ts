/**
 * Latency models for the simulated network: a geographic generator (regions → metros → nodes),
 * a loader for measured all-pairs RTT matrices, and the cluster-purity measure.
 *
 * ```ts
 * const topo = geoTopology({ seed: 1, regions: 3, metrosPerRegion: 2, nodes: 60 });
 * const net = new SimNetwork({ clock, random }, { latencyMs: topo.latencyMs });
 * purityReport(2, assignment, topo.baseRttMs, 20).purity; // 1.0 when no cluster spans metros
 * ```
 */
export {
  type SimNode,
  type Topology,
  type JitterOptions,
  makeTopology,
  TOPOLOGY_JITTER,
  TOPOLOGY_SPIKE_PROBABILITY,
  TOPOLOGY_SPIKE_MS,
} from './topology.js';
export {
  type GeoTopologyOptions,
  type GeoTopology,
  type GeoNode,
  geoTopology,
  GEO_METRO_RTT_MS,
  GEO_REGION_RTT_MS,
  GEO_WORLD_RTT_MS,
  GEO_ACCESS_MS,
  GEO_MAX_NODES_PER_METRO,
} from './geo.js';
export {
  type RttMatrix,
  type MatrixTopologyOptions,
  type MatrixTopology,
  parseRttMatrix,
  matrixTopology,
  MATRIX_MAX_SITES,
  MATRIX_MAX_NODES_PER_SITE,
  MATRIX_MAX_RTT_MS,
} from './matrix.js';
export {
  type ClusterAssignment,
  type PurityReport,
  purityReport,
  clusterPurity,
} from './purity.js';
export { type FixedClusters, type FixedClustersOptions, fixedClusters } from './fixed-clusters.js';
export {
  TopologyError,
  ERR_TOPOLOGY_OPTIONS,
  ERR_TOPOLOGY_MATRIX,
  ERR_TOPOLOGY_UNKNOWN_IP,
  TOPOLOGY_ERROR_CODES,
} from './errors.js';
