/**
 * The types every stage of the request path shares with the package's public API: the logger and
 * metrics sink the proxy is given (`ProxyComponents`, ../proxy/types.ts) and what `admit` sees.
 */
import type { ServerResponse } from 'node:http';

export interface Logger {
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  child?(bindings: Record<string, unknown>): Logger;
}

/** Optional counters the node package maps onto Prometheus. */
export interface ProxyMetrics {
  /**
   * One call per response, as its head is handed to node:http: the Cache-Status kind (hit, miss,
   * stale, peer, error...), method, status, and the response itself (so a sink can tie the outcome
   * to the response's timing; it must not keep it).
   */
  request(cacheStatus: string, method: string, status: number, res: ServerResponse): void;
  /** A fetch from the origin for clients (a miss, a revalidation, a resume); not the audit's. */
  originFetch(bytes: number, ok: boolean): void;
  peerFetch(bytes: number, ok: boolean): void;
  /**
   * An origin request made by the member audit (../audit/: the refetch of a sampled member copy,
   * its second look, the check of a member's report), counted here and never by `originFetch`:
   * it is origin load the audit adds, not a fetch a client caused.
   */
  auditFetch?(bytes: number, ok: boolean): void;
  rateLimited(): void;
  /**
   * A hit answered on the fast path (../serve/fast-path.ts: from the hot cache, before routing),
   * also counted by its `request` call.
   */
  fastHit?(): void;
  /** A holder record skipped before any connection: its node is not a verified live member. */
  holderSkipped?(reason: 'not-member' | 'quarantined'): void;
  /** An incoming peer request refused (403): the reason `PeerAuth.verify` gave. */
  peerRejected?(reason: string): void;
  /** A request joined an in-flight fetch of the same object (request coalescing). */
  joined?(): void;
  /**
   * The designated fetcher (peer/rendezvous.ts): `self` a miss this node fetched as the designated
   * member, `asked` a miss served by the designated member, `ask-refused` / `ask-timeout` /
   * `ask-error` one it did not serve (then the index decided), `taken` a member's ask this node
   * took as the designated member.
   */
  designated?(
    event: 'self' | 'asked' | 'ask-refused' | 'ask-timeout' | 'ask-error' | 'taken',
  ): void;
  /** A request the HTTP parser refused (answered 400/408/431 and closed): the error code. */
  clientError?(code: string): void;
  /**
   * Origin opt-out (`Coral-Control: redirect-home`): `recorded` this node's origin fetch carried
   * it, `learned` a member's record was read from the index, `redirected` a client was sent home.
   */
  optOut?(event: 'recorded' | 'learned' | 'redirected'): void;
  /** A fetched response not stored because `admit` refused it (a purge came while it was fetched). */
  commitRefused?(): void;
  /**
   * A member's copy failed its check (size, SHA-256) or stalled: `origin` when it was caught
   * before anything was sent and the origin answered the client instead; `resumed` when a
   * streamed copy stalled or was cut short and the origin's rest (a range request under its
   * validators) completed it for its clients; `aborted` when the clients reading a streamed copy
   * were cut off (wrong at its end, or stopped and not completed: see ../fetch/resume.ts).
   */
  peerIntegrity?(outcome: 'origin' | 'resumed' | 'aborted'): void;
  /**
   * A sampled audit of a member's copy (../audit/): `agree`, `lied` (the member is quarantined),
   * `inconclusive` (the origin could not say: an error, a changed or volatile object), `skipped`
   * (over the audit budget), `error` (the origin could not be asked).
   */
  audit?(outcome: 'agree' | 'lied' | 'inconclusive' | 'skipped' | 'error'): void;
  /**
   * A member's report of another: `confirmed` (this node's own check found the lie: quarantined),
   * `unconfirmed` (it did not: the accused stays a suspect), `unchecked` (over the report budget,
   * or a target this node does not map the same way: suspect only), `ignored` (about this node, or
   * a member already quarantined).
   */
  memberReport?(outcome: 'confirmed' | 'unconfirmed' | 'unchecked' | 'ignored'): void;
  /**
   * A fetched response could not be stored because the disk failed (its `code`: `EMFILE`,
   * `ENFILE`, `ENOSPC`, `EIO`...): its clients still got it whole, nothing of it was kept.
   */
  storeFailed?(code: string): void;
}

/** A response about to be stored, as `ProxyComponents.admit` sees it. */
export interface CommitCandidate {
  /** Normalized URL. */
  url: string;
  /** The response's stored header fields (lowercase names; tags in `surrogate-key` / `cache-tag`). */
  headers: Readonly<Record<string, string>>;
  /** Clock time the upstream request (origin or peer) was sent (ms). */
  fetchStartedAt: number;
}

/** What the origin gate (`ProxyComponents.gate`) is shown: the origin a routed request names. */
export interface GateRequest {
  /**
   * The origin's host name as the proxy parsed it from Host (a configured site's origin, or the
   * Coralized name decoded): lowercase, IDNs in A-labels, IPv6 in brackets, no port.
   */
  host: string;
  /** The normalized upstream URL. */
  url: string;
  /** Coralized name, or a configured site (accelerator mode). */
  mode: 'coral' | 'site';
  /** A peer request (another member asking): refused the same way. */
  peer: boolean;
}

/**
 * A gate's refusal: the proxy answers `status` with its error page, `X-Coral-Error: <code>` and
 * `Cache-Control: no-store`, and the request goes no further (no cache lookup, peer or origin).
 */
export interface GateRefusal {
  /** 4xx or 5xx. */
  status: number;
  /** A stable error code (`CORAL_…`), sent as `X-Coral-Error`. */
  code: string;
  message: string;
}

/**
 * The origin gate `route()` (../request/route.ts) asks once it has mapped the Host to an origin,
 * before peer requests are told apart from clients' and before any method check: a refusal, or
 * undefined to let the request on. Called synchronously on every routed request, so it should
 * be a lookup (the node's blocklist). A gate that throws fails the request (502, logged).
 */
export type OriginGate = (origin: GateRequest) => GateRefusal | undefined;
