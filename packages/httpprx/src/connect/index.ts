/**
 * The origin connector: SmartConnect (race every address of an origin, cache the winner), the
 * address policy that keeps the proxy out of private networks, resolvers and a negative cache.
 *
 * ```ts
 * const connector = new SmartConnector({}, { timeoutMs: 10_000 });
 * const agent = new Agent({ connect: connector.undiciConnect() });
 * await request('http://www.example.com/', { dispatcher: agent });
 * ```
 */
export {
  SmartConnector,
  netDial,
  originKey,
  DEFAULT_CACHE_SIZE,
  DEFAULT_CACHE_TTL_MS,
  DEFAULT_FLOOR_MS,
  DEFAULT_UNDICI_CONNECT_TIMEOUT_MS,
  DEFAULT_CONNECT_NEGATIVE_TTL_MS,
  type Dial,
  type DialTarget,
  type SmartConnectorComponents,
  type SmartConnectorOptions,
  type ConnectOptions,
  type CacheSnapshotEntry,
  type ConnectStats,
  type UndiciConnectOptions,
  type UndiciConnector,
} from './smart-connect.js';
export {
  SystemResolver,
  HostsResolver,
  normalizeHost,
  literalAddress,
  assertValidHost,
  type Resolver,
  type ResolvedAddress,
  type HostsMap,
  type LookupAll,
} from './resolver.js';
export {
  classifyAddress,
  classifyIPv4,
  classifyIPv6,
  parseIPv4,
  parseIPv6,
  isAddressAllowed,
  filterAddresses,
  DEFAULT_REFUSED_CLASSES,
  ALWAYS_REFUSED_CLASSES,
  type AddressClass,
  type AddressPolicyOptions,
} from './address-policy.js';
export {
  NegativeCache,
  DEFAULT_NEGATIVE_TTL_MS,
  DEFAULT_NEGATIVE_MAX_ENTRIES,
  type NegativeEntry,
  type NegativeCacheOptions,
} from './negative-cache.js';
export {
  OriginConnectError,
  OriginAddressUnavailableError,
  OriginResolveError,
  OriginTimeoutError,
  OriginForbiddenError,
  OriginUnreachableError,
  InvalidOriginError,
  OriginNegativelyCachedError,
  ConnectAbortedError,
  CONNECT_ERROR_CODES,
  errorCode,
  type RefusedAddress,
} from './errors.js';
