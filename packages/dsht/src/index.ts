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
 */
export { Dsht } from './dsht.js';
export type {
  DshtComponents,
  DshtOptions,
  DshtSnapshot,
  GetResult,
  PutResult,
  LookupStats,
  ClusterPolicy,
  DshtMember,
  FailureDetectionState,
  DshtAuthState,
} from './types.js';
export type { Contact, ClusterAdvert, ServiceInfo, Address } from './contact.js';
export { mergeContact } from './contact.js';
export {
  DatagramAuth,
  emptyAuthCounters,
  type AuthCounters,
  type AuthDrop,
  type AuthMode,
  type IsolationState,
  type DatagramAuthOptions,
} from './auth/datagram-auth.js';
export { WriteTokens, PeerTokens } from './rpc/tokens.js';
export {
  SourceLimiter,
  GlobalBucket,
  type RateLimit,
  type RateLimits,
  type SourceLimiterOptions,
} from './limits/rate-limiter.js';
export { hostKey, netKey } from './limits/address.js';
export {
  PeerRegistry,
  type MemberRecord,
  type PeerRegistryOptions,
} from './membership/registry.js';
export {
  Swim,
  SWIM_PROBE_INTERVAL_MS,
  SWIM_PROBE_TIMEOUT_MS,
  SWIM_INDIRECT_PROBES,
  SWIM_GOSSIP_INTERVAL_MS,
  SWIM_GOSSIP_NODES,
  SWIM_SUSPICION_MULT,
  SWIM_MIN_SUSPICION_MS,
  SWIM_RETRANSMIT_MULT,
  type SwimState,
  type SwimUpdate,
  type SwimOptions,
} from './membership/swim.js';
export {
  FailureDetector,
  type FailureDetectionOptions,
  type FailureDetectorCounters,
  type MemberChange,
} from './membership/failure-detector.js';
export * from './constants.js';
export * from './errors.js';
export {
  keyFromName,
  nodeIdFor,
  toHex,
  fromHex,
  xor,
  compareDistance,
  commonPrefixLength,
  idEquals,
  sha1,
  type Id,
} from './id/id.js';
export {
  RoutingTable,
  type RoutingEntry,
  type RoutingTableOptions,
} from './routing-table/routing-table.js';
export {
  ValueStore,
  entryKey,
  toWireValue,
  type StoredValue,
  type StoreOrigin,
  type ValueStoreOptions,
} from './store/value-store.js';
export { fmix32 } from './store/slot-index.js';
export {
  encode,
  decode,
  encodePayload,
  decodePayload,
  TypeCode,
  Flag,
  type EncodeOptions,
} from './wire/codec.js';
export type {
  Message,
  Envelope,
  MemberState,
  Request,
  Response,
  WireMemberUpdate,
  WireValue,
} from './wire/messages.js';
export { StoreStatus, WireErrorCode } from './wire/messages.js';
export { Rpc, RttTable, type DshtMetrics, type Logger, type RpcCounters } from './rpc/index.js';
export { lookup, type LookupEvent, type LookupOptions, type Visit } from './lookup/lookup.js';
export { type Transport, type DatagramHandler, UdpTransport } from './transport/index.js';
export { Persistence, LEGACY_SOURCE, type KeyValueDb } from './persistence/persistence.js';
export {
  DshtDirectory,
  toNodeInfo,
  type DirectoryNode,
  type DirectoryHintResult,
  type DshtDirectoryComponents,
  type DshtDirectoryOptions,
} from './directory/node-directory.js';
export {
  networkHintKeys,
  regionHintKey,
  hintKeysFor,
  encodeNodeRecord,
  decodeNodeRecord,
  type HintKey,
} from './directory/hints.js';
// Clustering (levels 1 and 2): see docs/dsht-clustering.md.
export {
  ClusterManager,
  DshtClusterBinding,
  RttEstimator,
  type ClusterAd,
  type ClusterChange,
  type ClusterSnapshot,
  type ClusterManagerOptions,
  type DshtClusterBindingOptions,
} from './cluster/index.js';
