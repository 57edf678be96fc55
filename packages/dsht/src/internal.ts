/**
 * @coral/dsht/internal — the parts a DSHT node is built from, for the simulator (`@coral/sim`),
 * the benchmarks and tests: everything `@coral/dsht` exports, plus the RPC layer, authenticator,
 * tokens, limits, member registry, SWIM, routing table, value store, wire codec, persistence and
 * cluster manager. Not an API: what is here follows the node's wiring.
 */
export * from './index.js';
export * from './constants.js';
export { throwIfAborted } from './errors.js';
export { mergeContact, parseAddress, selfContact } from './contact.js';
export { NodeContext, type NodeContextComponents, type NodeEvents } from './context.js';
export { commonPrefixLength, randomIdInBucket, sha1, xor } from './id/id.js';
// Datagram authentication, write tokens, per-source limits.
export {
  DatagramAuth,
  emptyAuthCounters,
  type AuthCounters,
  type AuthDrop,
  type AuthMode,
  type DatagramAuthComponents,
  type DatagramAuthOptions,
  type IsolationState,
} from './auth/datagram-auth.js';
export {
  KeyNotices,
  emptyKeyNoticeCounters,
  type KeyNoticeCounters,
  type KeyNoticesComponents,
} from './auth/key-notices.js';
export { WriteTokens, PeerTokens } from './rpc/tokens.js';
export {
  SourceLimiter,
  GlobalBucket,
  type RateLimit,
  type RateLimits,
  type SourceLimiterOptions,
} from './limits/rate-limiter.js';
export { hostKey, netKey } from './limits/address.js';
// The RPC layer and what a node gives it.
export {
  Rpc,
  RttTable,
  emptyCounters,
  type RequestHandler,
  type RpcComponents,
  type RpcCounters,
  type RpcObserver,
  type RpcOptions,
  type RpcReply,
} from './rpc/index.js';
export { createNodeRpc, type NodeRpcHooks } from './rpc/node-rpc.js';
export {
  NodeHandlers,
  dispatch,
  type HandlerContext,
  type NodeHandlersComponents,
  type RequestSource,
} from './rpc/handlers/index.js';
// Members, failure detection, routing tables.
export {
  PeerRegistry,
  type MemberRecord,
  type PeerRegistryComponents,
  type PeerRegistryOptions,
} from './membership/registry.js';
export { Peers, type PeersComponents, type PeersOptions } from './membership/peers.js';
export { MembershipObserver } from './membership/rpc-observer.js';
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
  type FailureDetectorComponents,
  type FailureDetectorCounters,
} from './membership/failure-detector.js';
export {
  RoutingTable,
  type RoutingEntry,
  type RoutingTableOptions,
} from './routing-table/routing-table.js';
// Values, the wire, persistence.
export {
  ValueStore,
  entryKey,
  toWireValue,
  type StoreChange,
  type StoredValue,
  type StoreOrigin,
  type ValueStoreComponents,
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
export { lookup, type LookupOptions, type Visit } from './lookup/lookup.js';
export { Persistence, LEGACY_SOURCE, type PersistedContact } from './persistence/persistence.js';
export { restoreState, saveContacts, writeThrough } from './persistence/node-state.js';
export { openLevelDb, type LevelDbOptions } from './persistence/level.js';
export { hintKeysFor, encodeNodeRecord, decodeNodeRecord } from './directory/hints.js';
// Clustering: the manager, the binding, RTT estimates (docs/dsht-clustering.md).
export * from './cluster/index.js';
// Named again: index.ts exports these as types only, and an explicit export wins over `export *`.
export { ClusterManager, DshtClusterBinding } from './cluster/index.js';
