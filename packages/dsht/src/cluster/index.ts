/**
 * Coral's epidemic clustering: robust per-peer RTT estimates and the per-level cluster decisions
 * built on them. `DshtClusterBinding` wires a manager into the `Dsht` node that owns it:
 *
 * ```ts
 * const node = new Dsht({ transport, clock, random }, { levels: 3, clustering: {} });
 * await node.start({ bootstrap });
 * node.clustering!.manager.clusterOf(2);
 * ```
 *
 * What the binding does, for another host:
 *
 * ```ts
 * const clusters = new ClusterManager({ clock, random }, { selfId: myId });
 * clusters.on('change', ({ level }) => rebuildRoutingTable(level));
 * // on every answered RPC:      clusters.onRttSample(peerId, rttMs)
 * // on every message received:  clusters.onAdvertisement(peerId, msg.sender.clusters ?? [])
 * // on every message sent:      sender.clusters = clusters.advertisement()
 * // when a contact is dropped:  clusters.onPeerGone(peerId)
 * clusters.start(); // or call clusters.tick() from the node's own timer; ping clusters.probeTargets(4)
 * ```
 */
export {
  type ClusterAd,
  type ClusterChange,
  type ClusterManagerComponents,
  type ClusterManagerOptions,
  type ClusterSnapshot,
  type ClusterLevelSnapshot,
  ClusterManager,
  DEFAULT_CLUSTER_THRESHOLDS_MS,
  CLUSTER_LEAVE_MARGIN,
  CLUSTER_JOIN_FRACTION,
  CLUSTER_LEAVE_FRACTION,
  CLUSTER_MIN_MEMBERS_SAMPLED,
  CLUSTER_MIN_PEER_SAMPLES,
  CLUSTER_CONFIRM_TICKS,
  CLUSTER_MIN_DWELL_MS,
  CLUSTER_PEER_TTL_MS,
  CLUSTER_MAX_PEERS,
  CLUSTER_ID_BYTES,
  CLUSTER_AGE_TIE_MS,
  CLUSTER_SIZE_TIE_FRACTION,
  CLUSTER_TICK_MS,
  CLUSTER_REPROBE_MS,
  CLUSTER_MAX_ADVERTISED_SIZE,
  CLUSTER_MAX_ADVERTISED_AGE_S,
} from './cluster-manager.js';
export {
  type DshtClusterBindingComponents,
  type DshtClusterBindingOptions,
  DshtClusterBinding,
  CLUSTER_PROBES_PER_TICK,
  CLUSTER_ANNOUNCE,
  CLUSTER_EXPLORE_ALONE_MS,
  CLUSTER_EXPLORE_MS,
  peerKey,
} from './dsht-binding.js';
export {
  type RttEstimatorOptions,
  type RttEstimatorComponents,
  type RttEstimate,
  RttEstimator,
  medianOf,
  RTT_WINDOW,
  RTT_MAX_AGE_MS,
  RTT_MAX_PEERS,
} from './rtt.js';
export {
  ClusterError,
  ERR_CLUSTER_OPTIONS,
  ERR_BAD_RTT,
  ERR_BAD_LEVEL,
  CLUSTER_ERROR_CODES,
} from './errors.js';
