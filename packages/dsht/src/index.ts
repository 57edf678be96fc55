/**
 * @coral/dsht — Coral's distributed sloppy hash table.
 *
 * Kademlia-style routing per cluster level, Coral's sloppy put (forward probe, reverse store) and
 * get (stop at the first holder), rate limits that keep hot keys from melting one node, any
 * `Transport` (UDP here; the simulated network, topologies and fleet launcher are `@coral/sim`, which
 * no shipped package uses), LevelDB persistence. See docs/dsht.md.
 *
 * ```ts
 * import { Dsht, keyFromName } from '@coral/dsht';
 * import { Keyring } from '@coral/keyring';
 * const keyring = Keyring.parse(process.env.CORAL_FLEET_KEYS!.split(',')); // keyed mode
 * const node = await Dsht.open(
 *   { bind: { host: '127.0.0.2', port: 8091 }, dataDir: './data/dsht' },
 *   { keyring },
 * );
 * node.on('isolated', (s) => log.error(s.reason)); // the fleet's keys changed without us
 * await node.start({ bootstrap: ['127.0.0.3:8091'] });
 * const key = keyFromName('url:http://example.com/a.jpg');
 * await node.put(key, new TextEncoder().encode('holder info'), 3600);
 * const { values, stats } = await node.get(key); // stats: hops, messages, level, answeredBy, latencyMs
 * node.members(); node.member(idHex); node.authState(); // verified members, trust counters
 * await node.stop();
 * ```
 *
 * This is what a node's users need (the node package, simulations, benchmarks). The parts a node is
 * built from — RPC layer, authenticator, tokens, limiter, registry, SWIM, routing table, value
 * store, codec, persistence, cluster manager — are `@coral/dsht/internal`, for the simulator, the
 * benchmarks and tests only.
 */
export { Dsht } from './dsht.js';
export type {
  ClusterPolicy,
  DshtAuthState,
  DshtComponents,
  DshtEvents,
  DshtMember,
  DshtOptions,
  DshtSnapshot,
  FailureDetectionState,
  GetResult,
  LookupStats,
  PutResult,
} from './types.js';
export type { Address, ClusterAdvert, Contact, ServiceInfo } from './contact.js';
export type { KeyNoticesOptions, KeyRejection } from './auth/key-notices.js';
export type { FindNodeOptions } from './lookup/find-node.js';
export type { GetOptions, GetProbe } from './lookup/get.js';
export type { PutOptions } from './lookup/put.js';
export type { LookupEvent } from './lookup/lookup.js';
export type { FailureDetectionOptions, MemberChange } from './membership/failure-detector.js';
export type { DshtMetrics, Logger } from './rpc/rpc.js';
export type { KeyValueDb } from './persistence/persistence.js';
export { UdpTransport, type DatagramHandler, type Transport } from './transport/index.js';
export {
  DEFAULT_LEVEL_THRESHOLDS_MS,
  ID_BYTES,
  LEVEL_COUNT,
  MAX_TTL_SECONDS,
  MAX_VALUE_BYTES,
} from './constants.js';
export {
  AbortedError,
  DshtError,
  ERROR_CODES,
  InvalidArgumentError,
  MalformedMessageError,
  MessageTooLargeError,
  NotRunningError,
  PutRejectedError,
  RemoteError,
  RpcTimeoutError,
  TransportError,
} from './errors.js';
export {
  compareDistance,
  fromHex,
  idEquals,
  keyFromName,
  nodeIdFor,
  toHex,
  type Id,
} from './id/id.js';
export { networkHintKeys, regionHintKey, type HintKey } from './directory/hints.js';
// Clustering (levels 1 and 2, `DshtOptions.clustering`): see docs/dsht-clustering.md.
export type {
  ClusterManager,
  ClusterManagerOptions,
  ClusterSnapshot,
  DshtClusterBinding,
  DshtClusterBindingOptions,
} from './cluster/index.js';
