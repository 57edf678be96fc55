/**
 * What the stages of the request path share: the components and limits of one proxy (`ProxyCore`,
 * built once by `CoralProxy`) and the routed request (`RequestCtx`, built per request by
 * ../request/route.ts). Each stage is a small module taking these two.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '@coral/runtime';
import type { ContentIndex } from '../content-index.js';
import type { CacheRequest } from '../cache/decide.js';
import type { HeaderRecord, PolicyOptions } from '../cache/policy.js';
import type { Upstream } from '../origin/upstream.js';
import type { PeerAuth } from '../peer/auth.js';
import type { PeerConnector } from '../peer/connector.js';
import type { FleetMembers } from '../peer/members.js';
import type { CacheStore, StoredMeta } from '../store/types.js';
import type { HotCache } from '../hot/hot-cache.js';
import type { OptOuts } from '../site-control/opt-outs.js';
import type { FairShare } from '../fairness/fair-share.js';
import type { CommitCandidate, Logger, ProxyMetrics } from './types.js';
import type { AuditEvidence, MemberReport } from '../audit/quarantine.js';

export interface ProxyLimits {
  maxObjectBytes: number;
  hotObjectMaxBytes: number;
  peerTimeoutMs: number;
  peerFetchingTimeoutMs: number;
  peerRace: number;
  indexTimeoutMs: number;
  /** Bound on an origin's connect and response header (a designated member's fetch waits this long). */
  originTimeoutMs: number;
  /** The most freshness a member's copy is believed to have left (s, `PEER_MAX_TTL_SECONDS`). */
  peerMaxTtlSeconds: number;
  /** Member copies up to this size are checked whole before a byte is sent (`PEER_VERIFY_WHOLE_BYTES`). */
  peerVerifyWholeBytes: number;
}

export interface ProxyCore {
  clock: Clock;
  log: Logger;
  metrics: ProxyMetrics | undefined;
  index: ContentIndex;
  store: CacheStore;
  hot: HotCache;
  policy: PolicyOptions;
  /** Our Via member, `1.1 coral-<first 12 hex of nodeId>`. */
  via: string;
  /** This node as announced (httpPort filled in once listening). */
  self: { nodeId: string; ip: string; httpPort: number };
  /** The Coral zones (normalized as configured). */
  zones: readonly string[];
  /**
   * Staying on the CDN: the public port of the TLS listener (undefined while TLS is off) and
   * whether a same-URL http → https redirect is followed inside the proxy when TLS is off.
   */
  links: { tlsPort: number | undefined; followHttpsUpgrade: boolean };
  /** The fleet's members without those quarantined here (../audit/quarantine.ts). */
  members: FleetMembers | undefined;
  /** Is this member quarantined here (its answers and designation skipped)? */
  quarantined(nodeId: string): boolean;
  /** The sampled audit of member-served copies (keyed mode with members), or undefined. */
  audit: MemberAudit | undefined;
  peerAuth: PeerAuth | undefined;
  /**
   * This node's own address policy for an origin URL, for when a member is about to fetch it on
   * this node's behalf (SmartConnector.checkAddressPolicy): rejects with the ProxyError
   * `CORAL_ORIGIN_FORBIDDEN` when this node would refuse to connect to it.
   */
  checkOrigin(url: string): Promise<void>;
  /** undici agents for origins and for peers, and the peer socket policy. */
  origin: Upstream;
  peers: Upstream;
  peerConnector: PeerConnector;
  limits: ProxyLimits;
  /** Compress compressible responses once at commit (`ProxyOptions.compress`). */
  compress: boolean;
  /** Origins that asked the fleet to send their clients home (../site-control/). */
  optOuts: OptOuts;
  /** The bandwidth caps and per-domain counts: origin fetches, bytes served (../fairness/). */
  bandwidth: { origin: FairShare; served: FairShare };
  /** The store's last check before a commit (`ProxyComponents.admit`). */
  admit: ((candidate: CommitCandidate) => boolean | Promise<boolean>) | undefined;
  /** Fetch tasks in progress (transfer + commit), awaited by close(). */
  tasks: Set<Promise<void>>;
}

export interface RequestCtx {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  /** Coralized name, or a configured site (accelerator mode). */
  mode: 'coral' | 'site';
  /** The Coral zone of the Host (Coralized names). */
  zone?: string;
  /** The port the client used, when its Host named one. */
  clientPort?: number;
  /** The client reached us over TLS (the https listener). */
  tls: boolean;
  /** The proxy's public TLS port when TLS is on, and its plain-http port (for links). */
  tlsPort?: number;
  httpPort: number;
  /** Host header value as sent. */
  host: string;
  /** Normalized upstream URL. */
  url: string;
  /** The origin's host name (bandwidth shares and per-domain counts). */
  domain: string;
  /** Path and query of `url`. */
  path: string;
  /** Hex urlKey of `url`, and its bytes. */
  primary: string;
  keyBytes: Uint8Array;
  reqHeaders: HeaderRecord;
  /** The request as the cache policy sees it. */
  cache: CacheRequest;
  /** A peer request (peer marker header): served only from this node's cache or fetches. */
  peer: boolean;
}

/**
 * What the stages ask of the sampled audit of member copies (../audit/auditor.ts implements it):
 * a copy a member served, a member's report of a liar, and a lie this node proved itself while
 * completing a member's copy from the origin (../fetch/resume.ts).
 */
export interface MemberAudit {
  served(member: string, ctx: RequestCtx, copy: StoredMeta): void;
  reported(report: MemberReport, reporter: string): void;
  proven(member: string, ctx: RequestCtx, evidence: AuditEvidence): void;
}
