/**
 * One access record: what a client asked for and what it got, as the proxy saw it when the
 * response ended. Every field is plain data (strings and numbers), so a record can be formatted,
 * filtered and streamed without holding on to the request or its socket.
 */

/**
 * What this cache did with the request, in nginx's `$upstream_cache_status` vocabulary (lower
 * case), derived from the response's RFC 9211 Cache-Status member (see `cacheFacts`):
 * - `hit`: served from the cache without going forward;
 * - `stale`: a stale copy served (stale-while-revalidate, or stale-if-error when the origin failed);
 * - `revalidated`: a stale copy the origin confirmed (a 304 to the conditional request);
 * - `expired`: a stale copy the origin replaced with a new response;
 * - `miss`: fetched forward (from a member or the origin);
 * - `bypass`: forwarded without looking in the cache (a method or request it does not cache);
 * - `error`: answered by the node itself with an error page (no forward response).
 */
export type CacheResult = 'hit' | 'stale' | 'revalidated' | 'expired' | 'miss' | 'bypass' | 'error';

/** Every `CacheResult`, in the order above (filters are checked against it). */
export const CACHE_RESULTS: readonly CacheResult[] = [
  'hit',
  'stale',
  'revalidated',
  'expired',
  'miss',
  'bypass',
  'error',
];

/** The RFC 9211 facts of one Cache-Status member, and the result they add up to. */
export interface CacheFacts {
  result: CacheResult;
  /** The `hit` parameter. */
  hit: boolean;
  /** `fwd`: why the request went forward (`uri-miss`, `stale`, `peer`, `bypass`, ...). */
  fwd?: string;
  /** `fwd-status`: the status of the forward response. */
  fwdStatus?: number;
  /** `stored`: the forward response was stored. */
  stored: boolean;
  /** `collapsed`: the request joined another's forward request. */
  collapsed: boolean;
  /** `ttl`: remaining freshness in seconds (negative when stale). */
  ttl?: number;
  /** `detail`: implementation detail (an error code, `stale-while-revalidate`, `peer-…`). */
  detail?: string;
}

/** Where the body came from. */
export type ServedFrom = 'memory' | 'disk' | 'peer' | 'origin' | 'node';

export interface ServedBy {
  /**
   * `memory` / `disk`: this node's cache; `peer`: a fleet member's copy (`peer` says which);
   * `origin`: the origin; `node`: the node itself answered (an error page, a redirect home).
   */
  from: ServedFrom;
  /** The member that served the body, when `from` is `peer` (its node id, or address). */
  peer?: string;
}

export interface AccessRecord {
  /** When the request arrived (epoch milliseconds). */
  time: number;
  /** The client's address as the socket saw it (IPv4 dotted, IPv6 text). */
  client: string;
  /** The client's port. */
  clientPort?: number;
  /** The request method, as sent. */
  method: string;
  /** The Host the client asked for (lower case, without the port). */
  host: string;
  /** The Coralized URL as requested: scheme, Host and the request target as sent. */
  url: string;
  /** The origin URL the request maps to; absent when the Host is not a Coralized name. */
  originUrl?: string;
  /** `HTTP/1.0`, `HTTP/1.1` or `HTTP/2.0`. */
  protocol: string;
  /** The response status sent (0 when the client left before any). */
  status: number;
  /**
   * Bytes the connection took for the response: status line, header and body (nginx's
   * `$bytes_sent`), as the socket counted them.
   */
  bytes: number;
  /** The Cache-Status facts of the response. */
  cache: CacheFacts;
  served: ServedBy;
  /** Milliseconds from the forward request (origin or member) to its response head, if any. */
  upstreamMs?: number;
  /** Milliseconds from the request's arrival to the response head handed to the socket. */
  ttfbMs?: number;
  /** Milliseconds from the request's arrival to the response's end (or the client's leaving). */
  totalMs: number;
  /** The negotiated TLS version (`TLSv1.3`) of an HTTPS request. */
  tls?: string;
  /** The request id: the tracker's prefix (random per process) and a sequence number. */
  requestId: string;
  /** The client left (or the transfer was cut) before the response ended. */
  aborted: boolean;
  /** The Referer the client sent. */
  referer?: string;
  /** The User-Agent the client sent. */
  userAgent?: string;
}

/** A record that must be logged whatever the sampling: a server error or a cut transfer. */
export function alwaysLogged(r: Pick<AccessRecord, 'status' | 'aborted'>): boolean {
  return r.aborted || r.status >= 500;
}
