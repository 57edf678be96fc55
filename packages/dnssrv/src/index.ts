/**
 * @coral/dnssrv — Coral's authoritative DNS redirector.
 *
 * Answers `www.example.com.nyud.net` (and `www.example.com.8080.nyud.net`) with the healthy
 * proxies nearest the resolver, located by views, EDNS Client Subnet, measured RTT, locality
 * hints or at random; answers a CNAME to the origin when no proxy is live. It only knows the
 * fleet through the {@link NodeDirectory} interface.
 *
 * ```ts
 * import { DnsServer, InMemoryNodeDirectory } from '@coral/dnssrv';
 *
 * const directory = new InMemoryNodeDirectory({}, { self: { id: 'a'.repeat(40), ipv4: '127.0.0.1', httpPort: 8090 } });
 * const server = new DnsServer({ directory }, { zones: ['nyud.net'], nameservers: [{ name: 'ns1.nyud.net', ipv4: '127.0.0.1' }] });
 * const { port } = await server.listen({ port: 5353, host: '127.0.0.1' });
 * // dig @127.0.0.1 -p 5353 www.example.com.nyud.net A
 * await server.close();
 * ```
 */
export type { NodeDirectory, NodeInfo, HintResult } from './node-directory.js';
export {
  InMemoryNodeDirectory,
  DEFAULT_LEVEL_THRESHOLDS_MS,
  type InMemoryNodeOptions,
  type InMemoryNodeDirectoryOptions,
} from './directory/in-memory.js';
export {
  ReplicaNodeDirectory,
  snapshotDirectory,
  sameSnapshot,
  type DirectorySnapshot,
  type ReplicaNodeDirectoryComponents,
} from './directory/replica.js';
export { DnsServer, type DnsStats } from './server/dns-server.js';
export * from './server/types.js';
export { DEFAULT_ANSWER_CACHE_MAX_BYTES } from './cache/answer-cache.js';
export {
  type Prober,
  TcpConnectProber,
  type TcpConnectProberOptions,
  type TcpConnectProberComponents,
  DEFAULT_PROBE_PORT,
  DEFAULT_PROBE_TIMEOUT_MS,
} from './probe/prober.js';
export {
  ResolverProbes,
  type ProbeEntry,
  type ResolverProbesOptions,
  DEFAULT_PROBE_TTL_MS,
  DEFAULT_PROBE_FAILURE_TTL_MS,
  DEFAULT_PROBE_MAX_IN_FLIGHT,
  DEFAULT_PROBE_MAX_PER_SECOND,
  DEFAULT_PROBE_MAX_ENTRIES,
} from './probe/resolver-probes.js';
export {
  HintWalks,
  type HintWalkOptions,
  type HintLookup,
  DEFAULT_HINT_CACHE_TTL_MS,
  DEFAULT_HINT_NEGATIVE_TTL_MS,
  DEFAULT_HINT_WALKS_PER_SECOND,
  DEFAULT_HINT_MAX_IN_FLIGHT,
  DEFAULT_HINT_WALK_TIMEOUT_MS,
  DEFAULT_HINT_CACHE_ENTRIES,
} from './locate/hint-walks.js';
export {
  DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE,
  DEFAULT_TCP_IPV4_PREFIX,
  DEFAULT_TCP_IPV6_PREFIX,
} from './server/tcp.js';
export {
  ResponseRateLimiter,
  type RrlOptions,
  type RrlKind,
  type RrlVerdict,
  DEFAULT_RRL_RESPONSES_PER_SECOND,
  DEFAULT_RRL_SLIP,
  DEFAULT_RRL_IPV4_PREFIX,
  DEFAULT_RRL_IPV6_PREFIX,
  DEFAULT_RRL_MAX_ACCOUNTS,
} from './rrl/response-rate-limiter.js';
export {
  decodeQuery,
  questionLabels,
  type Query,
  type DecodeResult,
  type EcsOption,
  type OptRecord,
} from './wire/query.js';
export { TYPE, CLASS, RCODE, RCODE_NAME } from './wire/constants.js';
export {
  type ChallengeStore,
  type ChallengeEntry,
  InMemoryChallengeStore,
  type InMemoryChallengeStoreOptions,
  DEFAULT_CHALLENGE_TTL_MS,
  DEFAULT_MAX_CHALLENGES_PER_ZONE,
  MAX_CHALLENGE_TTL_MS,
  MAX_CHALLENGE_VALUE_LENGTH,
} from './acme/challenge-store.js';
export {
  DnsError,
  DnsChallengeError,
  DnsConfigError,
  DnsListenError,
  DnsStateError,
  DNS_ERROR_CODES,
} from './errors.js';
