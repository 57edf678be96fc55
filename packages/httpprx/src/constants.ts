/** Defaults for every proxy option, exported so callers and docs can refer to them. */

/** Zones whose subdomains are Coralized names. */
/** Follow a same-URL http → https redirect inside the proxy when TLS is off (`followHttpsUpgrade`). */
export const FOLLOW_HTTPS_UPGRADE = true;
/** Bound on a client's TLS handshake on the https listener (ms). */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
export const DEFAULT_ZONES: readonly string[] = ['nyud.net'];
/** Largest object the proxy fetches and stores (bytes). */
export const MAX_OBJECT_BYTES = 50 * 1024 * 1024;
/** Disk byte budget for stored bodies. */
export const DISK_BUDGET_BYTES = 1024 * 1024 * 1024;
/** Memory byte budget (hot objects; the whole cache when no dataDir is given). */
export const MEMORY_BUDGET_BYTES = 64 * 1024 * 1024;
/** Objects up to this size are kept in memory as hot objects too. */
export const HOT_OBJECT_MAX_BYTES = 1024 * 1024;
/** Heuristic freshness (RFC 9111 §4.2.2): this fraction of the time since Last-Modified ... */
export const HEURISTIC_FRACTION = 0.1;
/**
 * ... capped at this many seconds (`heuristicMaxSeconds`). 10 % is the fraction RFC 9111 §4.2.2
 * names as typical (browsers use it too); a day keeps a file unchanged for a year from being
 * believed fresh for weeks while a changed one is served stale at most a day — below Squid's
 * default `refresh_pattern` ceiling (3 days at 20 %), above Varnish's flat 120 s `default_ttl`,
 * which ignores Last-Modified altogether.
 */
export const HEURISTIC_CAP_SECONDS = 24 * 3600;
/**
 * Freshness of a negative answer (404, 405, 410, 414, 501: heuristically cacheable, RFC 9110
 * §15.1) that carries no explicit freshness (s, `negativeTtlSeconds`); 0 = not kept. A minute
 * absorbs a crowd asking for a missing object (a broken link on a busy page, a scanner) with one
 * origin request a minute, while an object that appears is served within a minute — nginx's
 * usual `proxy_cache_valid 404 1m`. Explicit freshness on a negative answer is obeyed as sent.
 */
export const NEGATIVE_TTL_SECONDS = 60;
/**
 * How long a URL whose response could not be shared (private, no-store, Set-Cookie in site mode,
 * …) is remembered as such (s, injected clock): meanwhile its misses go straight to the origin,
 * each on its own fetch, instead of queueing behind one fetch to find out again (Varnish's
 * hit-for-miss, whose built-in VCL keeps it 120 s). A shareable response for the URL ends it.
 */
export const HIT_FOR_MISS_SECONDS = 120;
/** URLs remembered as unshareable at most (oldest forgotten first): bounded memory. */
export const HIT_FOR_MISS_MAX_ENTRIES = 10_000;
/**
 * How long past expiry a stale copy is served when the origin (and every member) cannot answer —
 * connection refused, DNS failure, timeout, a 5xx to a revalidation — for responses that name no
 * `stale-if-error` of their own (s). RFC 9111 §4.2.4 lets a cache that cannot reach the origin
 * ("disconnected") serve stale unless a directive forbids it; §4.3.3 lets it treat a 5xx to a
 * revalidation as a failure to respond. CoralCDN served stale copies through origin outages, as
 * nginx's `proxy_cache_use_stale error timeout` and Varnish's grace do. 6 h rides out the usual
 * outage (a failed deploy, a night's maintenance, a flash crowd that knocked the origin over)
 * while a site that is gone for good stops being served the same day; an origin that wants
 * another window says so with `stale-if-error`, which takes precedence. 0 turns it off.
 */
export const STALE_ON_ERROR_SECONDS = 6 * 3600;
/**
 * Targeted cache-control fields this cache obeys, most specific first (RFC 9213 §2.2): the first
 * one present with a valid, non-empty value replaces Cache-Control and Expires. Neither reaches
 * clients.
 */
export const TARGETED_FIELDS: readonly string[] = ['coral-cache-control', 'cdn-cache-control'];
/** How long a failed origin (DNS or connect failure) is negatively cached (ms). */
export const NEGATIVE_TTL_MS = 5_000;
/** Connect + response-header timeout for an origin (ms). */
export const ORIGIN_TIMEOUT_MS = 15_000;
/** Idle timeout between body chunks from the origin (ms). */
export const ORIGIN_BODY_TIMEOUT_MS = 30_000;
/** A peer must send response headers (and then each chunk) within this time (ms). */
export const PEER_TIMEOUT_MS = 1_000;
/**
 * Patience for a holder that announced `fetching`: it answers only once its own upstream response
 * headers arrive, so it gets longer than a `complete` holder (ms, injected clock).
 */
export const PEER_FETCHING_TIMEOUT_MS = 3_000;
/** Bound on an index lookup before going to the origin (ms, injected clock). */
export const INDEX_TIMEOUT_MS = 2_000;
/** How many of the nearest holders are raced on a miss. */
export const PEER_RACE = 3;
/**
 * A member whose transfer failed mid-body or did not match its announcement is not asked again
 * for this long (ms, injected clock).
 */
export const PEER_PENALTY_MS = 60_000;
/**
 * A member penalized for not answering is forgiven when the membership sees it come back
 * (`FleetMembers.generation`), at most once in this long (ms): a member that flaps, or restarts
 * to escape its penalties, serves every later one whole.
 */
export const PEER_PENALTY_LIFT_WINDOW_MS = 10 * 60_000;
/**
 * A member's copy of at most this many bytes (by its Content-Length) is read and checked whole
 * before any of it is sent: a wrong size or SHA-256 then falls back to the origin at no cost to
 * the client, instead of cutting it off at the end of the body. Larger copies are streamed
 * (their last byte held back until the check).
 */
export const PEER_VERIFY_WHOLE_BYTES = 1024 * 1024;
/**
 * The fraction of copies stored from members that are audited against the origin (../audit/).
 * A member serving lies is caught after about 1 / fraction of its copies here (50 at 0.02), and a
 * fleet of N members samples N times over; the cost is one origin fetch per 50 member-served
 * objects — 2 % more origin traffic on what the fleet serves from members, against the whole
 * object fetched once for the fleet. 1 % halves the cost and doubles the exposure; a fleet of
 * trusted machines may take 0.
 */
export const AUDIT_FRACTION = 0.02;
/** Sampled audits started per minute at most: the most origin fetches the audit can add. */
export const AUDITS_PER_MINUTE = 30;
/** Audits in progress at once at most. */
export const AUDIT_CONCURRENCY = 2;
/** Members' reports checked per minute at most (a budget of their own). */
export const REPORTS_PER_MINUTE = 10;
/**
 * How long a member found lying is skipped here (s): the life of what it may have given the fleet
 * (`PEER_MAX_TTL_SECONDS`). Each new quarantine of the same member doubles, up to
 * `QUARANTINE_MAX_SECONDS`.
 */
export const QUARANTINE_SECONDS = 3600;
export const QUARANTINE_MAX_SECONDS = 24 * 3600;
/** How long a member another member reported is audited on every copy (s). */
export const SUSPECT_SECONDS = 600;
/** TTL of a `fetching` announcement (s). */
export const FETCHING_TTL_SECONDS = 20;
/** Maximum TTL of a `complete` announcement (s); also capped by the object's freshness. */
export const COMPLETE_TTL_SECONDS = 3600;
/**
 * The longest a member's copy is believed fresh by the node that asked for it (s): whatever
 * freshness the member declares (or this node's own rules would compute from the member's
 * fields), the copy is stored as if no more than this were left, then revalidated with the origin.
 * An honest member's `complete` record lives no longer (`COMPLETE_TTL_SECONDS`).
 */
export const PEER_MAX_TTL_SECONDS = COMPLETE_TTL_SECONDS;
/** Interval of the re-announcement sweep (ms). */
export const REANNOUNCE_INTERVAL_MS = 10 * 60_000;
/** Per-client request rate (requests per second); 0 disables the limiter. */
export const RATE_LIMIT_PER_SECOND = 200;
/** Per-client burst (bucket size). */
export const RATE_LIMIT_BURST = 400;
/** Upper bound for finishing in-flight responses on close (ms). */
export const CLOSE_TIMEOUT_MS = 5_000;
/** Request header marking a peer request: served only from cache or an in-flight fetch. */
export const PEER_HEADER = 'x-coral-peer';
/**
 * Request header carrying a peer request's authentication (`PeerAuth.sign`), checked by the
 * receiving proxy when it has a `peerAuth` component.
 */
export const PEER_AUTH_HEADER = 'coral-peer-auth';
/**
 * Request header of a peer request sent to the member designated to fetch the object
 * (../peer/rendezvous.ts): instead of `only-if-cached`, it asks that member to fetch from the
 * origin on a miss. Honoured only from a verified member and only by a member that considers
 * itself designated for the URL.
 */
export const DESIGNATED_HEADER = 'x-coral-designated';
/** Response header a peer uses to state the body's SHA-256 when it knows it. */
export const SHA256_HEADER = 'x-coral-sha256';
/** Name this cache uses in Cache-Status. */
export const CACHE_NAME = 'Coral';
/** `Coral-Control: redirect-home` without a `max-age`: the fleet redirects clients home this long (s). */
export const OPT_OUT_DEFAULT_SECONDS = 600;
/** Longest opt-out an origin may ask for in one response (s); a longer `max-age` is capped. */
export const OPT_OUT_MAX_SECONDS = 86_400;
/**
 * How long a member remembers that the fleet's index holds no opt-out for a site before it looks
 * again (ms, injected clock): the delay after which a member that served the site recently learns
 * another member's opt-out.
 */
export const OPT_OUT_RECHECK_MS = 30_000;
/** Sites whose opt-out state a proxy remembers (oldest forgotten first). */
export const OPT_OUT_MAX_SITES = 10_000;
