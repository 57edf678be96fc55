/**
 * @coral/httpprx — Coral's cooperative caching HTTP proxy.
 *
 * Clients ask for `https://www-example-com.nyud.net/a.jpg` (or the legacy http form
 * `http://www.example.com.nyud.net/a.jpg`); the proxy maps the name to the origin
 * (`https://www.example.com/a.jpg`), serves it from its RFC 9111 cache, from another proxy of the
 * fleet that holds it (found through a `ContentIndex`), or from the origin — about once for the
 * whole fleet — streaming to every waiting client while it stores.
 *
 * ```ts
 * import { CoralProxy, InMemoryContentIndex } from '@coral/httpprx';
 *
 * const proxy = new CoralProxy(
 *   // add `members` (the fleet's verified members) to fetch from peers, `peerAuth` to sign
 *   // and check node-to-node requests
 *   { index: new InMemoryContentIndex() },
 *   { zones: ['nyud.net'], dataDir: './data/http', self: { nodeId: 'ab'.repeat(20), ip: '127.0.0.1', httpPort: 8090 } },
 * );
 * await proxy.listen(8090);
 * await proxy.listenTls({ port: 8443, cert: wildcardChainPem, key: keyPem }); // *.nyud.net
 * proxy.setTlsCertificate({ cert: renewedChainPem, key: renewedKeyPem });     // on SIGHUP
 * // curl -H 'Host: www.example.com.nyud.net' http://127.0.0.1:8090/
 * ```
 */
export type { ClaimResult, ContentIndex, Holder, SiteControlRecord } from './content-index.js';
export { parseCoralControl, CORAL_CONTROL_HEADER } from './site-control/coral-control.js';
export type { CoralControl } from './site-control/coral-control.js';
export { siteKey, siteOf } from './site-control/opt-outs.js';
export { InMemoryContentIndex } from './memory-index.js';
export type { PeerAuth } from './peer/auth.js';
export type { FleetMembers, LiveMember } from './peer/members.js';
export { chooseFetcher, designatedHere, rendezvousRank, topMember } from './peer/rendezvous.js';
export type { FetcherChoice } from './peer/rendezvous.js';
export { InMemoryFleetMembers } from './peer/memory-members.js';
export { CoralProxy } from './proxy/coral-proxy.js';
export type { MemberReport } from './audit/quarantine.js';
export type { AuditEvidence, QuarantineEntry, SuspectEntry } from './audit/quarantine.js';
export type { AuditedCopy, Disagreement, Verdict } from './audit/verdict.js';
export { judge } from './audit/verdict.js';
export type { TrafficShare } from './proxy/coral-proxy.js';
export { FairShare, OTHER_DOMAIN } from './fairness/fair-share.js';
export type { DomainTraffic, FairShareOptions } from './fairness/fair-share.js';
export type {
  CacheListEntry,
  CacheStats,
  CacheTierStats,
  CommitCandidate,
  GateRefusal,
  GateRequest,
  Logger,
  OriginGate,
  ProxyComponents,
  ProxyMetrics,
  ProxyOptions,
  Resolver,
  TlsCertificate,
  TlsListenOptions,
} from './proxy/types.js';
export {
  ORIGIN_BOUND_FIELDS,
  coralLink,
  cookieForClient,
  sameUrlUpgrade,
} from './mapping/links.js';
export type { LinkContext } from './mapping/links.js';
export { coralize, normalizeUrl, originUrl, parseCoralHost, urlKey } from './mapping/coral-name.js';
export type { CoralTarget } from './mapping/coral-name.js';
export { ERROR_CODES, ProxyError, isProxyError } from './errors.js';
export type { ErrorCode } from './errors.js';
export * from './constants.js';
export type {
  BodyWriter,
  CacheStore,
  StoredListing,
  StoredMeta,
  StoredSummary,
} from './store/types.js';
export { MemoryStore } from './store/memory-store.js';
export { DiskStore } from './store/disk-store.js';
