/** The public types of the proxy: its components, options, metrics sink and cache listing. */
import type { AccessRecord } from '@coral/accesslog';
import type { ConnectionBudget, ListenerLimits } from '@coral/connguard';
import type { Clock } from '@coral/runtime';
import type { Dial, Resolver } from '../connect/index.js';
import type { ContentIndex } from '../content-index.js';
import type { PeerAuth } from '../peer/auth.js';
import type { FleetMembers } from '../peer/members.js';
import type { BodyFiles } from '../store/disk-store.js';
import type { MemberReport } from '../audit/quarantine.js';
import type { CommitCandidate, Logger, OriginGate, ProxyMetrics } from '../kit/types.js';
import type { QuarantineEntry } from '../audit/quarantine.js';

export type {
  CommitCandidate,
  GateRefusal,
  GateRequest,
  Logger,
  OriginGate,
  ProxyMetrics,
} from '../kit/types.js';
export type { Resolver } from '../connect/index.js';

export interface ProxyComponents {
  index: ContentIndex;
  clock?: Clock;
  logger?: Logger;
  metrics?: ProxyMetrics;
  resolver?: Resolver;
  /**
   * How origin and peer TCP connections are opened (default net.connect); tests record attempts
   * with it.
   */
  dial?: Dial;
  /**
   * The fleet's verified live members. A peer fetch goes only to `members.member(holder.nodeId)`
   * at the address given there, never to an address from a holder record. Absent: no peer fetch
   * at all (the proxy still announces what it holds).
   */
  members?: FleetMembers;
  /**
   * Authentication of node-to-node requests: outgoing peer requests carry `Coral-Peer-Auth` from
   * `sign`; an incoming peer request (peer marker header) that does not `verify` gets 403
   * `CORAL_PEER_UNAUTHORIZED`. Absent: peer requests are neither signed nor checked.
   */
  peerAuth?: PeerAuth;
  /**
   * The last word before a fetched response is stored (C1: a purge must not be undone by a fetch
   * in flight). Called with the response's URL, stored header fields and the clock time its
   * upstream request was sent, right before the commit and once more right after it; `false`
   * (either time) and it is not kept — the clients that asked still get it. The node answers
   * from its purge log: false when a purge matching it was applied at or after `fetchStartedAt`.
   * Absent: every storable response is kept.
   */
  admit?: (candidate: CommitCandidate) => boolean | Promise<boolean>;
  /**
   * The origin gate: asked by `route()` with the origin each request names, once the Host is
   * mapped (a configured site's origin, or the Coralized name decoded), before any cache lookup,
   * peer or origin fetch; a refusal is answered with its status and code (`GateRefusal`). Peer
   * requests pass it too. The node's blocklist is such a gate. Absent: every origin goes on.
   */
  gate?: OriginGate;
  /**
   * The node-wide connection budget (@coral/connguard) the HTTP and HTTPS listeners register with
   * (as `http` and `https`): its ceiling and shedding span every listener of the node. Absent: a
   * budget of the proxy's own, with no ceiling, on the system clock.
   */
  connections?: ConnectionBudget;
  /**
   * How the disk store opens and renames body files (default `node:fs/promises`); tests inject
   * EMFILE / ENOSPC here. Only with `dataDir`.
   */
  bodyFiles?: BodyFiles;
  /** Draws for the audit's sampling, in [0, 1) (default Math.random). */
  random?: () => number;
  /**
   * A member was quarantined on this node's own evidence (../audit/): the node package reports it
   * to the fleet, signed (other members then check it themselves: `CoralProxy.memberReported`).
   */
  onQuarantine?: (report: MemberReport, entry: QuarantineEntry) => void;
  /**
   * One access record per request (@coral/accesslog's `AccessRecord`), handed over when its
   * response ends or its client leaves: hits, misses, peer fetches, errors, refusals, aborted
   * transfers (./access.ts). Absent: nothing is measured.
   */
  onAccess?: (record: AccessRecord) => void;
}

export interface ProxyOptions {
  /** Zones whose subdomains are Coralized names. Default `DEFAULT_ZONES` (src/constants.ts). */
  zones?: string[];
  /**
   * Site (accelerator) mode: host name → origin URL (`http://origin.example:8080`); only its
   * scheme, host and port are used, request paths always stay on that origin.
   */
  sites?: Record<string, string>;
  /** Directory for the disk store; absent = memory-only store. */
  dataDir?: string;
  /** Disk byte budget. Default `DISK_BUDGET_BYTES` (src/constants.ts). */
  diskBudgetBytes?: number;
  /** Memory byte budget (hot objects, or the whole cache without dataDir). Default `MEMORY_BUDGET_BYTES` (src/constants.ts). */
  memoryBudgetBytes?: number;
  /** Objects up to this size are also kept in memory. Default `HOT_OBJECT_MAX_BYTES` (src/constants.ts). */
  hotObjectMaxBytes?: number;
  /** Largest object fetched and stored. Default `MAX_OBJECT_BYTES` (src/constants.ts). */
  maxObjectBytes?: number;
  /**
   * Compress compressible responses sent uncompressed once, at commit, and serve each client the
   * coding it accepts (../kit/encoding.ts, docs/httpprx.md "Compression"). Default true.
   */
  compress?: boolean;
  /** Freshness for responses with neither explicit expiry nor Last-Modified (s). Default 0 = off. */
  defaultTtlSeconds?: number;
  /**
   * Cap on heuristic freshness (10 % of the time since Last-Modified, RFC 9111 §4.2.2) (s).
   * Default `HEURISTIC_CAP_SECONDS` (24 h).
   */
  heuristicMaxSeconds?: number;
  /**
   * Freshness of a negative answer (404, 405, 410, 414, 501) with no explicit freshness (s); 0 =
   * none. Explicit freshness on one is obeyed as sent. Default `NEGATIVE_TTL_SECONDS` (60 s).
   */
  negativeTtlSeconds?: number;
  /**
   * Serve a stale copy when the origin fails (connection refused, DNS, timeout, a 5xx to a
   * revalidation), for this long past expiry (s), to responses that name no `stale-if-error` of
   * their own (theirs takes precedence). Default `STALE_ON_ERROR_SECONDS` (6 h); 0 = only when the
   * response or the request allows it. Never under must-revalidate, proxy-revalidate, s-maxage
   * or no-cache (RFC 9111 §4.2.4).
   */
  staleOnErrorSeconds?: number;
  /**
   * Allow origins (and peers that are not verified members) on loopback/private/link-local
   * addresses. Default false. Verified fleet members are reached at their address either way.
   */
  allowPrivateOrigins?: boolean;
  /**
   * Extra certificate authorities (PEM strings) trusted for https origins, on top of Node's root
   * store: for origins behind a private CA. Certificates are always verified; one that fails is
   * a 502 `CORAL_ORIGIN_CERT_INVALID`.
   */
  originCa?: string[];
  /**
   * With no TLS listener, follow an origin's redirect from an http URL to the same URL over https
   * inside the proxy, and serve the https answer under the http name, so a Coralized http URL of
   * an https-only site serves the site. Default `FOLLOW_HTTPS_UPGRADE` (true). With a TLS
   * listener the redirect is passed on, rewritten to the Coralized https URL.
   */
  followHttpsUpgrade?: boolean;
  /** Hosts-file style overrides for origin names. */
  hosts?: Record<string, string[]>;
  /** This node, as announced to the index. `httpPort` 0 is replaced by the listening port. */
  self: { nodeId: string; ip: string; httpPort: number };
  /** Per-client request rate; `perSecond: 0` disables. Default `RATE_LIMIT_PER_SECOND` (src/constants.ts)/`RATE_LIMIT_BURST` (src/constants.ts). */
  rateLimit?: { perSecond: number; burst?: number };
  /** Bound on waiting for a peer's answer and for each body chunk (ms, injected clock). Default `PEER_TIMEOUT_MS` (src/constants.ts). */
  peerTimeoutMs?: number;
  /** Bound on an index lookup (ms, injected clock). Default `INDEX_TIMEOUT_MS` (src/constants.ts). */
  indexTimeoutMs?: number;
  /** Patience for holders that announced `fetching` (ms, injected clock). Default `PEER_FETCHING_TIMEOUT_MS` (src/constants.ts). */
  peerFetchingTimeoutMs?: number;
  /**
   * The most freshness a copy fetched from a member is believed to have left (s): the member's
   * declared freshness is capped to it (the copy is stored as that much older). Default
   * `PEER_MAX_TTL_SECONDS` (src/constants.ts, 1 h).
   */
  peerMaxTtlSeconds?: number;
  /**
   * A member's copy of at most this many bytes (Content-Length) is read and checked whole before
   * any of it is sent, so a wrong size or SHA-256 falls back to the origin without cutting the
   * client off; larger ones stream. Default `PEER_VERIFY_WHOLE_BYTES` (src/constants.ts, 1 MiB);
   * 0 = always stream.
   */
  peerVerifyWholeBytes?: number;
  /**
   * The fraction of copies stored from members that this node fetches again from the origin and
   * compares (../audit/): a member whose copy disagrees is quarantined. Default 0 = no sampled
   * audit (members reported by others are still audited): its draws are random, so the library
   * audits only when asked; the node's configuration asks for `AUDIT_FRACTION` (0.02).
   */
  auditFraction?: number;
  /** Audits started per minute at most (sampled ones). Default `AUDITS_PER_MINUTE`. */
  auditsPerMinute?: number;
  /** Audits at once at most. Default `AUDIT_CONCURRENCY`. */
  auditConcurrency?: number;
  /** Members' reports checked per minute at most. Default `REPORTS_PER_MINUTE`. */
  reportsPerMinute?: number;
  /**
   * How long a member found lying is quarantined here (s); each new quarantine of it lasts twice
   * the last, up to `quarantineMaxSeconds`. Defaults `QUARANTINE_SECONDS`, `QUARANTINE_MAX_SECONDS`.
   */
  quarantineSeconds?: number;
  quarantineMaxSeconds?: number;
  /** How long a member reported by another is audited on every copy (s). Default `SUSPECT_SECONDS`. */
  suspectSeconds?: number;
  /** Holders raced at once. Default `PEER_RACE` (src/constants.ts). */
  peerRace?: number;
  /** Origin connect + header timeout (ms). Default `ORIGIN_TIMEOUT_MS` (src/constants.ts). */
  originTimeoutMs?: number;
  /** Origin idle body timeout (ms). Default `ORIGIN_BODY_TIMEOUT_MS` (src/constants.ts). */
  originBodyTimeoutMs?: number;
  /** Origin failures remembered for (ms). Default `NEGATIVE_TTL_MS` (src/constants.ts). */
  negativeTtlMs?: number;
  /** Bound on finishing in-flight responses in `close()` (ms, real time). Default `CLOSE_TIMEOUT_MS` (src/constants.ts). */
  closeTimeoutMs?: number;
  /**
   * Connection limits of each client listener: per-client and per-network caps, idle,
   * keep-alive, header and body timeouts (@coral/connguard's defaults where absent).
   */
  connections?: ListenerLimits;
  /** Re-announcement sweep interval (ms). Default `REANNOUNCE_INTERVAL_MS` (src/constants.ts). */
  reannounceIntervalMs?: number;
  /**
   * How long a member believes the fleet's index holds no opt-out for a site before it reads it
   * again (ms, injected clock). Default `OPT_OUT_RECHECK_MS` (src/constants.ts).
   */
  optOutRecheckMs?: number;
  /**
   * Node-wide bandwidth caps (bytes per second, 0 or absent = unlimited), each shared max-min
   * fairly between origin domains (../fairness/fair-share.ts): `originBytesPerSec` for body
   * bytes fetched from origins (not from peers), `servedBytesPerSec` for body bytes sent to
   * clients and peers. Bytes are counted per domain either way (`CoralProxy.traffic()`).
   */
  bandwidth?: { originBytesPerSec?: number; servedBytesPerSec?: number };
}

/** A certificate chain and its private key, PEM (leaf first, then intermediates). */
export interface TlsCertificate {
  cert: string | Buffer;
  key: string | Buffer;
}

/** `CoralProxy.listenTls` options. */
export interface TlsListenOptions extends TlsCertificate {
  port: number;
  host?: string;
  /**
   * The port clients use for https links (rewritten Locations), when it differs from the port
   * listened on (a port mapping). Default: the port listened on.
   */
  publicPort?: number;
  /** Bound on a client's TLS handshake (ms). Default `TLS_HANDSHAKE_TIMEOUT_MS`. */
  handshakeTimeoutMs?: number;
  /**
   * Session-ticket keys (48 bytes, Node's `server.setTicketKeys`), e.g. shared by every member of
   * a fleet so a client resumes at any of them; copied, the caller may zero its buffer. Default:
   * Node's random keys (tickets resume at this process only). Replace with `setTlsTicketKeys`.
   */
  ticketKeys?: Uint8Array;
}

/** One tier of the cache as `CoralProxy.cacheStats()` reports it. */
export interface CacheTierStats {
  /** Bytes held against the budget (the disk store: body bytes; memory: what the budget counts). */
  bytes: number;
  /** Stored variants. */
  objects: number;
  budgetBytes: number;
  /** Entries dropped since start to stay within the budget (least recently used first). */
  evictions: number;
}

/** `CoralProxy.cacheStats()`: the memory tier always, the disk tier with a dataDir. */
export interface CacheStats {
  memory: CacheTierStats;
  disk?: CacheTierStats;
}

export interface CacheListEntry {
  url: string;
  key: string;
  status: number;
  size: number;
  sha256: string;
  storedAt: number;
  /** Clock time the stored response becomes stale (ms). */
  expiresAt: number;
  contentType?: string;
  vary: string[];
}
