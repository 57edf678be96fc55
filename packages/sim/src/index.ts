/**
 * @coral/sim — a Coral fleet in one process, for tests and benchmarks. No shipped package
 * depends on it: `@coral/dsht` holds what a node runs, this package holds what only a simulation
 * or a test harness needs.
 *
 * - `SimNetwork` / `SimTransport`: an in-memory datagram network (latency model, loss, partitions)
 *   driven by an injected clock, implementing `@coral/dsht`'s `Transport`;
 * - topologies: `geoTopology` (regions → metros → nodes), `matrixTopology` (a measured RTT matrix)
 *   and the cluster-purity measure;
 * - `SimClock`: testkit's `ManualClock` contract at the cost millions of timers need;
 * - `SimFleet`: n `Dsht` nodes on a `SimNetwork` with a `SimClock`, joined and driven
 *   deterministically (`run(promise)` advances simulated time until the promise settles);
 * - `bin/dsht-node`: one DSHT node as a process over real UDP, driven by JSON lines on stdin/stdout
 *   (the multi-process tests' launcher).
 *
 * ```ts
 * import { SimFleet, geoTopology } from '@coral/sim';
 * import { keyFromName } from '@coral/dsht';
 * const topo = geoTopology({ seed: 1, regions: 4, metrosPerRegion: 5, nodes: 1000 });
 * const fleet = new SimFleet({ nodes: 1000, seed: 1, latencyMs: topo.latencyMs,
 *                              ipOf: (i) => topo.nodes[i]!.ip, keys: [fleetKeyHex] });
 * await fleet.start();
 * const key = keyFromName('url:http://example.com/a.jpg');
 * await fleet.run(fleet.nodes[3]!.put(key, bytes, 3600));
 * const { values, stats } = await fleet.run(fleet.nodes[7]!.get(key));
 * ```
 *
 * See docs/dsht.md ("Simulation") and docs/dsht-clustering.md (topologies).
 */
export {
  SimNetwork,
  SimTransport,
  uniformRttLatency,
  type LatencyModel,
  type RemoteRoute,
  type SimStats,
  type SimNetworkComponents,
  type SimNetworkOptions,
} from './network/sim-network.js';
export { SimClock, SIM_CLOCK_TURNS } from './clock/sim-clock.js';
export { SimFleet, defaultIp, type SimFleetOptions } from './fleet/fleet.js';
export * from './topology/index.js';
export { ParallelFleet, type ParallelFleetOptions } from './parallel/parallel-fleet.js';
export { LocalFleetDriver, type FleetDriver } from './parallel/driver.js';
export {
  Shard,
  SIM_EPOCH,
  type ShardConfig,
  type StepMessage,
  type StepReply,
  type TraceEntry,
} from './parallel/shard.js';
export {
  trustPart,
  mergeTrust,
  type FleetOp,
  type OpResult,
  type GetFigures,
  type TrustPart,
} from './parallel/ops.js';
